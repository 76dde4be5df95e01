"""``broker.java_regex``: Java's ``Pattern.matcher(s).matches()`` through Python's ``re``, or a refusal.

Each case below is what ``java.util.regex`` answers (Java 17+, default
flags): the patterns Python reads alike match as in Java (ASCII classes and
case folding, ``.`` stopping at every Java line terminator, whole-string
match); the ones Java rejects are refused; the Java constructs Python reads
otherwise are refused too (``JavaRegexError``).
"""

from __future__ import annotations

import pytest

from broker.java_regex import JavaRegexError, compile_java

MATCHES = [
    ("tx-\\d+", "tx-42", True),
    ("tx-\\d+", "tx-42x", False),  # the whole string
    ("tx-\\d+", "tx-\u0664\u0662", False),  # Arabic-Indic digits: \d is ASCII in Java
    ("\\w+", "caf\u00e9", False),
    ("a.c", "a\rc", False),  # . stops at \r, U+0085, U+2028, U+2029 as well as \n
    ("a.c", "a\u2028c", False),
    ("a.c", "a-c", True),
    ("(?i)abc", "ABC", True),
    ("(?i)\u00e9", "\u00c9", False),  # case folding is ASCII-only without UNICODE_CASE
    ("[.]x", ".x", True),
    ("[^a-c]+", "def", True),
    ("[]a]+", "]a]", True),
    ("a{2,3}", "aaa", True),
    ("a{2}+", "aa", True),  # possessive
    ("(?>a+)b", "aab", True),  # atomic group
    ("(?<=x)y|xy", "xy", True),
    ("\\x41\\u0042\\.", "AB.", True),
    ("\\s", "\x0b", True),  # Java's \s includes \x0B
]


@pytest.mark.parametrize(("pattern", "text", "expected"), MATCHES)
def test_what_java_matches(pattern, text, expected):
    assert (compile_java(pattern).fullmatch(text) is not None) is expected


INVALID_IN_JAVA = ["a(", "a)", "*a", "[a", "a\\", "\\y", "(?P<n>a)", "(?#c)", "a{,2}", "a{x", "a{3,2}", "(?(1)a|b)"]
READ_OTHERWISE = ["\\p{Alpha}", "\\Qa.b\\E", "\\h", "\\v", "\\R", "\\z", "\\Z", "\\bx", "\\0101", "\\x{41}",
                  "(?<n>a)\\k<n>", "(a)\\1", "[a-z&&[^e]]", "[a[b]]", "(?s).", "(?x)a b", "a(?i)b", "(?<=a+)b",
                  "\\e", "\\cA"]  # fmt: skip


@pytest.mark.parametrize("pattern", INVALID_IN_JAVA + READ_OTHERWISE)
def test_refused(pattern):
    with pytest.raises(JavaRegexError):
        compile_java(pattern)
