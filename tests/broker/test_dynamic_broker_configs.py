"""Dynamic broker configs (``broker/dynamic_config.py``), driven in-process through ``dispatch``.

AlterConfigs / IncrementalAlterConfigs on a BROKER resource at Kafka's two
levels (cluster default ``""``, this node), what DescribeConfigs then reports
(sources 2 and 3, synonyms most specific first), the effect on logs without
a topic override, Kafka's refusals and their messages, and that the levels
survive a restart in ``__broker_configs.json``. How the synonym lists of
time keys and per-listener keys are ordered: ``test_dynamic_broker_configs_synonyms.py``.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
import trio

from broker.config import BrokerConfig
from broker.connection_quotas import ConnectionQuotas
from broker.core import Broker
from protocol import ErrorCode
from storage import StorageError
from storage import log_opening

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    BROKER, DEFAULT, STATIC, broker, configs_of, create_ok, describe, produce,
)  # fmt: skip
from ._dynamic_configs import (
    APPEND, DELETE, DYNAMIC_BROKER, DYNAMIC_DEFAULT, NODE_NAME, SET, SUBTRACT, alter, broker_entry, incremental, ok,
)  # fmt: skip


def chain(entry) -> list:
    return [(s.value, s.source) for s in entry.synonyms]


async def test_a_cluster_default_reaches_topics_without_an_override_and_a_node_value_wins(broker):
    await create_ok(broker, "plain")
    await create_ok(broker, "own", configs={"segment.bytes": "65536"})
    await ok(await incremental(broker, "", [("log.segment.bytes", SET, "4096")]))
    default = (await describe(broker, "", rtype=BROKER)).configs
    assert [(c.name, c.value, c.config_source, c.read_only, c.config_type) for c in default] == [
        ("log.segment.bytes", "4096", DYNAMIC_DEFAULT, False, 3)]  # 3: INT
    assert [(s.value, s.source) for s in default[0].synonyms] == [("4096", DYNAMIC_DEFAULT)]
    entry = await broker_entry(broker, "log.segment.bytes")
    assert chain(entry) == [("4096", DYNAMIC_DEFAULT), ("1048576", STATIC), ("1073741824", DEFAULT)]
    topic = (await configs_of(broker, "plain"))["segment.bytes"]
    assert (topic.value, topic.config_source) == ("4096", DYNAMIC_DEFAULT)
    assert broker.topics.partition("plain", 0).log.config.segment_bytes == 4096
    assert broker.topics.partition("own", 0).log.config.segment_bytes == 65536
    await ok(await incremental(broker, NODE_NAME, [("log.segment.bytes", SET, "8192")]))
    topic = (await configs_of(broker, "plain"))["segment.bytes"]
    assert (topic.value, topic.config_source) == ("8192", DYNAMIC_BROKER)
    assert [(s.name, s.source) for s in topic.synonyms] == [
        ("log.segment.bytes", DYNAMIC_BROKER), ("log.segment.bytes", DYNAMIC_DEFAULT),
        ("log.segment.bytes", STATIC), ("log.segment.bytes", DEFAULT)]  # fmt: skip
    assert broker.topics.partition("plain", 0).log.config.segment_bytes == 8192


async def test_the_new_segment_size_rolls_the_next_appends(broker):
    await create_ok(broker, "rolls")
    log_ = broker.topics.partition("rolls", 0).log
    for _ in range(4):
        await produce(broker, "rolls", [1] * 20)
    assert len(log_.segments) == 1
    await ok(await incremental(broker, "", [("log.segment.bytes", SET, "1024")]))
    for _ in range(4):
        await produce(broker, "rolls", [1] * 20)
    assert len(log_.segments) >= 3  # the first one, then a roll every ~1 KiB


async def test_cleanup_policy_append_makes_every_plain_topic_compacted(broker):
    await create_ok(broker, "events")
    assert not broker.topics.partition("events", 0).validation_config.compacted
    await ok(await incremental(broker, "", [("log.cleanup.policy", APPEND, "compact")]))
    assert broker.dynamic_config.levels[""] == {"log.cleanup.policy": "delete,compact"}
    assert broker.topics.partition("events", 0).validation_config.compacted
    await ok(await incremental(broker, "", [("log.cleanup.policy", SUBTRACT, "delete")]))
    assert (await configs_of(broker, "events"))["cleanup.policy"].value == "compact"
    await ok(await incremental(broker, "", [("log.cleanup.policy", DELETE, None)]))
    assert broker.dynamic_config.levels[""] == {}
    assert not broker.topics.partition("events", 0).validation_config.compacted


@pytest.mark.parametrize(("ops", "message"), [
    ([("node.id", SET, "7")], "Cannot update these configs dynamically: Set(node.id)"),
    ([("log.retention.hours", SET, "1"), ("num.partitions", SET, "2")],
     "Cannot update these configs dynamically: Set(log.retention.hours, num.partitions)"),
    ([("log.message.format.version", SET, "3.0")], "Cannot update these configs dynamically"),
    ([("ssl.keystore.location", SET, "/k.p12")],
     "These security configs can be dynamically updated only per-listener using the listener prefix: "
     "Set(ssl.keystore.location)"),
    ([("log.segment.bytes", SET, "soon")],
     "Invalid value soon for configuration log.segment.bytes: Not a number of type INT"),
    ([("max.connections", SET, "-1")], "Invalid value -1 for configuration max.connections: Value must be at least 0"),
    ([("log.segment.bytes", SET, None)], "Null value not supported for : log.segment.bytes"),
    ([("listener.name.plaintext.sasl.enabled.mechanisms", SET, "PLAIN")],
     "Set(listener.name.plaintext.sasl.enabled.mechanisms)"),  # default level: per broker; node: not here
    ([("ssl.keystore.location", SET, "/k.p12"), ("listener.name.ssl.ssl.keystore.location", SET, "/k.p12")],
     "These security configs can be dynamically updated only per-listener"),
    ([("no.such.key", SET, "1")], "Unknown broker configs: Set(no.such.key)"),
    ([("log.cleaner.threads", SET, "3")], "Invalid dynamic configuration"),
    ([("num.io.threads", SET, "17")], "Invalid dynamic configuration"),
    ([("log.cleaner.backoff.ms", SET, "-5")],  # a negative backoff made the cleaner thread spin
     "Invalid value -5 for configuration log.cleaner.backoff.ms: Value must be at least 0"),
    ([("log.cleaner.io.buffer.size", SET, "-1")],
     "Invalid value -1 for configuration log.cleaner.io.buffer.size: Value must be at least 0"),
    ([("log.cleaner.dedupe.buffer.size", SET, "1000")],
     "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."),
])  # fmt: skip
async def test_refusals_are_invalid_request_with_kafkas_message_and_change_nothing(broker, ops, message):
    for level in ("", NODE_NAME):
        result = await incremental(broker, level, ops)
        assert result.error_code == ErrorCode.INVALID_REQUEST and message in result.error_message
    assert broker.dynamic_config.levels == {"": {}, NODE_NAME: {}}
    assert not (broker.dynamic_config.path).exists()


@pytest.mark.parametrize("op, word", [(APPEND, "append"), (SUBTRACT, "subtract")])
async def test_append_or_subtract_on_a_non_list_key_is_invalid_config(broker, op, word):
    """Kafka's ``prepareIncrementalConfigs`` throws InvalidConfigurationException, outside the validation
    whose failures it turns into INVALID_REQUEST."""
    for level in ("", NODE_NAME):
        result = await incremental(broker, level, [("log.segment.bytes", op, "1")])
        message = f"Config value {word} is not allowed for config key: log.segment.bytes"
        assert (result.error_code, result.error_message) == (ErrorCode.INVALID_CONFIG, message)
    assert broker.dynamic_config.levels == {"": {}, NODE_NAME: {}}
    assert not (broker.dynamic_config.path).exists()


async def test_thread_counts_may_go_to_half_or_double(broker):
    await ok(await incremental(broker, "", [("log.cleaner.threads", SET, "2"), ("num.io.threads", SET, "4")]))
    assert broker.topics.manager.model.other["log.cleaner.threads"] == 2 and broker.config.num_io_threads == 4
    assert (await incremental(broker, "", [("num.io.threads", SET, "1")])).error_code == ErrorCode.INVALID_REQUEST
    await ok(await incremental(broker, "", [("num.io.threads", SET, "2")]))
    recovery = await incremental(broker, "", [("num.recovery.threads.per.data.dir", SET, "5")])  # Kafka's default: 2
    assert recovery.error_code == ErrorCode.INVALID_REQUEST
    await ok(await incremental(broker, "", [("num.recovery.threads.per.data.dir", SET, "4")]))


async def test_a_cleaner_thread_more_than_the_dedupe_buffer_feeds_is_refused(broker):
    """KafkaConfig's 1 MiB per cleaner thread, checked on the values both levels leave: 2 MiB over 2 threads
    is 1 MiB each, not over it."""
    await ok(await incremental(broker, "", [("log.cleaner.dedupe.buffer.size", SET, str(2 << 20))]))
    result = await incremental(broker, NODE_NAME, [("log.cleaner.threads", SET, "2")])
    assert (result.error_code, result.error_message) == (
        ErrorCode.INVALID_REQUEST, "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.")
    assert broker.dynamic_config.levels == {"": {"log.cleaner.dedupe.buffer.size": str(2 << 20)}, NODE_NAME: {}}
    assert "log.cleaner.threads" not in broker.topics.manager.model.other


async def test_a_default_that_conflicts_with_a_topic_override_is_refused(broker):
    await create_ok(broker, "lagged", configs={"max.compaction.lag.ms": "1000"})
    result = await incremental(broker, "", [("log.cleaner.min.compaction.lag.ms", SET, "5000")])
    assert result.error_code == ErrorCode.INVALID_REQUEST and "lagged" in result.error_message
    assert broker.dynamic_config.levels[""] == {}


async def test_alter_configs_replaces_the_whole_level_and_validate_only_stores_nothing(broker):
    await ok(await alter(broker, NODE_NAME, {"log.retention.ms": "60000", "max.connections": "50"}))
    await ok(await alter(broker, NODE_NAME, {"log.retention.ms": "120000"}))
    assert broker.dynamic_config.levels[NODE_NAME] == {"log.retention.ms": "120000"}
    assert broker.config.max_connections == 2**31 - 1  # back to its static (default) value
    await ok(await alter(broker, NODE_NAME, {"log.retention.ms": "5"}, validate_only=True))
    await ok(await incremental(broker, "", [("log.retention.ms", SET, "5")], validate_only=True))
    assert broker.dynamic_config.levels == {"": {}, NODE_NAME: {"log.retention.ms": "120000"}}
    null = await alter(broker, NODE_NAME, {"log.retention.ms": None})
    assert null.error_code == ErrorCode.INVALID_REQUEST and "Null value" in null.error_message
    assert (await alter(broker, "99", {"log.retention.ms": "1"})).error_code == ErrorCode.INVALID_REQUEST


async def test_broker_keys_and_cleaner_keys_report_their_dynamic_sources(broker):
    await ok(await incremental(broker, NODE_NAME, [("max.connections", SET, "40"), ("log.cleaner.backoff.ms", SET, "50"),
                                                   ("listener.name.plaintext.max.connections", SET, "9")]))
    await ok(await incremental(broker, "", [("max.connections", SET, "60")]))
    entry = await broker_entry(broker, "max.connections")
    assert (entry.value, entry.config_source, entry.read_only) == ("40", DYNAMIC_BROKER, False)
    assert chain(entry) == [("40", DYNAMIC_BROKER), ("60", DYNAMIC_DEFAULT), (str(2**31 - 1), DEFAULT)]
    backoff = await broker_entry(broker, "log.cleaner.backoff.ms")
    assert (backoff.value, backoff.config_source, backoff.read_only) == ("50", DYNAMIC_BROKER, False)
    listener = await broker_entry(broker, "listener.name.plaintext.max.connections")
    assert (listener.value, listener.config_source) == ("9", DYNAMIC_BROKER)
    assert broker.config.max_connections == 40
    assert broker.config.listener_overrides["listener.name.plaintext.max.connections"] == "9"
    assert broker.topics.manager.model.other["log.cleaner.backoff.ms"] == 50
    assert (await broker_entry(broker, "node.id")).read_only


async def test_connection_limits_change_at_once(broker):
    quotas = broker.connection_quotas = ConnectionQuotas(broker.config, ["PLAINTEXT"])
    await ok(await incremental(broker, "", [("max.connections", SET, "5"), ("max.connections.per.ip", SET, "2"),
                                            ("listener.name.plaintext.max.connections", SET, "4")]))
    assert (quotas.max_total, quotas.max_ip, quotas.max_listener) == (5, 2, {"PLAINTEXT": 4})
    bad = await incremental(broker, "", [("max.connections.per.ip", SET, "0")])
    assert bad.error_code == ErrorCode.INVALID_REQUEST and "max.connections.per.ip.overrides" in bad.error_message
    assert quotas.max_ip == 2


async def test_producer_id_expiration_reaches_every_log(broker):
    await create_ok(broker, "pids", partitions=2)
    await ok(await incremental(broker, NODE_NAME, [("producer.id.expiration.ms", SET, "1234")]))
    assert {broker.topics.partition("pids", p).log.producer_state.expiration_ms for p in (0, 1)} == {1234}


def _open(tmp_path):
    props = {"node.id": NODE_NAME, "log.dirs": str(tmp_path / "data"), "prometheus.port": "0"}
    return Broker.open(BrokerConfig.from_props(props))


async def test_levels_survive_a_restart(broker, tmp_path):
    await create_ok(broker, "kept")
    await ok(await incremental(broker, "", [("log.retention.ms", SET, "60000")]))
    await ok(await incremental(broker, NODE_NAME, [("max.connections", SET, "77")]))
    broker.close()
    stored = json.loads((tmp_path / "data" / "__broker_configs.json").read_text())
    assert stored == {"<default>": {"log.retention.ms": "60000"}, NODE_NAME: {"max.connections": "77"}}
    again = _open(tmp_path)
    try:
        assert again.topics.partition("kept", 0).log.config.retention_ms == 60000
        assert again.config.max_connections == 77
        entry = {c.name: c for c in (await describe(again, NODE_NAME, rtype=BROKER)).configs}["log.retention.ms"]
        assert (entry.value, entry.config_source) == ("60000", DYNAMIC_DEFAULT)
    finally:
        again.close()


async def test_a_dynamic_recovery_thread_count_does_not_size_the_next_load(tmp_path, monkeypatch):
    """As a Kafka KRaft broker, whose LogManager loads its logs before the dynamic configs are applied:
    the next start loads each dir on ``server.properties``' thread count, the stored value is still stored."""
    props = {"node.id": NODE_NAME, "log.dirs": str(tmp_path / "data"), "prometheus.port": "0",
             "num.recovery.threads.per.data.dir": "3"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    await ok(await incremental(b, NODE_NAME, [("num.recovery.threads.per.data.dir", SET, "6")]))
    b.close()
    sizes = []

    class Recorded(log_opening.RecoveryPool):
        def __init__(self, root, threads):
            sizes.append(threads)
            super().__init__(root, threads)

    monkeypatch.setattr(log_opening, "RecoveryPool", Recorded)
    again = Broker.open(BrokerConfig.from_props(props))
    try:
        assert sizes == [3]
        assert again.dynamic_config.levels[NODE_NAME] == {"num.recovery.threads.per.data.dir": "6"}
    finally:
        again.close()


def test_a_stored_level_no_longer_valid_is_skipped_and_logged(tmp_path, caplog):
    (tmp_path / "data").mkdir()
    stored = {"<default>": {"log.segment.bytes": "soon"}, NODE_NAME: {"log.retention.ms": "1000"}}
    (tmp_path / "data" / "__broker_configs.json").write_text(json.dumps(stored))
    with caplog.at_level(logging.ERROR, logger="minibroker"):
        b = _open(tmp_path)
    try:
        assert b.dynamic_config.levels == {"": {}, NODE_NAME: {"log.retention.ms": "1000"}}
        assert b.topics.manager.model.effective({}).retention_ms == 1000
        assert "ignoring the stored dynamic broker configs of <default> (log.segment.bytes)" in caplog.text
    finally:
        b.close()


def test_a_damaged_file_stops_the_start(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__broker_configs.json").write_text("{not json")
    with pytest.raises(StorageError, match="__broker_configs.json is damaged"):
        _open(tmp_path)


async def test_concurrent_changes_to_one_level_both_land(broker):
    """Each change is worked out under the level's lock, from the level as the change before it left it."""

    class SlowCleaner:
        def reconfigure(self, config) -> None:
            time.sleep(0.1)

    broker.cleaner = SlowCleaner()
    async with trio.open_nursery() as nursery:
        for key, value in (("log.cleaner.backoff.ms", "100"), ("log.retention.ms", "60000"), ("max.connections", "9")):
            nursery.start_soon(incremental, broker, NODE_NAME, [(key, SET, value)])
    assert broker.dynamic_config.levels[NODE_NAME] == {
        "log.cleaner.backoff.ms": "100", "log.retention.ms": "60000", "max.connections": "9"}


async def test_a_change_the_file_cannot_take_is_not_made(broker):
    (broker.dynamic_config.path.parent / "__broker_configs.json.tmp").mkdir()  # the atomic write's temporary file
    result = await incremental(broker, "", [("log.retention.ms", SET, "60000")])
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR and "could not store" in result.error_message
    assert broker.dynamic_config.levels[""] == {}
    assert broker.topics.manager.model.effective({}).retention_ms == 604_800_000


async def test_listener_keystore_keys_are_per_broker_and_their_passwords_never_shown(broker):
    default = await incremental(broker, "", [("listener.name.ssl.ssl.keystore.location", SET, "/k.pem")])
    assert default.error_code == ErrorCode.INVALID_REQUEST
    assert default.error_message == ("Cannot update these configs at default cluster level, broker id must be "
                                     "specified: Set(listener.name.ssl.ssl.keystore.location)")  # fmt: skip
    await ok(await incremental(broker, NODE_NAME, [("listener.name.ssl.ssl.keystore.password", SET, "s3cret")]))
    entry = await broker_entry(broker, "listener.name.ssl.ssl.keystore.password")
    assert (entry.value, entry.is_sensitive, entry.config_source) == (None, True, DYNAMIC_BROKER)
    assert [s.value for s in entry.synonyms] == [None]
    assert broker.dynamic_config.path.stat().st_mode & 0o777 == 0o600  # the file holds it in clear


def test_connection_creation_rates_throttle_the_acceptor_and_an_address():
    config = BrokerConfig.from_props({"max.connection.creation.rate": "2", "quota.window.num": "2",
                                      "listener.name.plaintext.max.connection.creation.rate": "3"})  # fmt: skip
    quotas = ConnectionQuotas(config, ["PLAINTEXT"])
    # a 1 s window (2 samples of 1 s, at least one whole): 2 connections in it are fine, the third waits
    assert [quotas.accept_throttle("PLAINTEXT", 0) for _ in range(3)] == [0, 0, 500]  # (3 - 2) / 2 * 1 s
    assert quotas.ip_throttle("PLAINTEXT", "10.0.0.1", None, 0) == 0
    assert quotas.ip_throttle("PLAINTEXT", "10.0.0.2", 1.0, 0) == 0
    assert quotas.ip_throttle("PLAINTEXT", "10.0.0.2", 1.0, 0) == 1000  # over: waits, at most one window
    assert quotas.rates[("ip", "10.0.0.2")].rate(0) == 1.0  # the refused connection is taken back out
    assert quotas.rates[None].rate(0) == 2.0 and quotas.rates["PLAINTEXT"].rate(0) == 2.0
    samples = {name: rows for name, _h, _l, rows in quotas.metric_samples(0)}
    assert samples["kafka_server_socket_server_metrics_connection_accept_throttle_time"] == [(["PLAINTEXT"], 500.0)]
    assert samples["kafka_server_socket_server_metrics_ip_connection_accept_throttle_time"] == [(["PLAINTEXT"], 1000.0)]
    later = {name: rows for name, _h, _l, rows in quotas.metric_samples(45_000)}  # Kafka's 2 metric samples of 30 s
    assert later["kafka_server_socket_server_metrics_connection_accept_throttle_time"] == [(["PLAINTEXT"], 500.0)]
    quotas.ip_throttle("PLAINTEXT", "10.0.0.3", 1.0, 70_000)  # a minute on: what went quiet is dropped
    assert ("ip", "10.0.0.2") not in quotas.rates and ("ip", "10.0.0.3") in quotas.rates


async def test_the_reassignment_throttles_are_dynamic_and_rate_the_log_dir_moves(broker):
    moves = broker.topics.manager.moves
    unset = {c.name for c in (await describe(broker, NODE_NAME, rtype=BROKER)).configs}
    assert not unset & {"replica.alter.log.dirs.io.max.bytes.per.second", "leader.replication.throttled.rate",
                        "follower.replication.throttled.rate"}  # Kafka lists these only when set  # fmt: skip
    assert moves.throttle.rate == float("inf")  # Long.MAX_VALUE: no limit
    await ok(await incremental(broker, NODE_NAME, [("replica.alter.log.dirs.io.max.bytes.per.second", SET, "1000000"),
                                                   ("leader.replication.throttled.rate", SET, "700000000"),
                                                   ("follower.replication.throttled.rate", SET, "700000000")]))
    assert moves.throttle.rate == 1_000_000
    entry = await broker_entry(broker, "replica.alter.log.dirs.io.max.bytes.per.second")
    # read-only as Kafka describes it: DynamicConfig.Broker keys, not in DynamicBrokerConfig.AllDynamicConfigs
    assert (entry.value, entry.config_source, entry.read_only, entry.config_type) == (
        "1000000", DYNAMIC_BROKER, True, 5)  # fmt: skip
    assert (await broker_entry(broker, "leader.replication.throttled.rate")).value == "700000000"
    bad = await incremental(broker, NODE_NAME, [("replica.alter.log.dirs.io.max.bytes.per.second", SET, "-1")])
    assert (bad.error_code, bad.error_message) == (
        ErrorCode.INVALID_REQUEST, "Invalid value -1 for configuration replica.alter.log.dirs.io.max.bytes.per.second: "
                                   "Value must be at least 0")  # fmt: skip
    await ok(await incremental(broker, NODE_NAME, [("replica.alter.log.dirs.io.max.bytes.per.second", DELETE, None)]))
    assert moves.throttle.rate == float("inf")


async def test_a_change_cancelled_after_its_save_still_reconfigures_the_cleaner(broker):
    """Once saved and made, a change reaches the connection quotas and the cleaner even if its request is
    cancelled meanwhile (the broker stopping): else the cleaner would keep running with configs the broker
    no longer has, until the next change."""
    reconfiguring, reconfigured = trio.Event(), []

    class SlowQuotas:
        async def reconfigure(self, config) -> None:
            reconfiguring.set()
            await trio.sleep(0.2)
            reconfigured.append("quotas")

    class Cleaner:
        def reconfigure(self, config) -> None:
            reconfigured.append("cleaner")

    broker.connection_quotas, broker.cleaner = SlowQuotas(), Cleaner()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(incremental, broker, NODE_NAME, [("log.cleaner.backoff.ms", SET, "100")])
            await reconfiguring.wait()
            nursery.cancel_scope.cancel()
    assert broker.dynamic_config.levels[NODE_NAME] == {"log.cleaner.backoff.ms": "100"}
    assert reconfigured == ["quotas", "cleaner"]
