"""The JAAS syntax as Java reads it: a ``sasl.jaas.config`` value (Kafka's ``JaasConfig``), a JAAS file (``ConfigFile``).

Both are read with Java's ``StreamTokenizer``, and so is the text here
(``tokens``): words are letters, digits, ``.``, ``-``, ``_``, ``$`` (and
``*`` in a file) not starting with a digit, ``.`` or ``-``; a token starting
with one of those is a number (``2``, ``-1.5``), which is no value; strings
are quoted with ``"`` or ``'``, with Java's escapes (``\\"``, ``\\\\``,
``\\n``, octal), and end at the end of the line if not closed; ``//`` and a
lone ``/`` start a comment to the end of the line, ``/* ... */`` a block
comment (an unclosed one runs to the end of the text); anything else is a
one-character token (``{ } ; =``).

* A ``sasl.jaas.config`` value (``parse_entries``) is a list of entries
  ``<login module> <flag> (<name>=<value>)* ;`` where the flag is
  ``required``, ``requisite``, ``sufficient`` or ``optional`` (any case),
  each failure raising ``JaasSyntaxError`` with Kafka's message ("Value not
  specified for key 'user_a' in JAAS config" ...). ``parse_jaas`` reads the
  one entry a listener's key may hold, naming the login module it must be.
* A JAAS file (``parse_file``) is a list of sections ``<name> { <entry>* };``.
  Module names and values must be words or ``"``-quoted strings (a file's
  ``'`` strings are refused, as Java's parser refuses them); ``${name}`` in a
  value is replaced by that Java system property (``expand``); a name given
  twice, a bad flag or a token out of place raises ``JaasSyntaxError`` with
  Java's wording ("Line 3: expected [option key], found [}]") and the line
  the token is on. A section without entries is no section, as for Java.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from .config import ConfigError

FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}
WORD, STRING, NUMBER, CHAR, EOF = "word", "string", "number", "char", "eof"


class JaasSyntaxError(ConfigError):
    """JAAS text Java would not read; the message is Java's (or Kafka's) words."""


@attrs.frozen
class Token:
    kind: str  # WORD, STRING, NUMBER, CHAR or EOF
    text: str  # the word, the string's value, the number as written, the character
    line: int
    quote: str = ""  # the quote character of a STRING

    @property
    def value(self) -> str | None:
        """What Java's tokenizer gives as ``sval``: the text of a word or a string, else None."""
        return self.text if self.kind in (WORD, STRING) else None

    def shown(self) -> str:
        return "end of file" if self.kind == EOF else self.text


@attrs.frozen
class JaasEntry:
    module: str  # the login module's class name
    flag: str  # REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
    options: dict[str, str] = attrs.field(eq=False, hash=False, repr=False)  # values are secrets


def _is_word_char(c: str, star: bool) -> bool:
    return c.isascii() and (c.isalnum() or c in "._-$" or (star and c == "*")) or ord(c) >= 0xA0


def _skip_line(text: str, i: int) -> int:
    while i < len(text) and text[i] not in "\r\n":
        i += 1
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    """A quoted string's value, from just after its quote; and where the text goes on."""
    quote, out = text[i - 1], []
    while i < len(text) and text[i] not in (quote, "\n", "\r"):
        c, i = text[i], i + 1
        if c == "\\" and i < len(text):
            c, i = text[i], i + 1
            if "0" <= c <= "7":
                digits = c
                while i < len(text) and "0" <= text[i] <= "7" and len(digits) < (3 if digits[0] <= "3" else 2):
                    digits, i = digits + text[i], i + 1
                c = chr(int(digits, 8))
            else:
                c = _ESCAPES.get(c, c)
        out.append(c)
    return "".join(out), i + 1 if i < len(text) and text[i] == quote else i


def _number(text: str, i: int) -> int:
    """Where a number starting at ``i`` ends: digits with at most one dot."""
    j, dot = i + (text[i] == "-"), False
    while j < len(text) and (text[j].isdigit() and text[j].isascii() or (text[j] == "." and not dot)):
        dot, j = dot or text[j] == ".", j + 1
    return j


def tokens(text: str, *, star: bool = False) -> Iterator[Token]:
    """Java's ``StreamTokenizer`` over ``text`` (``star``: ``*`` is a word character, as in a JAAS file)."""
    i, line = 0, 1
    while True:
        while i < len(text) and ord(text[i]) <= 32:
            line += text[i] == "\n" or (text[i] == "\r" and text[i + 1:i + 2] != "\n")
            i += 1
        if i >= len(text):
            yield Token(EOF, "", line)
            return
        c, start = text[i], i
        if c.isdigit() and c.isascii() or c == "." or (c == "-" and (text[i + 1:i + 2] or "x") in "0123456789."):
            i = _number(text, i)
            yield Token(NUMBER, text[start:i], line)
        elif _is_word_char(c, star) and c not in "-.":
            while i < len(text) and _is_word_char(text[i], star):
                i += 1
            yield Token(WORD, text[start:i], line)
        elif c in "\"'":
            value, i = _string(text, i + 1)
            yield Token(STRING, value, line, c)
        elif c == "/" and text[i + 1:i + 2] == "*":
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
            line, i = line + text.count("\n", i, end) + text.count("\r", i, end) - text.count("\r\n", i, end), end
        elif c == "/":
            i = _skip_line(text, i)
        else:
            i += 1
            yield Token(CHAR, c, line)


# --- a sasl.jaas.config value (Kafka's JaasConfig) ----------------------------------------------------------------


def parse_entries(text: str) -> list[JaasEntry]:
    """The login module entries of a ``sasl.jaas.config`` value; ``JaasSyntaxError`` with Kafka's message."""
    stream, entries = tokens(text), []
    token = next(stream)
    while token.kind != EOF:
        entries.append(_entry(token, stream))
        token = next(stream)
    if not entries:
        raise JaasSyntaxError("Login module not specified in JAAS config")
    return entries


def _entry(first: Token, stream: Iterator[Token]) -> JaasEntry:
    flag = next(stream)
    if flag.kind == EOF:
        raise JaasSyntaxError("Login module control flag not specified in JAAS config")
    if flag.value is None:
        raise JaasSyntaxError("Login module control flag is not available in the JAAS config")
    if flag.value.upper() not in FLAGS:
        raise JaasSyntaxError(f"Invalid login module control flag '{flag.value}' in JAAS config")
    options, token = {}, next(stream)
    while token.kind != EOF and token.text != ";":
        key, equals = token.value, next(stream)
        value = next(stream) if equals.text == "=" and equals.kind == CHAR else None
        if value is None or value.value is None:
            raise JaasSyntaxError(f"Value not specified for key '{key}' in JAAS config")
        options[str(key)], token = value.value, next(stream)
    if token.text != ";" or token.kind != CHAR:
        raise JaasSyntaxError("JAAS config entry not terminated by semi-colon")
    return JaasEntry(str(first.value), flag.value.upper(), options)


def key_entry(key: str, text: str) -> JaasEntry:
    """The one entry a listener's ``<mechanism>.sasl.jaas.config`` key holds, as Kafka's JaasContext wants it."""
    try:
        entries = parse_entries(text)
    except JaasSyntaxError as exc:
        raise JaasSyntaxError(f"{key}: {exc}") from None
    if len(entries) != 1:
        raise ConfigError(f"{key}: JAAS config property contains {len(entries)} login modules, should be 1 module")
    return entries[0]


def checked_options(key: str, entry: JaasEntry, module: str) -> dict[str, str]:
    """``entry``'s options, which must be of ``module`` (our check: Kafka would start and fail at login)."""
    if entry.module != module:
        raise ConfigError(f"{key}: expected '{module} required ...;'")
    return entry.options


def parse_jaas(key: str, text: str, module: str) -> dict[str, str]:
    """The options of the one entry of ``module`` a listener's key holds."""
    return checked_options(key, key_entry(key, text), module)


# --- a JAAS file (Java's ConfigFile) -------------------------------------------------------------------------------


class _FileParser:
    def __init__(self, text: str, expand: Callable[[str, int], str]) -> None:
        self.stream, self.expand = tokens(text, star=True), expand
        self.token = next(self.stream)

    def advance(self) -> Token:
        token, self.token = self.token, next(self.stream)
        return token

    def peek(self, char: str) -> bool:
        return self.token.kind == CHAR and self.token.text == char

    def match(self, expected: str) -> str:
        """The current token if it is what is expected (a character, or a word or ``"`` string), then the next."""
        token = self.token
        if token.kind == EOF:
            raise JaasSyntaxError(f"Configuration Error: expected [{expected}], read [end of file]")
        name_like = token.kind in (WORD, STRING) and token.quote != "'"  # Java's parser takes no ' strings
        if self.peek(expected) if len(expected) == 1 else name_like:
            return self.advance().text
        raise JaasSyntaxError(f"Configuration Error: Line {token.line}: expected [{expected}], found [{token.shown()}]")

    def sections(self) -> dict[str, list[JaasEntry]]:
        result: dict[str, list[JaasEntry]] = {}
        while self.token.kind != EOF:
            line = self.token.line
            name = self.match("application name")
            self.match("{")
            entries = []
            while not self.peek("}"):
                entries.append(self.entry())
            self.match("}")
            self.match(";")
            if name in result:
                raise JaasSyntaxError(f"Configuration Error: Line {line}: Can not specify multiple entries for {name}")
            result[name] = entries
        return {name: entries for name, entries in result.items() if entries}

    def entry(self) -> JaasEntry:
        module = self.match("module class name")
        flag = self.match("controlFlag").upper()
        if flag not in FLAGS:
            raise JaasSyntaxError(f"Configuration Error: Invalid control flag, {flag}")
        options = {}
        while not self.peek(";"):
            key = self.match("option key")
            self.match("=")
            line = self.token.line
            options[key] = self.expand(self.match("option value"), line)
        self.advance()
        return JaasEntry(module, flag, options)


def parse_file(text: str, expand: Callable[[str, int], str] = lambda value, line: value) -> dict[str, list[JaasEntry]]:
    """The sections of a JAAS file, by name; ``expand(value, line)`` replaces ``${name}`` in option values."""
    return _FileParser(text, expand).sections()
