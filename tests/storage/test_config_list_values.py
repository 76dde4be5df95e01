"""LIST order and Kafka's wording for refused values in the topic config model.

``cleanup.policy`` keeps the order it was given (Kafka's LIST: ``delete,compact``
is stored and described so), refused the way Kafka 4.3's ``ValidList`` refuses;
a value a type cannot parse, or a number out of range, is refused in the words
of Kafka's ``ConfigDef`` (``parseType``, ``Range``) and the key's validator.
"""

from __future__ import annotations

import pytest

from storage import ConfigError
from storage.config import ConfigModel, java_text

MODEL = ConfigModel.from_broker_props({})


def _policy_row(overrides: dict[str, str]):
    return next(e for e in MODEL.describe(overrides) if e.name == "cleanup.policy")


@pytest.mark.parametrize(
    "text, parsed, described",
    [
        ("delete,compact", ("delete", "compact"), "delete,compact"),
        ("compact,delete", ("compact", "delete"), "compact,delete"),
        (" delete , compact ", ("delete", "compact"), "delete,compact"),
        ("compact", ("compact",), "compact"),
        ("", (), ""),  # Kafka: an empty list, no cleanup at all
    ],
)
def test_cleanup_policy_keeps_the_given_order(text, parsed, described):
    assert MODEL.effective({"cleanup.policy": text}).cleanup_policy == parsed
    row = _policy_row({"cleanup.policy": text})
    assert (row.value, row.source, row.synonyms[0][1]) == (described, "DYNAMIC_TOPIC_CONFIG", text)


def test_the_broker_default_keeps_its_order_too():
    model = ConfigModel.from_broker_props({"log.cleanup.policy": "delete,compact"})
    assert model.effective({}).cleanup_policy == ("delete", "compact")
    row = next(e for e in model.describe({}) if e.name == "cleanup.policy")
    assert (row.value, row.source) == ("delete,compact", "STATIC_BROKER_CONFIG")


@pytest.mark.parametrize(
    "text, message",
    [
        ("compact,shred", "Invalid value shred for configuration cleanup.policy: String must be one of: "),
        ("delete,delete", "Configuration 'cleanup.policy' values must not be duplicated."),
        ("delete,,compact", "Configuration 'cleanup.policy' values must not be empty."),
        ("delete,", "Configuration 'cleanup.policy' values must not be empty."),
        ("Delete", "Invalid value Delete for configuration cleanup.policy: String must be one of: "),
    ],
)
def test_cleanup_policy_refusals_are_kafkas(text, message):
    with pytest.raises(ConfigError) as refused:
        MODEL.validate_overrides({"cleanup.policy": text})
    choices = "compact, delete" if message.endswith(": ") else ""
    assert str(refused.value) == message + choices


@pytest.mark.parametrize(
    "key, text, reason",
    [
        ("retention.ms", "soon", "Not a number of type LONG"),
        ("retention.ms", "1_000", "Not a number of type LONG"),  # Python's int() would take it, Java's not
        ("retention.ms", "9223372036854775808", "Not a number of type LONG"),  # beyond Long: a parse error
        ("segment.bytes", "2147483648", "Not a number of type INT"),
        ("segment.bytes", "1.5", "Not a number of type INT"),
        ("min.cleanable.dirty.ratio", "half", "Not a number of type DOUBLE"),
        ("min.cleanable.dirty.ratio", "nan", "Not a number of type DOUBLE"),  # Java spells it NaN
        ("preallocate", "maybe", "Expected value to be either true or false"),
        ("compression.type", "zip", "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
        ("message.timestamp.type", "WallTime", "String must be one of: CreateTime, LogAppendTime"),
        ("message.format.version", "banana", "Version banana is not a valid version"),
    ],
)
def test_unparsable_values_are_refused_in_kafkas_words(key, text, reason):
    _refused_in_kafkas_words(lambda: MODEL.validate_overrides({key: text}), key, text, reason)


def _refused_in_kafkas_words(check, key: str, text: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        check()
    assert str(refused.value) == f"Invalid value {text} for configuration {key}: {reason}"


@pytest.mark.parametrize(
    "key, text, shown, reason",
    [
        ("retention.ms", "-2", "-2", "Value must be at least -1"),
        ("segment.bytes", " 13 ", "13", "Value must be at least 14"),
        ("max.compaction.lag.ms", "0", "0", "Value must be at least 1"),
        ("min.cleanable.dirty.ratio", "1.5", "1.5", "Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", "-0.25", "-0.25", "Value must be at least 0"),
        ("min.cleanable.dirty.ratio", "Infinity", "Infinity", "Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", "2e7", "2.0E7", "Value must be no more than 1"),
        ("compression.lz4.level", "18", "18", "Value must be no more than 17"),
        ("compression.gzip.level", "0", "0", "Value must be between 1 and 9 or equal to -1"),
    ],
)
def test_out_of_range_values_are_refused_in_kafkas_words(key, text, shown, reason):
    with pytest.raises(ConfigError) as refused:
        MODEL.validate_overrides({key: text})
    assert str(refused.value) == f"Invalid value {shown} for configuration {key}: {reason}"


def test_java_number_syntax_is_accepted():
    c = MODEL.effective({"min.cleanable.dirty.ratio": "0.25d", "retention.ms": "+5000", "segment.bytes": "0016384"})
    assert (c.min_cleanable_dirty_ratio, c.retention_ms, c.segment_bytes) == (0.25, 5000, 16384)
    assert MODEL.effective({"preallocate": " TRUE "}).preallocate is True


def test_nan_is_refused_although_kafka_lets_it_through():
    with pytest.raises(ConfigError, match="^Invalid value NaN for configuration min.cleanable.dirty.ratio: "):
        MODEL.validate_overrides({"min.cleanable.dirty.ratio": "NaN"})


def test_other_refusals_are_kafkas():
    with pytest.raises(ConfigError, match=r"^Unknown topic config name: no\.such\.config$"):
        MODEL.validate_overrides({"no.such.config": "1"})
    conflict = "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    with pytest.raises(ConfigError) as refused:
        MODEL.validate_overrides({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})
    assert str(refused.value) == conflict


@pytest.mark.parametrize(
    "key, text, reason",
    [
        ("log.segment.bytes", "abc", "Not a number of type INT"),
        ("log.retention.hours", "x", "Not a number of type INT"),
        ("log.retention.ms", "x", "Not a number of type LONG"),
        ("log.cleaner.threads", "two", "Not a number of type INT"),
        ("log.cleaner.io.buffer.load.factor", "most", "Not a number of type DOUBLE"),
        ("log.flush.durable.enable", "maybe", "Expected value to be either true or false"),
        ("log.cleaner.backoff.ms", "-5", "Value must be at least 0"),  # a negative backoff spun the thread
        ("log.cleaner.io.buffer.size", "-1", "Value must be at least 0"),
        ("log.cleaner.threads", "-1", "Value must be at least 0"),
        ("num.recovery.threads.per.data.dir", "0", "Value must be at least 1"),
        ("producer.id.expiration.ms", "0", "Value must be at least 1"),
        ("log.flush.start.offset.checkpoint.interval.ms", "-1", "Value must be at least 0"),
    ],
)
def test_broker_keys_are_refused_in_kafkas_words(key, text, reason):
    _refused_in_kafkas_words(lambda: ConfigModel.from_broker_props({key: text}), key, text, reason)


def test_cleaner_keys_take_kafkas_lowest_values():
    """CleanerConfig's atLeast(0) bounds let 0 through; the keys Kafka gives no range keep none."""
    model = ConfigModel.from_broker_props({"log.cleaner.backoff.ms": "0", "log.cleaner.io.buffer.size": "0",
                                           "log.cleaner.io.max.bytes.per.second": "-1"})  # fmt: skip
    assert model.other == {"log.cleaner.backoff.ms": 0, "log.cleaner.io.buffer.size": 0,
                           "log.cleaner.io.max.bytes.per.second": -1.0}  # fmt: skip


@pytest.mark.parametrize("threads, size, accepted", [
    (None, 1 << 20, False), (None, (1 << 20) + 1, True), ("2", 2 << 20, False), ("2", (2 << 20) + 1, False),
    ("2", (2 << 20) + 2, True), ("3", 100, False), (None, -1, False),
])  # fmt: skip
def test_each_cleaner_thread_needs_over_1mib_of_dedupe_buffer(threads, size, accepted):
    """KafkaConfig's requirement: log.cleaner.dedupe.buffer.size / log.cleaner.threads (integer division) over
    1 MiB, checked on the values the broker ends with (1 thread when the key is not set)."""
    props = {"log.cleaner.dedupe.buffer.size": str(size), **({"log.cleaner.threads": threads} if threads else {})}
    if accepted:
        assert ConfigModel.from_broker_props(props).other["log.cleaner.dedupe.buffer.size"] == size
        return
    with pytest.raises(ConfigError) as refused:
        ConfigModel.from_broker_props(props)
    assert str(refused.value) == "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."


def test_no_cleaner_thread_is_refused_naming_the_key():
    """Kafka declares log.cleaner.threads atLeast(0) but then divides the dedupe buffer by it and fails on 0."""
    with pytest.raises(ConfigError, match="^log.cleaner.threads must be at least 1"):
        ConfigModel.from_broker_props({"log.cleaner.threads": "0"})


@pytest.mark.parametrize(
    "value, text",
    [(0.5, "0.5"), (1.0, "1.0"), (1e-3, "0.001"), (9.9e-4, "9.9E-4"), (1e7, "1.0E7"), (-1.25e-5, "-1.25E-5"),
     (float("inf"), "Infinity"), (float("-inf"), "-Infinity"), (True, "true"), (42, "42")],
)
def test_values_are_shown_as_java_writes_them(value, text):
    assert java_text(value) == text
