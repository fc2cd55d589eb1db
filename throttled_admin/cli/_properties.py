"""Java ``.properties`` files, as ``java.util.Properties.load`` reads them (kafka-topics.sh's --command-config).

The format: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start comment lines; a line ending
in an odd number of backslashes continues on the next line (whose leading whitespace is dropped); ``\\t``,
``\\n``, ``\\r``, ``\\f``, ``\\uXXXX`` escapes, and a backslash before any other character keeps that character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from throttled_admin._kafka.secrets import is_secret_key, is_setting_name

__all__ = ["PropertiesError", "Settings", "java_trim", "load_properties", "parse_properties", "read_settings"]

_WHITESPACE = " \t\f"
# A line that reads as a Kafka client setting or a comment (``_suspect``), continued onto from the line above (a
# stray '\\' at its end): in Java's reading it is that setting's value's tail, not a setting (nor a comment)
_NAME_FIRST = re.compile(r"(?P<name>[a-z][a-z0-9-]*(?:\.[a-z0-9-]+)+)(?P<rest>.*)", re.DOTALL)
# The Kafka clients' settings' first words: ``name:value`` so is a setting, whatever follows the ':'
_CLIENT_PREFIXES = (
    "bootstrap.", "client.", "sasl.", "security.", "ssl.", "request.", "default.", "socket.", "retry.",
    "metadata.", "metrics.", "reconnect.", "connections.", "enable.", "api.", "log.",
)  # fmt: skip
# Java's line terminators (``LineReader``): not str.splitlines()'s \f, \v, \x1c-\x1e, \x85 or U+2028, which would cut a
# value (a password) in two
_LINES = re.compile(r"\r\n|\r|\n")
_WORD = 6  # the least of a continued line's words hidden on its own (shorter ones: within the line's whole text)
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


# What Java's String.trim() takes off a value's ends: every character up to ' ' (the Kafka clients trim each setting
# they read so: ``client.id=C `` is the client C)
_JAVA_TRIM = "".join(map(chr, range(0x21)))


def java_trim(text: str) -> str:
    """``text`` as Java's ``String.trim()`` leaves it (a no-break space stays)."""
    return text.strip(_JAVA_TRIM)


class PropertiesError(ValueError):
    """A properties file that cannot be read; the message names the file and the line."""


@dataclass(frozen=True)
class _Logical:
    """A logical line: its first line's number, its lines' parts (each without the '\\' that continues it), and the
    first of its continued lines that reads as a setting or a comment, if any."""

    number: int
    parts: tuple[str, ...]
    suspect: _Suspect | None

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass(frozen=True)
class _Suspect:
    """A continued line that reads as a setting or a comment: its number, the setting it names (if any; ``# name=``:
    ``commented``), and the logical line's text joined before it."""

    number: int
    name: str | None
    commented: bool
    before: str


def _suspect(number: int, line: str, before: str) -> _Suspect | None:
    """The continued line ``line`` as a suspect, if it reads as a setting or a comment: ``name=``; ``name:`` but a
    host:port of a broker list or an OAuth scope's ``kafka.cluster:write`` (a secret's or a client setting's name
    always); ``secret.name value``; any comment."""
    commented = line[:1] in ("#", "!")
    text = line[1:].lstrip(_WHITESPACE) if commented else line
    match = _NAME_FIRST.match(text)
    name, rest = (match["name"], match["rest"]) if match else (None, "")
    after = rest.lstrip(_WHITESPACE)
    if name is not None and after[:1] == "=":
        return _Suspect(number, name, commented, before)
    if name is not None and after[:1] == ":" and (is_secret_key(name) or name.startswith(_CLIENT_PREFIXES)):
        return _Suspect(number, name, commented, before)
    if name is not None and rest[:1] in tuple(_WHITESPACE) and after and is_secret_key(name):
        return _Suspect(number, name, commented, before)
    return _Suspect(number, None, True, before) if commented else None


def _logical_lines(text: str) -> list[_Logical]:
    """Join continued lines, without comments and blanks."""
    lines: list[_Logical] = []
    current: list[str] = []
    suspect: _Suspect | None = None
    start = 0
    for number, raw in enumerate(_LINES.split(text), start=1):
        line = raw.lstrip(_WHITESPACE)
        if not current:
            # Comments and blank lines only count where a logical line starts, as in Properties.load.
            if not line or line[0] in "#!":
                continue
            start = number
        elif suspect is None:
            suspect = _suspect(number, line, "".join(current))
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            current.append(line[:-1])
            continue
        current.append(line)
        lines.append(_Logical(start, tuple(current), suspect))
        current, suspect = [], None
    if current:
        lines.append(_Logical(start, tuple(current), suspect))
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
    return _utf16("".join(out), where)


def _utf16(text: str, where: str) -> str:
    """``text`` with its UTF-16 surrogate pairs (``\\uD83D\\uDE00``, as native2ascii writes a character beyond the
    first plane) joined into their characters, as Java's strings hold them; a lone surrogate is no character."""
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return text
    try:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
    except UnicodeDecodeError:
        raise PropertiesError(f"{where}: a \\uXXXX escape of half a character (a lone UTF-16 surrogate)") from None


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


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """The key/value pairs of a properties text; a later key replaces an earlier one, as in Java."""
    return read_settings(text, source, strict=False).values


@dataclass(frozen=True)
class Settings:
    """A file's settings; the line each was read from; and, for a value that goes on over a continued line, what of it
    came from those lines (the value, its tail after its first line, each continued line's text), which messages
    must not quote (``_conf.checked_conf``, ``Redactor.hide``): a stray '\\' may have joined a password to it."""

    values: dict[str, str]
    lines: dict[str, int]
    continued: dict[str, tuple[str, ...]]

    @property
    def continued_text(self) -> list[str]:
        """Every piece of ``continued``, for a redactor to hide."""
        return [piece for pieces in self.continued.values() for piece in pieces]


def read_settings(text: str, source: str = "<properties>", *, strict: bool = True) -> Settings:
    """A properties text of client settings. ``strict``: a continued line that reads as a setting or a comment
    (``_suspect``) is refused, as a stray '\\' at the end of the line before (Java joins it to the value above, which
    then holds that setting, a password perhaps, and the setting is lost), naming the line and both settings, never a
    value; but within a ``sasl.jaas.config`` value before its ';', where a JAAS option may read so. So is a key that
    goes on over a continued line."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    continued: dict[str, tuple[str, ...]] = {}
    for line in _logical_lines(text):
        where = f"{source}:{line.number}"
        raw_key, raw_value = _split(line.text)
        key = _unescape(raw_key, where)
        if strict:
            _check_continuation(line, key, raw_key, source)
        values[key] = _unescape(raw_value, where)
        lines[key] = line.number
        continued.pop(key, None)
        if len(line.parts) > 1:
            head = _unescape(_split(line.parts[0])[1], where)
            tail = values[key][len(head) :] if values[key].startswith(head) else values[key]
            pieces = [_unescape(part.lstrip(_WHITESPACE), where) for part in line.parts[1:]]
            # (and their words: a message may quote from within one, as librdkafka's "beginning at: ...")
            words = [word for piece in pieces for word in re.split(r"[\s=:,;\"']+", piece) if len(word) >= _WORD]
            continued[key] = tuple(dict.fromkeys(p for p in (values[key], tail, *pieces, *words) if p.strip()))
    return Settings(values, lines, continued)


def _check_continuation(line: _Logical, key: str, raw_key: str, source: str) -> None:
    """A PropertiesError for a logical line continued where a stray '\\' is likelier than meant (``read_settings``)."""
    suspect = line.suspect
    if suspect is not None and not (key == "sasl.jaas.config" and not suspect.before.rstrip().endswith(";")):
        what = suspect.name or "a comment"
        what += " (commented out)" if suspect.commented and suspect.name else ""
        whose = f"{key}'s value" if is_setting_name(key) else "the value above it"
        raise PropertiesError(
            f"{source}:{suspect.number}: {what} is read as the end of {whose}, as the line before it ends with '\\' "
            "(a line continued): remove that '\\'"
        )
    if len(raw_key) > len(line.parts[0]):
        raise PropertiesError(
            f"{source}:{line.number}: a key goes on over the next line (its line ends with '\\' before any '=', ':' "
            "or space): remove that '\\'"
        )


def load_properties(path: str | Path) -> Settings:
    """Read a properties file of client settings (UTF-8, falling back to Java's ISO-8859-1 for older files), as
    ``read_settings``."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PropertiesError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return read_settings(text, str(file))
