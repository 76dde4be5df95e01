"""The properties reader follows java.util.Properties.load: the javadoc's examples, escapes, continuations and
comments, a round trip of any keys and values, and the JDK's own answers over random texts; ``--override`` is
split as Kafka's command line splits it."""

from __future__ import annotations

import base64
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.__main__ import _overrides
from broker.config import BrokerConfig, ConfigError
from broker.listeners import served_listeners
from broker.properties import MalformedProperties, java_trim, load_properties, parse_override, read_properties

ORACLE = Path(__file__).parent / "java" / "PropertiesOracle.java"


@pytest.mark.parametrize("text", ["Truth = Beauty", " Truth:Beauty", "Truth                    :Beauty",
                                  "Truth\tBeauty", "Truth Beauty", "Truth=Beauty\n", "\n\n  Truth\f=\fBeauty"])
def test_the_javadoc_separators_give_the_same_pair(text):
    assert read_properties(text) == {"Truth": "Beauty"}


def test_the_javadoc_continued_line_and_the_key_alone():
    text = ("fruits                           apple, banana, pear, \\\n"
            "                                 cantaloupe, watermelon, \\\n"
            "                                 kiwi, mango\n"
            "cheeses\n")  # fmt: skip
    assert read_properties(text) == {"fruits": "apple, banana, pear, cantaloupe, watermelon, kiwi, mango",
                                     "cheeses": ""}  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), [
    ("a=b # not a comment", {"a": "b # not a comment"}),  # '#' counts only at the start of a logical line
    ("# comment\n! also a comment\n  # indented comment\na=1", {"a": "1"}),
    ("# a comment ending in a backslash \\\na=1", {"a": "1"}),  # comments never continue
    ("a=1\\\n# not a comment: the continuation", {"a": "1# not a comment: the continuation"}),
    ("a = b  ", {"a": "b  "}),  # trailing blanks stay in the value
    ("a==b", {"a": "=b"}),  # at most one separator is skipped
    ("a = :b", {"a": ":b"}),
    ("a b=c", {"a": "b=c"}),
    ("a\\ b=c", {"a b": "c"}),
    ("a\\=b\\:c=d", {"a=b:c": "d"}),
    ("key=C:\\\\dir\\\\file", {"key": "C:\\dir\\file"}),
    ("key=\\t\\n\\r\\f\\z\\\"\\#", {"key": "\t\n\r\fz\"#"}),
    ("key=\\u0041\\u00e9\\uD83D\\uDE00", {"key": "A\u00e9\U0001f600"}),  # a surrogate pair is one character
    ("a=1\\\\\nb=2", {"a": "1\\", "b": "2"}),  # an even number of backslashes does not continue
    ("a=1\\\\\\\n   2", {"a": "1\\2"}),  # an odd number does
    ("a=x\\\n\nb=2", {"a": "x", "b": "2"}),  # a continuation onto an empty line ends there
    ("a=1\\", {"a": "1"}),  # a backslash at the very end is dropped
    ("a=1\r\nb=2\rc=3\n", {"a": "1", "b": "2", "c": "3"}),
    ("a=1\\\r\n  2", {"a": "12"}),
    ("\\\n# a comment after a continued nothing\nb=2", {"b": "2"}),
    ("a=1\na=2", {"a": "2"}),
    ("=v", {"": "v"}),
    ("\f\t key", {"key": ""}),
])  # fmt: skip
def test_escapes_continuations_and_comments_as_in_java(text, expected):
    assert read_properties(text) == expected


@pytest.mark.parametrize("text", ["a=\\u12", "a=\\u12g4", "\\uzzzz=b"])
def test_a_malformed_unicode_escape_is_refused(text):
    with pytest.raises(MalformedProperties, match=r"^Malformed \\uxxxx encoding\.$"):
        read_properties(text)


def test_the_file_is_iso_8859_1_as_kafka_reads_it(tmp_path):
    path = tmp_path / "server.properties"
    path.write_bytes(b"a=caf\xe9\nb=caf\xc3\xa9\nc=caf\\u00e9\n")
    assert load_properties(path) == {"a": "café", "b": "cafÃ©", "c": "café"}


def test_the_qa_files_load_as_kafka_loads_them(tmp_path):
    """A multi-line ``sasl.jaas.config``, a ``!`` comment, a continued value, a blank separator, a bare key."""
    text = ("listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
            "PlainLoginModule required \\\n    username=\"admin\" password=\"admin-secret\";\n"
            "! a bang comment\nauto.create.topics.enable=\\\n  false\nnum.partitions 3\nfoo\n")  # fmt: skip
    assert read_properties(text) == {
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain."
        'PlainLoginModule required username="admin" password="admin-secret";',
        "auto.create.topics.enable": "false", "num.partitions": "3", "foo": ""}  # fmt: skip


@pytest.mark.parametrize(("argument", "expected"), [
    ("my.property=value", ("my.property", "value")),
    ("first.property==first", ("first.property", "=first")),
    ("second.property=second=", ("second.property", "second=")),
    ("my.empty.property=", ("my.empty.property", "")),
    ("my.empty.property1", ("my.empty.property1", "")),
    ("a=C:\\dir #x ", ("a", "C:\\dir #x ")),  # no unescaping, no trimming
    (" a = b", (" a ", " b")),
])  # fmt: skip
def test_overrides_split_at_the_first_equals_sign_as_kafka_does(argument, expected):
    assert parse_override(argument) == expected


def test_java_trim_drops_control_characters_and_spaces_only():
    assert java_trim("\x00\t x \x1f\n") == "x"
    assert java_trim("\u00a0x\u2003") == "\u00a0x\u2003"


def _store(text: str, key: bool) -> str:
    """``text`` escaped so that Properties.load gives it back (as ``Properties.store`` would write it)."""
    out = []
    for index, char in enumerate(text):
        if char in "\\=:#! " and (key or char != " " or index == 0) or char == "\\":
            out.append("\\" + char)
        elif char in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[char])
        elif not " " <= char <= "~":
            out.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else char)
        else:
            out.append(char)
    return "".join(out)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)


@given(st.dictionaries(_TEXT, _TEXT, max_size=6), st.sampled_from(["=", ":", " ", " = ", "\t:\t"]),
       st.sampled_from(["\n", "\r\n", "\r"]))  # fmt: skip
def test_any_keys_and_values_round_trip(props, separator, newline):
    lines = (f"{_store(k, True)}{separator if k else '='}{_store(v, False)}" for k, v in props.items())
    text = newline.join(lines)  # (an empty key needs a separator that is not blank: Java's store writes '=')
    assert read_properties(text) == props


_PIECES = ["a", "k", "é", " ", "\t", "\f", "\r", "\n", "\r\n", "=", ":", "#", "!", "\\", "\\\\", "\\u", "\\u0041",
           "\\uD83D\\uDE00", "\\uDC00", "0", "4", "F", "g", "\\\n", "\\\r\n"]  # fmt: skip


def _units(hex_units: str) -> str:
    """A Java string from the oracle's hex UTF-16 units, surrogate pairs joined as Java shows them."""
    raw = bytes.fromhex(hex_units[1:])
    return raw.decode("utf-16-be", "surrogatepass")


def _java_answers(texts: list[str]) -> list[dict[str, str] | str]:
    payload = "".join(base64.b64encode(t.encode()).decode() + "\n" for t in texts)
    result = subprocess.run(["java", str(ORACLE)], input=payload, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    answers: list[dict[str, str] | str] = []
    for line in result.stdout.splitlines():
        status, *pairs = line.split(" ") if line.startswith("OK") else (line, )
        if status != "OK":
            answers.append(status)
            continue
        answers.append(dict((_units(key), _units(value)) for key, value in (pair.split(":") for pair in pairs)))
    return answers


@pytest.mark.timeout(180)
def test_random_texts_read_as_the_jdk_reads_them():
    if shutil.which("java") is None:
        pytest.skip("no JDK (scripts/setup --with-e2e-tools installs one)")
    rng = random.Random(20241025)
    texts = ["".join(rng.choices(_PIECES, k=rng.randrange(40))) for _ in range(3000)]
    for text, java in zip(texts, _java_answers(texts), strict=True):
        try:
            ours: dict[str, str] | str = read_properties(text)
        except MalformedProperties as exc:
            ours = f"ERR {exc}"
        assert ours == java, repr(text)


def test_serve_reads_the_file_and_the_overrides_as_kafka_does(tmp_path):
    """A continued ``sasl.jaas.config``, a ``!`` comment, a continued value and blank separators load; each value
    is trimmed as Kafka's ConfigDef trims it; an override is taken as given (its key is not trimmed)."""
    path = tmp_path / "server.properties"
    path.write_text(
        f"log.dirs {tmp_path / 'data'}\nlisteners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0\n"
        "sasl.enabled.mechanisms=PLAIN\n! a bang comment\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule"
        " required \\\n    username=\"admin\" password=\"admin-secret\" \\\n    user_alice=\"alice-secret\";\n"
        "auto.create.topics.enable=\\\n  false   \nnum.partitions : 3\t\n")  # fmt: skip
    config = BrokerConfig.load(path, _overrides(["socket.request.max.bytes=\t2000 "]))
    assert served_listeners(config)[1].sasl.plain_users == {"alice": "alice-secret"}
    assert (config.auto_create_topics_enable, config.num_partitions, config.socket_request_max_bytes) == (
        False, 3, 2000)  # fmt: skip
    assert _overrides(["a", " b = c", "d=e=f"]) == {"a": "", " b ": " c", "d": "e=f"}


def test_a_malformed_escape_in_the_file_stops_the_start_naming_the_file(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text("ssl.keystore.password=\\u12\n")
    with pytest.raises(ConfigError, match=r"server.properties: Malformed \\uxxxx encoding"):
        BrokerConfig.load(path)
