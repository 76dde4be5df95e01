"""Topic configuration: Kafka's names, defaults, broker synonyms, precedence and validation."""

from __future__ import annotations

import pytest

from storage import ConfigError
from storage.config import TOPIC_CONFIGS, ConfigModel

from .lead_helpers import Clock, append, manager


def test_defaults_are_kafkas():
    c = ConfigModel.from_broker_props({}).effective({})
    assert c.segment_bytes == 1_073_741_824 and c.segment_ms == 604_800_000 and c.retention_ms == 604_800_000
    assert c.retention_bytes == -1 and c.cleanup_policy == ("delete",) and c.index_interval_bytes == 4096
    assert c.segment_index_bytes == 10_485_760 and c.max_message_bytes == 1_048_588
    assert c.min_cleanable_dirty_ratio == 0.5 and c.delete_retention_ms == 86_400_000
    assert c.file_delete_delay_ms == 60_000 and c.flush_messages == c.flush_ms == 2**63 - 1
    assert c.message_timestamp_type == "CreateTime" and c.tombstone_header == "kafka.tombstone"
    assert c.message_format_version == "3.0-IV1"


@pytest.mark.parametrize(
    "props, expected",
    [
        ({"log.retention.hours": "2"}, 7_200_000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3"}, 180_000),
        ({"log.retention.hours": "2", "log.retention.minutes": "3", "log.retention.ms": "42"}, 42),
    ],
)
def test_broker_time_keys_follow_kafkas_precedence(props, expected):
    assert ConfigModel.from_broker_props(props).effective({}).retention_ms == expected


@pytest.mark.parametrize(
    "props, expected",
    [
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-1", "log.retention.hours": "1"}, -1),
        ({"log.retention.ms": "-5"}, -1),
        ({"log.retention.hours": "-3"}, -1),
    ],
)
def test_any_negative_broker_retention_time_is_unlimited(props, expected):
    """Kafka's logRetentionTimeMillis: the broker keys have no lower bound and a negative time is -1, so
    the common ``log.retention.hours=-1`` starts with unlimited retention."""
    model = ConfigModel.from_broker_props(props)
    assert model.effective({}).retention_ms == expected
    assert model.with_dynamic([("DYNAMIC_BROKER_CONFIG", {"log.retention.ms": "-9"})]).effective({}).retention_ms == -1


@pytest.mark.parametrize("props", [{"log.retention.hours": "0"}, {"log.retention.minutes": "0"},
                                   {"log.retention.ms": "0", "log.retention.hours": "5"}])  # fmt: skip
def test_a_broker_retention_time_of_zero_is_refused(props):
    """Kafka's validateValues: log.retention.ms must be -1 or at least 1 (a topic may still set 0)."""
    refusal = r"^requirement failed: log.retention.ms must be unlimited \(-1\) or, greater than or equal to 1$"
    with pytest.raises(ConfigError, match=refusal):
        ConfigModel.from_broker_props(props)
    model = ConfigModel.from_broker_props({})
    with pytest.raises(ConfigError, match=refusal):
        model.with_dynamic([("DYNAMIC_BROKER_CONFIG", {"log.retention.ms": "0"})])
    assert model.effective({"retention.ms": "0"}).retention_ms == 0


def test_roll_hours_feed_segment_ms():
    assert ConfigModel.from_broker_props({"log.roll.hours": "1"}).effective({}).segment_ms == 3_600_000
    assert ConfigModel.from_broker_props({"log.roll.hours": "1", "log.roll.ms": "5"}).effective({}).segment_ms == 5


def test_flush_scheduler_interval_feeds_flush_ms():
    """Kafka's ``KafkaConfig.logFlushIntervalMs``: without ``log.flush.interval.ms`` a topic's ``flush.ms``
    defaults to ``log.flush.scheduler.interval.ms``; a dynamic ``log.flush.interval.ms`` still wins."""
    model = ConfigModel.from_broker_props({"log.flush.scheduler.interval.ms": "5000"})
    assert model.effective({}).flush_ms == 5000 and model.effective({"flush.ms": "7"}).flush_ms == 7
    both = {"log.flush.scheduler.interval.ms": "5000", "log.flush.interval.ms": "300"}
    assert ConfigModel.from_broker_props(both).effective({}).flush_ms == 300
    layered = model.with_dynamic([("DYNAMIC_BROKER_CONFIG", {"log.flush.interval.ms": "9"})])
    assert layered.effective({}).flush_ms == 9


def test_topic_override_beats_broker_key_beats_default():
    model = ConfigModel.from_broker_props({"log.segment.bytes": "5000"})
    assert model.effective({}).segment_bytes == 5000
    assert model.effective({"segment.bytes": "7000"}).segment_bytes == 7000


@pytest.mark.parametrize(
    "props, key",
    [
        ({"log.segment.bytes": "abc"}, "log.segment.bytes"),
        ({"log.segment.bytes": "13"}, "log.segment.bytes"),  # below Kafka's minimum of 14
        ({"log.cleanup.policy": "shred"}, "log.cleanup.policy"),
        ({"log.no.such.key": "1"}, "log.no.such.key"),
        ({"log.flush.durable.enable": "maybe"}, "log.flush.durable.enable"),
        ({"log.retention.hours": "x"}, "log.retention.hours"),
    ],
)
def test_bad_broker_keys_name_the_key(props, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        ConfigModel.from_broker_props(props)


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"segment.bytes": "-5"}, "segment.bytes"),
        ({"no.such.config": "1"}, "no.such.config"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio"),
        ({"message.timestamp.type": "WallTime"}, "message.timestamp.type"),
        ({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "max.compaction.lag.ms"),
        ({"retention.ms": "-2"}, "retention.ms"),
        ({"retention.ms": str(2**63)}, "retention.ms"),
        ({"segment.bytes": str(2**31)}, "segment.bytes"),
        ({"min.cleanable.dirty.ratio": "nan"}, "min.cleanable.dirty.ratio"),
        ({"message.format.version": "banana"}, "message.format.version"),
        ({"cleanup.policy": "compact,shred"}, "cleanup.policy"),
        ({"compression.gzip.level": "0"}, "compression.gzip.level"),  # Kafka: -1 or 1-9
        ({"compression.gzip.level": "-2"}, "compression.gzip.level"),
        ({"compression.gzip.level": "10"}, "compression.gzip.level"),
        ({"compression.lz4.level": "0"}, "compression.lz4.level"),  # 1-17
        ({"compression.lz4.level": "18"}, "compression.lz4.level"),
        ({"compression.zstd.level": "23"}, "compression.zstd.level"),  # zstd's -131072 to 22
        ({"compression.zstd.level": "-131073"}, "compression.zstd.level"),
        ({"compression.zstd.level": "-0.1"}, "compression.zstd.level"),
    ],
)
def test_bad_topic_overrides_name_the_key(tmp_path, overrides, key):
    lm = manager(tmp_path, Clock())
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        lm.create_topic("t", 1, overrides)
    assert "t" not in lm.topics()
    lm.create_topic("t", 1, {})
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        lm.set_topic_overrides("t", overrides)
    assert lm.topics()["t"].overrides == {}


def test_compression_levels_have_kafkas_defaults_and_broker_keys_of_the_same_name():
    c = ConfigModel.from_broker_props({}).effective({})
    assert (c.compression_gzip_level, c.compression_lz4_level, c.compression_zstd_level) == (-1, 9, 3)
    model = ConfigModel.from_broker_props({"compression.lz4.level": "4", "compression.zstd.level": "-7"})
    c = model.effective({"compression.gzip.level": "9", "compression.lz4.level": "12"})
    assert (c.compression_gzip_level, c.compression_lz4_level, c.compression_zstd_level) == (9, 12, -7)
    with pytest.raises(ConfigError, match=r"compression\.gzip\.level"):
        ConfigModel.from_broker_props({"compression.gzip.level": "11"})


def test_deprecated_and_cleaner_keys_are_accepted():
    model = ConfigModel.from_broker_props(
        {"log.message.format.version": "0.10.2", "log.cleaner.threads": "2", "num.recovery.threads.per.data.dir": "4"}
    )
    assert model.effective({"message.format.version": "0.11.0"}).message_format_version == "3.0-IV1"
    assert model.cleaner_props == {"log.cleaner.threads": "2"}


def test_describe_reports_source_and_synonyms_in_kafkas_order(tmp_path):
    lm = manager(tmp_path, Clock(), **{"log.retention.minutes": "5", "log.segment.bytes": "9000"})
    lm.create_topic("t", 1, {"retention.ms": "100"})
    rows = {e.name: e for e in lm.describe_config("t")}
    assert {s.name for s in TOPIC_CONFIGS} == set(rows)
    retention = rows["retention.ms"]
    assert (retention.value, retention.source) == ("100", "DYNAMIC_TOPIC_CONFIG")
    assert [s[2] for s in retention.synonyms] == ["DYNAMIC_TOPIC_CONFIG", "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"]
    assert retention.synonyms[1][0] == "log.retention.minutes"
    assert (rows["segment.bytes"].value, rows["segment.bytes"].source) == ("9000", "STATIC_BROKER_CONFIG")
    assert (rows["cleanup.policy"].value, rows["cleanup.policy"].source) == ("delete", "DEFAULT_CONFIG")
    assert rows["segment.bytes"].type == "INT" and rows["cleanup.policy"].type == "LIST"


def test_overrides_change_live_logs(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 2, {})
    lm.set_topic_overrides("t", {"segment.bytes": "1000"})
    assert lm.get_log("t", 1).config.segment_bytes == 1000 == lm.effective_config("t").segment_bytes
    lm.close()
    lm2 = manager(tmp_path, Clock())
    assert lm2.topics()["t"].overrides == {"segment.bytes": "1000"}
    assert lm2.get_log("t", 0).config.segment_bytes == 1000


def test_retention_bytes_may_be_any_negative_like_kafka(tmp_path):
    """Kafka defines retention.bytes without a lower bound: any negative value means no size limit."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"retention.bytes": "-7", "segment.bytes": "300"})
    log = lm.get_log("t", 0)
    assert log.config.retention_bytes == -7
    for _ in range(20):
        append(log)
    segments = len(log.segments)
    assert log.run_retention(clock.now) == 0 and len(log.segments) == segments > 1


def test_only_a_message_format_version_before_0_11_gets_kafkas_warning_naming_the_topic(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="storage.config"):
        ConfigModel.from_broker_props({"log.message.format.version": "2.8"})
        lm = manager(tmp_path, Clock())
        lm.create_topic("new", 1, {"message.format.version": "3.0"})
        lm.set_topic_overrides("new", {"message.format.version": "2.1-IV2"})
        assert caplog.messages == []
        ConfigModel.from_broker_props({"log.message.format.version": "0.10.2"})
        lm.create_topic("old", 1, {"message.format.version": "0.10.0"})
        lm.set_topic_overrides("new", {"message.format.version": "0.9.0"})
        lm.set_topic_overrides("new", {"message.format.version": "0.9.0", "retention.ms": "5"})  # unchanged
    assert len(caplog.messages) == 3, caplog.messages
    broker, old, new = caplog.messages
    assert "log.message.format.version with value 0.10.2 is ignored" in broker
    assert "value `0.10.0` is ignored for `old`" in old and "value `0.9.0` is ignored for `new`" in new
