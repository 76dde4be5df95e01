"""The JAAS syntax (``broker/jaas.py``): Java's tokenizer, a ``sasl.jaas.config`` value as Kafka's JaasConfig
reads it, and a JAAS file as Java's ConfigFile reads it, with their error messages."""

from __future__ import annotations

import pytest

from broker.config import ConfigError
from broker.jaas import CHAR, EOF, NUMBER, STRING, WORD, JaasEntry, JaasSyntaxError, parse_entries, parse_file, tokens

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
# docker/examples/fixtures/sasl/broker_jaas.conf of apache/kafka, its licence header shortened
IMAGE_EXAMPLE = """// Licensed to the Apache Software Foundation (ASF) under one or more
// contributor license agreements.

KafkaServer {
    org.apache.kafka.common.security.plain.PlainLoginModule required
    username="admin"
    password="admin-secret"
    user_admin="admin-secret"
    user_alice="alice-secret";
};
"""


def _kinds(text: str, star: bool = False) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokens(text, star=star)]


def test_the_tokenizer_reads_as_javas_stream_tokenizer():
    assert _kinds("a.b-c_d$9 x*y 12 -1.5 - .5 {};=") == [
        (WORD, "a.b-c_d$9"), (WORD, "x"), (CHAR, "*"), (WORD, "y"), (NUMBER, "12"), (NUMBER, "-1.5"), (CHAR, "-"),
        (NUMBER, ".5"), (CHAR, "{"), (CHAR, "}"), (CHAR, ";"), (CHAR, "="), (EOF, "")]  # fmt: skip
    assert _kinds("x*y", star=True) == [(WORD, "x*y"), (EOF, "")]  # a JAAS file's word characters include *
    assert _kinds("é-ü") == [(WORD, "é-ü"), (EOF, "")]  # letters past ASCII are word characters


@pytest.mark.parametrize(("text", "value"), [
    (r'"a \"b\" c\\d"', 'a "b" c\\d'),
    (r'"tab\tnl\n"', "tab\tnl\n"),
    (r'"\101\1012\7"', "AA2\x07"),  # octal escapes: three digits at most, two if the first is above 3
    (r'"\q"', "q"),  # an unknown escape is the character
    ("'single'", "single"),
    ('"unclosed\nnext', "unclosed"),  # a string ends at the end of its line
])  # fmt: skip
def test_strings_have_javas_escapes(text, value):
    token = next(tokens(text))
    assert (token.kind, token.text) == (STRING, value)


def test_comments_are_skipped_and_lines_counted():
    text = "a // one\n/* two\nthree */ b / c\nd /* unclosed\n e"
    assert [(t.text, t.line) for t in tokens(text)] == [("a", 1), ("b", 3), ("d", 4), ("", 5)]


# --- a sasl.jaas.config value ------------------------------------------------------------------------------------


def test_a_property_value_is_read_as_kafkas_jaas_config():
    entries = parse_entries(f"/* c */ {PLAIN} Required user_a=b user_b='c d' // x\n  user_c=\"e\"; {SCRAM} optional;")
    assert entries == [JaasEntry(PLAIN, "REQUIRED", {}), JaasEntry(SCRAM, "OPTIONAL", {})]
    assert (entries[0].options, entries[1].options) == ({"user_a": "b", "user_b": "c d", "user_c": "e"}, {})


@pytest.mark.parametrize(("text", "message"), [
    ("  // nothing\n", "Login module not specified in JAAS config"),
    (PLAIN, "Login module control flag not specified in JAAS config"),
    (f"{PLAIN} ;", "Login module control flag is not available in the JAAS config"),
    (f"{PLAIN} mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    (f"{PLAIN} required user_a;", "Value not specified for key 'user_a' in JAAS config"),
    (f"{PLAIN} required user_a=;", "Value not specified for key 'user_a' in JAAS config"),
    (f"{PLAIN} required user_a=123;", "Value not specified for key 'user_a' in JAAS config"),
    (f"{PLAIN} required user_a", "Value not specified for key 'user_a' in JAAS config"),
    (f'{PLAIN} required user_a="b"', "JAAS config entry not terminated by semi-colon"),
])  # fmt: skip
def test_a_bad_property_value_gets_kafkas_message(text, message):
    with pytest.raises(JaasSyntaxError, match=f"^{message}$"):
        parse_entries(text)


# --- a JAAS file ---------------------------------------------------------------------------------------------------


def test_the_apache_kafka_images_example_file_is_read():
    sections = parse_file(IMAGE_EXAMPLE)
    assert list(sections) == ["KafkaServer"] and sections["KafkaServer"] == [JaasEntry(PLAIN, "REQUIRED", {})]
    assert sections["KafkaServer"][0].options == {"username": "admin", "password": "admin-secret",
                                                  "user_admin": "admin-secret", "user_alice": "alice-secret"}


def test_a_file_has_sections_of_several_entries_and_empty_ones_are_none():
    text = f"""/* brokers */ KafkaServer {{
        {PLAIN} required user_admin="a" user_admin="b";   // the last of a name wins, as in Java's map
        {SCRAM} sufficient;
    }};
    "sasl_plaintext.KafkaServer" {{ {PLAIN} requisite user_x="y"; }};
    Client {{ org.apache.zookeeper.server.auth.DigestLoginModule required username="z" password="z"; }};
    Empty {{ }};
    """
    sections = parse_file(text)
    assert list(sections) == ["KafkaServer", "sasl_plaintext.KafkaServer", "Client"]
    assert [(e.module, e.flag) for e in sections["KafkaServer"]] == [(PLAIN, "REQUIRED"), (SCRAM, "SUFFICIENT")]
    assert sections["KafkaServer"][0].options == {"user_admin": "b"}
    assert sections["sasl_plaintext.KafkaServer"][0].options == {"user_x": "y"}


@pytest.mark.parametrize(("text", "message"), [
    ("KafkaServer", "expected [{], read [end of file]"),
    ("KafkaServer\n[", "Line 2: expected [{], found [[]"),
    ("KafkaServer {\n  x required a=\"b\";\n", "expected [module class name], read [end of file]"),
    ("KafkaServer {\n  x required;\n}", "expected [;], read [end of file]"),
    ("KafkaServer { x required; }\n}", "Line 2: expected [;], found [}]"),
    ("KafkaServer {\n  x required\n  a \"b\";\n};", "Line 3: expected [=], found [b]"),
    ("KafkaServer {\n  x required\n\n  a=1;\n};", "Line 4: expected [option value], found [1]"),
    ("KafkaServer {\n  x required a='b';\n};", "Line 2: expected [option value], found [b]"),
    ("KafkaServer {\n  x required a=\"b\" };", "Line 2: expected [option key], found [}]"),
    ("KafkaServer {\n  x maybe;\n};", "Invalid control flag, MAYBE"),
    ("KafkaServer {\n  x 'required';\n};", "Line 2: expected [controlFlag], found [required]"),
    ("/* two\nlines */ A { x required; };\nA { x optional; };", "Line 3: Can not specify multiple entries for A"),
])  # fmt: skip
def test_a_bad_file_gets_javas_message_and_the_line(text, message):
    with pytest.raises(JaasSyntaxError, match="^Configuration Error: " + message.replace("[", r"\[")):
        parse_file(text)
    assert issubclass(JaasSyntaxError, ConfigError)


def test_option_values_go_through_the_expander_with_their_line():
    seen = []
    sections = parse_file('A {\n x required\n a="${p}" b=w;\n};', lambda v, line: seen.append((v, line)) or v.upper())
    assert sections["A"][0].options == {"a": "${P}", "b": "W"} and seen == [("${p}", 3), ("w", 3)]
