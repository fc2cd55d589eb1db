"""Java ``.properties`` files, as ``java.util.Properties.load`` reads them (kafka-topics.sh's --command-config).

The format: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` start comment lines; a line ending
in an odd number of backslashes continues on the next line (whose leading whitespace is dropped); ``\\t``,
``\\n``, ``\\r``, ``\\f``, ``\\uXXXX`` escapes, and a backslash before any other character keeps that character.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PropertiesError", "load_properties", "parse_properties"]

_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesError(ValueError):
    """A properties file that cannot be read; the message names the file and the line."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continued lines; returns (first line number, logical line) without comments and blanks."""
    lines: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip(_WHITESPACE)
        if not current:
            # Comments and blank lines only count where a logical line starts, as in Properties.load.
            if not line or line[0] in "#!":
                continue
            start = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            current.append(line[:-1])
            continue
        current.append(line)
        lines.append((start, "".join(current)))
        current = []
    if current:
        lines.append((start, "".join(current)))
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


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """The key/value pairs of a properties text; a later key replaces an earlier one, as in Java."""
    result: dict[str, str] = {}
    for number, line in _logical_lines(text):
        where = f"{source}:{number}"
        key, value = _split(line)
        result[_unescape(key, where)] = _unescape(value, where)
    return result


def load_properties(path: str | Path) -> dict[str, str]:
    """Read a properties file (UTF-8, falling back to Java's ISO-8859-1 for older files)."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PropertiesError(f"{file}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text, str(file))
