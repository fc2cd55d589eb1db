"""Java ``.properties`` files, as ``java.util.Properties.load`` reads them (kafka-topics.sh's --command-config).

The format: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start comment lines; a line ending
in an odd number of backslashes continues on the next line (whose leading whitespace is dropped); ``\\t``,
``\\n``, ``\\r``, ``\\f``, ``\\uXXXX`` escapes, and a backslash before any other character keeps that character.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["PropertiesError", "java_trim", "load_properties", "parse_properties"]

_WHITESPACE = " \t\f"
# A line that reads as a Kafka client setting (``sasl.jaas.config=``, ``ssl.key.password ...``): continued onto from
# the line above (a stray '\\' at its end), it is that setting's value's tail in Java's reading, not a setting
_SETTING_LINE = re.compile(r"[#!]?[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+(?:\s*=|\s*:(?!\d)|\s+\S)")
# Java's line terminators (``LineReader``): not str.splitlines()'s \f, \v, \x1c-\x1e, \x85 or U+2028, which would cut a
# value (a password) in two
_LINES = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


# What Java's String.trim() takes off a value's ends: every character up to ' ' (the Kafka clients trim each setting
# they read so: ``client.id=C `` is the client C)
_JAVA_TRIM = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """``text`` as Java's ``String.trim()`` leaves it (a no-break space stays)."""
    return text.strip(_JAVA_TRIM)


class PropertiesError(ValueError):
    """A properties file that cannot be read; the message names the file and the line."""


def _logical_lines(text: str) -> list[tuple[int, str, list[int]]]:
    """Join continued lines; returns (first line number, logical line, the numbers of its continued lines that read
    as a setting of their own) without comments and blanks."""
    lines: list[tuple[int, str, list[int]]] = []
    current: list[str] = []
    suspects: list[int] = []
    start = 0
    for number, raw in enumerate(_LINES.split(text), start=1):
        line = raw.lstrip(_WHITESPACE)
        if not current:
            # Comments and blank lines only count where a logical line starts, as in Properties.load.
            if not line or line[0] in "#!":
                continue
            start = number
        elif _SETTING_LINE.match(line):
            suspects.append(number)
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            current.append(line[:-1])
            continue
        current.append(line)
        lines.append((start, "".join(current), suspects))
        current, suspects = [], []
    if current:
        lines.append((start, "".join(current), suspects))
    return lines


def _unescape(text: str, where: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 >= len(text):
            out.append(char)
            index += 1
            continue
        following = text[index + 1]
        if following == "u":
            digits = text[index + 2 : index + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"{where}: malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            index += 6
            continue
        out.append(_ESCAPES.get(following, following))
        index += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """The key ends at the first unescaped '=', ':' or whitespace; one separator, then the value."""
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in "=:" or char in _WHITESPACE:
            break
        index += 1
    key, rest = line[:index], line[index:]
    rest = rest.lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def parse_properties(text: str, source: str = "<properties>", *, settings: bool = False) -> dict[str, str]:
    """The key/value pairs of a properties text; a later key replaces an earlier one, as in Java. ``settings``: a
    file of client settings, where a continued line that reads as a setting of its own is refused (Java joins it to
    the value above, which then holds that setting, a password perhaps, and the setting is lost): a PropertiesError
    naming the line and both settings, never a value."""
    result: dict[str, str] = {}
    for number, line, suspects in _logical_lines(text):
        where = f"{source}:{number}"
        key, value = _split(line)
        if settings and suspects and key != "sasl.jaas.config":  # (a JAAS line's options may read so)
            swallowed = _split(_LINES.split(text)[suspects[0] - 1].lstrip(_WHITESPACE))[0]
            raise PropertiesError(
                f"{source}:{suspects[0]}: {swallowed} is read as the end of {_unescape(key, where)}'s value, as the "
                "line before it ends with '\\' (a line continued): remove that '\\'"
            )
        result[_unescape(key, where)] = _unescape(value, where)
    return result


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file of client settings (UTF-8, falling back to Java's ISO-8859-1 for older files); see
    ``parse_properties``'s ``settings``."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PropertiesError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text, str(file), settings=True)
