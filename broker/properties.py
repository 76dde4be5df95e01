"""Java's ``.properties`` format, read as Kafka reads ``server.properties``, and ``--override key=value``.

Kafka loads its file with ``java.util.Properties.load(InputStream)``: the bytes
are ISO 8859-1 (one byte, one character; other characters are written as
``\\uXXXX``), and ``read_properties`` applies the format's rules to the text:

* natural lines end at ``\\n``, ``\\r`` or ``\\r\\n``; one that ends in an odd
  number of backslashes goes on in the next one, whose leading blanks (space,
  tab, form feed) are dropped, with that backslash and the line end;
* blank lines are skipped; a logical line whose first non-blank character is
  ``#`` or ``!`` is a comment (only there: a ``#`` after a value is part of the
  value, and a comment line never goes on in the next one);
* the key runs up to the first ``=``, ``:`` or blank not escaped by a
  backslash; then blanks and at most one ``=`` or ``:`` (and the blanks after
  it) are skipped, and the rest of the line is the value, trailing blanks
  included (a key alone has the empty value);
* in keys and values, ``\\t``, ``\\n``, ``\\r``, ``\\f`` and ``\\uXXXX`` (four hex
  digits: anything else is "Malformed \\uxxxx encoding.") stand for their
  character, and a backslash before any other character stands for that
  character (``\\=``, ``\\:``, ``\\ ``, ``\\\\``, ``\\#``; ``\\z`` is ``z``);
* a key given twice keeps its last value.

``parse_override`` splits one ``--override`` argument as Kafka's command line
does (``CommandLineUtils.parseKeyValueArgs``): at the first ``=``, nothing
unescaped or trimmed, and no ``=`` at all gives the empty value. Kafka trims
each value as it parses it (``ConfigDef.parseType``): ``java_trim`` is Java's
``String.trim``, which drops the characters up to U+0020 at both ends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

BLANKS = " \t\f"
_ENDS = "\r\n"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")
_LINE_END = re.compile("[\r\n]")
_JAVA_SPACE = "".join(map(chr, range(0x21)))


class MalformedProperties(ValueError):
    """A ``\\u`` escape without four hex digits: Java's ``Properties.load`` refuses the whole file."""


def load_properties(path: str | Path) -> dict[str, str]:
    """The keys of a properties file, its bytes read as ISO 8859-1 as Kafka's ``Utils.loadProps`` reads them."""
    return read_properties(Path(path).read_bytes().decode("latin-1"))


def read_properties(text: str) -> dict[str, str]:
    """The keys and values of properties ``text``, in the order first given (a later line wins)."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split(line)
        props[key] = value
    return props


def parse_override(argument: str) -> tuple[str, str]:
    """``key=value`` as Kafka's ``--override`` takes it: split at the first ``=``; ``key`` alone: empty value."""
    key, _, value = argument.partition("=")
    return key, value


def java_trim(text: str) -> str:
    """Java's ``String.trim``: control characters and spaces off both ends (not other Unicode spaces)."""
    return text.strip(_JAVA_SPACE)


def _line_end(text: str, pos: int) -> int:
    """The index of the line end at or after ``pos`` (``len(text)`` for the last line)."""
    found = _LINE_END.search(text, pos)
    return found.start() if found else len(text)


def _past_line_end(text: str, end: int) -> int:
    """The index after the line end at ``end``: ``\\r\\n`` counts as one."""
    return end + 2 if text.startswith("\r\n", end) else end + 1


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _odd_backslashes(chunk: str) -> bool:
    return (len(chunk) - len(chunk.rstrip("\\"))) % 2 == 1


def _logical_lines(text: str) -> Iterator[str]:
    """Each logical line that is neither blank nor a comment, continuations joined."""
    pos = 0
    while True:
        pos = _skip(text, pos, BLANKS + _ENDS)
        if pos >= len(text):
            return
        if text[pos] in "#!":
            pos = _line_end(text, pos)
            continue
        line, pos = _join_continued(text, pos)
        if line is not None:
            yield line


def _join_continued(text: str, pos: int) -> tuple[str | None, int]:
    """The logical line starting at ``pos`` and where the text after it starts. A continuation that has
    gathered nothing yet gives no line, so that the next one is read as a new line (a comment, maybe); but
    as in Java, a backslash ending the text, or ending it with a one-character line end, ends the line even
    if that leaves it empty (an empty key then)."""
    parts: list[str] = []
    while True:
        end = _line_end(text, pos)
        chunk = text[pos:end]
        if not _odd_backslashes(chunk):
            parts.append(chunk)
            return "".join(parts) or None, end
        parts.append(chunk[:-1])
        if end + 1 >= len(text):
            return "".join(parts), len(text)
        pos = _skip(text, _past_line_end(text, end), BLANKS)
        if not any(parts):
            return None, pos


def _split(line: str) -> tuple[str, str]:
    """A logical line's key and value, unescaped."""
    escaped, key_end, value_start, separated = False, len(line), len(line), False
    for index, char in enumerate(line):
        if not escaped and (char in "=:" or char in BLANKS):
            key_end, value_start, separated = index, index + 1, char in "=:"
            break
        escaped = char == "\\" and not escaped
    while value_start < len(line):
        char = line[value_start]
        if char in "=:" and not separated:
            separated = True
        elif char not in BLANKS:
            break
        value_start += 1
    return _unescape(line[:key_end]), _unescape(line[value_start:])


def _unescape(text: str) -> str:
    """``text`` with its backslash escapes replaced; ``\\uXXXX`` escapes are UTF-16 units, so a surrogate
    pair gives one character, as in Java."""
    if "\\" not in text:
        return text
    out: list[str] = []
    pos = 0
    while pos < len(text):
        char = text[pos]
        pos += 1
        if char != "\\" or pos >= len(text):
            out.append(char)
            continue
        char = text[pos]
        pos += 1
        if char == "u":
            digits = text[pos : pos + 4]
            if len(digits) < 4 or not _HEX.issuperset(digits):
                raise MalformedProperties("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            pos += 4
        else:
            out.append(_ESCAPES.get(char, char))
    joined = "".join(out)
    return joined.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
