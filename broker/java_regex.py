"""Java regular expressions, for the filters Kafka matches with ``java.util.regex`` (KIP-1152's transactional
id pattern), evaluated with Python's ``re`` only where the two agree.

``compile_java(pattern)`` scans the pattern once, token by token (escapes,
character classes, groups, quantifiers) and returns a compiled Python
pattern whose ``fullmatch`` answers what Java's ``Pattern.matcher(s).matches()``
answers, or raises ``JavaRegexError``. It compiles with ``re.ASCII``, as
Java's ``\\d``, ``\\w``, ``\\s`` and case folding are ASCII-only by default, and
rewrites ``.`` outside a class to Java's "any character but a line
terminator" (``\\n``, ``\\r``, U+0085, U+2028, U+2029; Python's ``.`` only
excludes ``\\n``).

It raises ``JavaRegexError`` for what Java rejects too (unbalanced groups, a
dangling quantifier, an unknown escape, Python-only syntax such as
``(?P<name>...)``), and also for Java syntax whose meaning Python's ``re``
does not share, which Kafka would accept: ``\\p{..}``/``\\P{..}``, ``\\Q..\\E``,
``\\h \\H \\v \\V \\R \\X \\G \\z \\Z \\b \\B \\e \\c \\0``, ``\\x{..}``, named groups
and back references, nested classes and ``&&`` in a class, inline flags other
than ``i`` (and ``(?i)`` anywhere but at the start, where Python wants it), a
lookbehind of variable length, and a ``{`` that is not a Java bound
(``{n}``, ``{n,}``, ``{n,m}``).
Those are the cases where this broker answers otherwise than Kafka.
"""

from __future__ import annotations

import re
import warnings

_SAME_ESCAPES = frozenset("dDsSwWtnrfa")  # escapes both engines read alike (with re.ASCII)
_DOT = r"[^\n\r\x85\u2028\u2029]"
_BOUND = re.compile(r"\{\d+(?:,\d*)?\}")
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>")
_INLINE_FLAGS = re.compile(r"\(\?-?i(?:-i)?[:)]")


class JavaRegexError(ValueError):
    """The pattern is invalid in Java, or its meaning in Java is not one Python's ``re`` can give."""


def compile_java(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        i = _token(pattern, i, out)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return re.compile("".join(out), re.ASCII)
    except (re.error, FutureWarning, OverflowError, RecursionError) as exc:
        raise JavaRegexError(str(exc)) from None


def _token(p: str, i: int, out: list[str]) -> int:
    """Append the Python form of the token at ``p[i]``; the index after it."""
    c = p[i]
    if c == "\\":
        return _escape(p, i, out)
    if c == "[":
        return _char_class(p, i, out)
    if c == "(":
        return _group(p, i, out)
    if c == "{":
        bound = _BOUND.match(p, i)
        if bound is None:
            raise JavaRegexError(f"not a Java bound at {i}")
        out.append(bound.group())
        return bound.end()
    out.append(_DOT if c == "." else c)
    return i + 1


def _escape(p: str, i: int, out: list[str]) -> int:
    if i + 1 >= len(p):
        raise JavaRegexError("a trailing backslash")
    c = p[i + 1]
    if c in _SAME_ESCAPES or not c.isalnum() or not c.isascii():
        out.append(p[i : i + 2])
        return i + 2
    if c == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", p[i + 2 : i + 4]):
        out.append(p[i : i + 4])
        return i + 4
    if c == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", p[i + 2 : i + 6]):
        out.append(p[i : i + 6])
        return i + 6
    raise JavaRegexError(f"the escape \\{c} at {i} is not one both engines read alike")


def _char_class(p: str, i: int, out: list[str]) -> int:
    """``[...]``: escapes as outside; no nested class, no ``&&`` (Java's intersection)."""
    out.append("[")
    j = i + 1
    if p[j : j + 1] == "^":
        out.append("^")
        j += 1
    if p[j : j + 1] == "]":  # a leading ] is a literal in both
        out.append("\\]")
        j += 1
    while j < len(p) and p[j] != "]":
        if p[j] == "\\":
            j = _escape(p, j, out)
            continue
        if p[j] == "[" or p.startswith(("&&", "--", "||", "~~"), j):
            raise JavaRegexError(f"a nested class or a class operator at {j}")
        out.append(p[j])
        j += 1
    if j >= len(p):
        raise JavaRegexError("an unclosed character class")
    out.append("]")
    return j + 1


def _group(p: str, i: int, out: list[str]) -> int:
    if not p.startswith("(?", i):
        out.append("(")
        return i + 1
    for opener in _GROUP_OPENERS:
        if p.startswith(opener, i):
            out.append(opener)
            return i + len(opener)
    flags = _INLINE_FLAGS.match(p, i)
    if flags is None:
        raise JavaRegexError(f"a group construct at {i} that Python's re does not read as Java does")
    out.append(flags.group())
    return flags.end()
