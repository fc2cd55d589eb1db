"""A ``sasl.jaas.config`` line read as the Java client reads it: Kafka's ``JaasConfig`` over a
``java.io.StreamTokenizer`` (slash-slash and slash-star comments on, ``-``, ``_`` and ``$`` word characters), one login
module as ``JaasContext`` takes it. The CLI checks a line with it and takes the credentials it sends from it, so a line
Java refuses is refused here, and a password is the one Java would send (tests/test_cli_jaas_on_java.py holds it to
Kafka 4.4's own parser)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["login_module", "read", "unescape"]

_WHITESPACE, _ALPHA, _DIGIT, _QUOTE = 1, 2, 4, 8
_FLAGS = ("required", "requisite", "sufficient", "optional")
_OPTIONS = ("username", "password", "tokenauth")  # PlainLoginModule's and ScramLoginModule's
_NAMED_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_OCTAL = "01234567"
_EOF = "EOF"
_WORD = "WORD"
_NUMBER = "NUMBER"


def _ctype(char: str) -> int:
    """StreamTokenizer's character table as JaasConfig sets it up."""
    code = ord(char)
    if code >= 256:
        return _ALPHA
    if code <= 32:
        return _WHITESPACE
    if "a" <= char <= "z" or "A" <= char <= "Z" or code >= 160 or char in "_$":
        return _ALPHA
    if char == "-":
        return _ALPHA | _DIGIT  # (parseNumbers' and wordChars': the number branch comes first)
    if "0" <= char <= "9" or char == ".":
        return _DIGIT
    return _QUOTE if char in "\"'" else 0


@dataclass(frozen=True)
class _Token:
    kind: str  # _EOF, _WORD, _NUMBER, a quote character, or an ordinary character itself
    text: str | None = None  # StreamTokenizer's sval: a word's or a quoted string's (unescaped), else None
    closed: bool = True  # a quoted string ended by its quote (not by a line's end or the text's)


def _tokens(text: str) -> list[_Token]:
    """StreamTokenizer.nextToken until TT_EOF."""
    out: list[_Token] = []
    at, end = 0, len(text)
    while True:
        while at < end and _ctype(text[at]) & _WHITESPACE:
            at += 1
        if at >= end:
            out.append(_Token(_EOF))
            return out
        char, kind = text[at], _ctype(text[at])
        if kind & _DIGIT:
            at = _number(text, at, out)
        elif kind & _ALPHA:
            start, at = at, at + 1
            while at < end and _ctype(text[at]) & (_ALPHA | _DIGIT):
                at += 1
            out.append(_Token(_WORD, text[start:at]))
        elif kind & _QUOTE:
            at = _quoted(text, at, out)
        elif char == "/":
            if text.startswith("/*", at):
                close = text.find("*/", at + 2)  # ("/*/" does not close: the '*' is the opening's)
                if close < 0:
                    out.append(_Token(_EOF))
                    return out
                at = close + 2
            else:  # "//", or '/' alone (the comment character): to the line's end, the character after it skipped
                at += 2
                while at < end and text[at] not in "\n\r":
                    at += 1
        else:
            out.append(_Token(char))
            at += 1


def _number(text: str, at: int, out: list[_Token]) -> int:
    """A number (a digit, '.', or '-' before one of them), or '-' alone, an ordinary character."""
    if text[at] == "-":
        if at + 1 >= len(text) or not (text[at + 1] == "." or "0" <= text[at + 1] <= "9"):
            out.append(_Token("-"))
            return at + 1
        at += 1
    seen_dot = False
    while at < len(text) and ("0" <= text[at] <= "9" or (text[at] == "." and not seen_dot)):
        seen_dot = seen_dot or text[at] == "."
        at += 1
    out.append(_Token(_NUMBER))
    return at


def _quoted(text: str, at: int, out: list[_Token]) -> int:
    """A quoted string, unescaped as StreamTokenizer does (C's escapes, octal, any other character itself); it ends at
    its quote, or before a line's end, or at the text's end."""
    quote, at, end = text[at], at + 1, len(text)
    chars: list[str] = []
    while at < end and text[at] != quote and text[at] not in "\n\r":
        if text[at] != "\\":
            chars.append(text[at])
            at += 1
            continue
        at += 1
        if at >= end:
            chars.append("\uffff")  # (Java's (char) -1)
            break
        first = text[at]
        digits = 3 if first <= "3" else 2
        if first in _OCTAL:
            stop = at + 1
            while stop < min(end, at + digits) and text[stop] in _OCTAL:
                stop += 1
            chars.append(chr(int(text[at:stop], 8)))
            at = stop
        else:
            chars.append(_NAMED_ESCAPES.get(first, first))
            at += 1
    closed = at < end and text[at] == quote
    out.append(_Token(quote, "".join(chars), closed))
    return at + 1 if closed else at


def unescape(raw: str) -> str:
    """A value as written between its quotes, as Java means it (to its first line's end)."""
    out: list[_Token] = []
    _quoted("\x00" + raw, 0, out)  # (a quote no text holds)
    return out[0].text or ""


def login_module(jaas: str) -> str:
    """The line's login module by its class's own name (PlainLoginModule); "login module" for a line that names none
    (never another word of it: a value may be a secret)."""
    first = _tokens(jaas)[0].text or ""
    name = first.rpartition(".")[2]
    return name if name.endswith("LoginModule") else "login module"


def read(jaas: str) -> tuple[dict[str | None, str], str | None]:
    """The line's options by name (the last of a name wins; Java takes a name that is not a word as null), and what
    Java would refuse in it, None when it reads. A value is never quoted back (it may be the password): only an
    option's name."""
    tokens = _tokens(jaas)
    options: dict[str | None, str] = {}
    problem = _entry(tokens, options)
    return options, problem


def _entry(tokens: list[_Token], options: dict[str | None, str]) -> str | None:
    """``CLASS FLAG (NAME=VALUE)* ;`` and nothing after it; each option read goes into ``options``."""
    if not tokens[0].text or len(tokens) < 2 or tokens[1].kind == _EOF:
        return "expected a login module class and its control flag (required), as in 'PlainLoginModule required ...;'"
    if (tokens[1].text or "").lower() not in _FLAGS:
        return f"the login module's control flag must be one of {', '.join(_FLAGS)}"
    index, last = 2, None
    while tokens[index].kind not in (_EOF, ";"):
        name, mark, value = tokens[index], tokens[index + 1], tokens[min(index + 2, len(tokens) - 1)]
        where = "the control flag" if last is None else _named(last.text)
        if mark.kind != "=":
            if name.text is None and name.kind not in ("=", ";"):
                return f"a character that is not a word, a quote, '=' or ';' after {where}{_unquoted(last)}"
            return f"expected NAME=VALUE after {where}{_unquoted(last)}"
        if value.kind == _NUMBER or value.kind == "-":
            return f"{_named(name.text)}: a value that starts with a digit, '.' or '-' must be quoted"
        if value.text is None:
            return f"{_named(name.text)}: its value is not one word or a quote"
        options[name.text] = value.text
        last = _Token(value.kind, name.text, value.closed)  # (the option's name, its value's kind)
        index += 3
    if tokens[index].kind == _EOF:
        if last is not None and not last.closed:
            return f"{_named(last.text)}: its value's quote is not closed"
        return "it does not end with ';'"
    if tokens[index + 1].kind != _EOF:
        return "text after its ';' (Kafka takes one login module)"
    return None


def _named(name: str | None) -> str:
    """An option by its name, if the Plain and Scram modules have it: what reads as another name may be a word of an
    unquoted password that holds a space (``password=ab cd=...``)."""
    return f"option {name!r}" if name in _OPTIONS else "an option"


def _unquoted(last: _Token | None) -> str:
    """The hint for a problem after an unquoted value: it may have held what only a quote keeps."""
    if last is None or last.kind != _WORD:
        return ""
    return " (quote a value that holds anything but letters, digits, '.', '-', '_' and '$')"
