"""The CLI reads a ``sasl.jaas.config`` line as the Java client does: Kafka 4.4's own parser (JaasContext, through
tests/real_kafka/java/JaasRead.java) and the CLI's reading agree on every line below, on whether it reads and on
every option's value. A line the CLI takes where Java would not, or a value it reads differently, is a password
sent that is not the one the file means."""

from __future__ import annotations

import base64
import subprocess

import pytest

from tests.real_kafka.broker import classpath
from throttled_admin.cli._jaas import read

pytestmark = pytest.mark.kafka

_PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required"
_SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule REQUIRED"

LINES = [
    # read
    f'{_PLAIN} username="alice" password="p;w \\"q\\"";',
    f"{_PLAIN} username=alice password='p w';",
    f'{_SCRAM}\n  username="bob"\n  password="x";  ',
    f"{_PLAIN} username='it\\'s' password=\"x\"; // a comment",
    f'{_PLAIN} /* a comment */ username="a"\n  password="x";',
    f'{_PLAIN} username="alice" password="real" /* password="old" */;',
    f'{_PLAIN} username="alice" password="real"; // password="old"',
    f'{_PLAIN} username="a\\\\b" password="\\t\\101\\q\\\\\\"\\0";',
    f'{_PLAIN} username="a" password="\\477\\378";',
    f"{_PLAIN} username=_a password=$x-1.2;",
    f'{_PLAIN} username="é" password="pässwörd";',
    f'{_PLAIN} username="a" password="first" password="second";',
    f'{_PLAIN} username="a" password="";',
    f"{_PLAIN} ;",
    'x.OAuthBearerLoginModule required oauth.client.id="c" oauth.client.secret=\'s\' oauth.token.endpoint.uri="u";',
    # refused
    f"{_PLAIN} username=alice password=2024secret;",
    f"{_PLAIN} username=alice password=-x;",
    f"{_PLAIN} username=alice password=.5;",
    f'{_PLAIN} username="alice" password="s3cr3t-9d;',
    f'{_PLAIN} username="alice"; password="s3cr3t-9d";',
    f'{_PLAIN} username="alice" password="s3cr3t-9d" extra;',
    f'{_PLAIN} username="alice" password="s3cr3t-9d"',
    'org.apache.kafka.common.security.plain.PlainLoginModule requird username="alice" password="x";',
    f'{_PLAIN} username="alice" password=s3cr3t-9d= @;',
    f'{_PLAIN} username="alice" password="czNjcjN0LTlk=" extra;',
    f'{_PLAIN} username="alice" = "x";',
    f'{_PLAIN} username="alice" password=;',
    "required;",
    # review 108: StreamTokenizer's own character classes (not Python's \s and \w), comments and quotes
    f'{_PLAIN} username="a" password="ab\ncd";',  # a quote a line's end ends: Java refuses what follows
    f'{_PLAIN} username="a" password="abc\n;',  # ... and takes what is before it
    f'{_PLAIN} username="a" password="ab\rcd";',
    f'{_PLAIN} username="a" password="ab\\\ncd";',  # an escaped line end is kept
    f'{_PLAIN} username="a" password="ab\\',  # a backslash at the end
    f'{_PLAIN} username="a" password="b"; / a lone slash is a line comment',
    f'{_PLAIN} username="a" password=ab/cd\n;',
    f'{_PLAIN} username="a" password="b"; /* not closed',
    f'{_PLAIN} username="a" /* */ password="b" /**/;',
    f'{_PLAIN} username="a" // a comment a CR ends\r password="b";',
    f'{_PLAIN} username="a" password=p\u20acss;',  # word characters: 160-255 and above 255
    f'{_PLAIN} username="a" password=\u00a3100;',
    f'{_PLAIN} username="a" password=p\u00a0ss;',
    f"{_PLAIN} username=a\u00a0password=b;",  # NBSP is a word character to Java, not a space
    f"{_PLAIN} username=a\u2003password=b;",
    f"{_PLAIN} username=a\u0085password=b;",  # NEL: an ordinary character
    f'{_PLAIN} username="a"\x01password="b";',  # control characters are spaces
    f'{_PLAIN}\tusername="a"\tpassword="b";',
    f'{_PLAIN} "username"="a" "password"="b";',  # quoted names, flag and class are Java's too
    'org.apache.kafka.common.security.plain.PlainLoginModule "required" username="a" password="b";',
    '"org.apache.kafka.common.security.plain.PlainLoginModule" required username="a" password="b";',
    f'{_PLAIN} username="a" password=\u00b2x;',
    f'{_PLAIN} username="a" password=x\u0663;',
    f'{_PLAIN} username="a" password=\u0663x;',
    f"{_PLAIN} username=a=b;",
    f'{_PLAIN} username="a" password=-.5;',
    f'{_PLAIN} username="a" password="\\101\\1011\\400\\08";',  # octal: three digits from 0-3, two above
]


def _java_reads(lines: list[str]) -> list[dict[str, str] | None]:
    """Each line's options as Java reads them, None where Java refuses the line."""
    done = subprocess.run(
        ["java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", classpath(), "JaasRead"],
        input="".join(base64.b64encode(line.encode()).decode() + "\n" for line in lines),
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    read: list[dict[str, str] | None] = []
    for out in done.stdout.splitlines():
        kind, *fields = out.split("\t")
        pairs = zip(fields[::2], fields[1::2], strict=True)
        read.append(None if kind == "ERR" else {name: base64.b64decode(value).decode() for name, value in pairs})
    assert len(read) == len(lines), done.stderr
    return read


def test_the_cli_reads_each_jaas_line_as_javas_parser_does() -> None:
    for line, java in zip(LINES, _java_reads(LINES), strict=True):
        options, problem = read(line)
        ours = options if problem is None else None
        assert ours == java, (line, problem)
