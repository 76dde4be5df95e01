"""``ssl.principal.mapping.rules``: the principal name of an SSL client, from its certificate's subject.

Kafka's ``SslPrincipalMapper``. The key holds a comma-separated list of
rules, tried in order on the client certificate's RFC 2253 name; the first
that gives a name wins:

* ``DEFAULT``: the whole distinguished name (the key's default);
* ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the
  last slash (lower or upper case the result): applies when the Java regular
  expression ``pattern`` matches the whole name, and gives the name with
  every match of it replaced by ``replacement``, where ``$1`` is a group and
  ``\\`` escapes the next character (Java's ``Matcher.replaceAll``). ``/``
  and ``\\`` inside pattern or replacement are escaped with ``\\``.

Like Kafka, a reference to a group the pattern does not have is cut down
from the right (``$12`` with one group is ``$1`` and the digit ``2``) and,
failing that, read literally.

A name no rule applies to fails the client's authentication: Kafka closes
the connection (``NoMatchingRule``). Rules that cannot be parsed, or whose
pattern is not a Java regular expression this broker can evaluate
(``java_regex.py``), stop the start with a message naming the key.

Example: ``RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,DEFAULT`` maps
``CN=Alice,OU=Sales,O=Acme`` to ``User:alice@sales``.
"""

from __future__ import annotations

import re

import attrs

from .java_regex import JavaRegexError, compile_java

_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class InvalidRule(ValueError):
    """The rules cannot be parsed; the message says which."""


class NoMatchingRule(Exception):
    """No rule gives a name for the client's certificate."""


@attrs.frozen
class Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        match = self.pattern.fullmatch(name)
        if match is None:
            return None
        replacement = _literal_references(self.replacement, self.pattern.groups)
        result = self.pattern.sub(lambda m: _expand(replacement, m), name)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


DEFAULT_RULES = (Rule(None),)


def parse_rules(text: str) -> tuple[Rule, ...]:
    """The rules of ``ssl.principal.mapping.rules``; ``InvalidRule`` says what is wrong."""
    rules = []
    for found in _SPLITTER.finditer(text.strip()):
        rule = found.group(1)
        parsed = _PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            unmatched = rule[parsed.end():] if parsed else rule
            raise InvalidRule(f"Invalid rule: `{rule}`, unmatched substring: `{unmatched}`")
        if parsed.group(1):
            rules.append(Rule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = compile_java(parsed.group(2))
            except JavaRegexError as exc:
                raise InvalidRule(f"Invalid rule: `{rule}`: {exc}") from None
            rules.append(Rule(pattern, parsed.group(4), parsed.group(6)))
    return tuple(rules)


def map_name(rules: tuple[Rule, ...], name: str) -> str:
    """The principal name the first applicable rule gives ``name``; ``NoMatchingRule`` when none does."""
    for rule in rules:
        mapped = rule.apply(name)
        if mapped is not None:
            return mapped
    raise NoMatchingRule(f"No rules apply to {name}")


def _literal_references(replacement: str, groups: int) -> str:
    """Kafka's rule for ``$n`` past the pattern's groups: drop digits from the right, else read it literally."""
    if groups == 0:
        return replacement
    out, last = [], 0
    for ref in _BACK_REFERENCE.finditer(replacement):
        digits = ref.group(1)
        index = int(digits)
        while index > groups and index >= 10:
            index //= 10
        if not digits.startswith("0") and index > groups:
            out.append(replacement[last : ref.start()] + "\\")
            last = ref.start()
    return "".join(out) + replacement[last:]


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's ``Matcher.appendReplacement``: ``\\x`` is ``x``, ``$n`` the group (as many digits as fit)."""
    out, i, groups = [], 0, match.re.groups
    while i < len(replacement):
        ch = replacement[i]
        i += 1
        if ch == "\\":
            if i == len(replacement):
                raise NoMatchingRule("character to be escaped is missing")
            out.append(replacement[i])
            i += 1
        elif ch == "$":
            if i == len(replacement) or not replacement[i].isdigit():
                raise NoMatchingRule("Illegal group reference")  # ${name}: the patterns have no named groups
            index, i = int(replacement[i]), i + 1
            while i < len(replacement) and replacement[i].isdigit() and index * 10 + int(replacement[i]) <= groups:
                index, i = index * 10 + int(replacement[i]), i + 1
            if index > groups:
                raise NoMatchingRule(f"No group {index}")
            out.append(match.group(index) or "")
        else:
            out.append(ch)
    return "".join(out)
