"""Dynamic broker configs (``broker/dynamic_config.py``), driven in-process through ``dispatch``.

AlterConfigs / IncrementalAlterConfigs on a BROKER resource at Kafka's two
levels (cluster default ``""``, this node), what DescribeConfigs then reports
(sources 2 and 3, synonyms most specific first), the effect on logs without
a topic override, Kafka's refusals and their messages, and that the levels
survive a restart in ``__broker_configs.json``.
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

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    BROKER, DEFAULT, NODE, OVERRIDE, STATIC, broker, call, configs_of, create_ok, describe, open_broker, produce, req,
    sub,
)  # fmt: skip

DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NODE_NAME = str(NODE)


async def incremental(broker, name: str, ops: list, validate_only=False):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    res = Res(resource_type=BROKER, resource_name=name, configs=entries)
    return (await call(broker, 44, 1, req(44, resources=[res], validate_only=validate_only))).responses[0]


async def alter(broker, name: str, configs: dict, validate_only=False):
    Res = sub(33, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, value=v) for k, v in configs.items()]
    body = req(33, resources=[Res(resource_type=BROKER, resource_name=name, configs=entries)],
               validate_only=validate_only)  # fmt: skip
    return (await call(broker, 33, 2, body)).responses[0]


async def ok(result) -> None:
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, None)


async def broker_entry(broker, key: str):
    return {c.name: c for c in (await describe(broker, NODE_NAME, rtype=BROKER)).configs}[key]


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


def _synonyms(entry) -> list:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


async def test_time_key_synonyms_are_listed_as_kafkas_config_helper_lists_them(tmp_path):
    """Kafka's ConfigHelper.configSynonyms: each place (dynamic node, dynamic default, static, default) in
    turn, the key's family (log.retention.ms, .minutes, .hours) in order within it, leading synonyms of
    other names dropped; log.retention.ms, log.roll.ms ... have no default. With only log.retention.hours
    set, a topic's retention.ms lists no synonym (source DEFAULT_CONFIG) and the broker's log.retention.ms
    is null."""
    b = open_broker(tmp_path, log_retention_hours="24")
    try:
        await create_ok(b, "plain")
        await create_ok(b, "own", configs={"retention.ms": "1000"})
        topic = await configs_of(b, "plain")
        assert (topic["retention.ms"].value, topic["retention.ms"].config_source) == ("86400000", DEFAULT)
        assert [_synonyms(topic[k]) for k in ("retention.ms", "segment.ms", "segment.jitter.ms", "flush.ms")] == [
            [], [], [], []]  # fmt: skip
        own = (await configs_of(b, "own"))["retention.ms"]
        assert (own.config_source, _synonyms(own)) == (OVERRIDE, [("retention.ms", "1000", OVERRIDE)])
        entries = {c.name: c for c in (await describe(b, NODE_NAME, rtype=BROKER)).configs}
        for key in ("log.retention.ms", "log.retention.minutes", "log.roll.ms", "log.roll.jitter.ms",
                    "log.flush.interval.ms"):  # fmt: skip
            assert (entries[key].value, entries[key].config_source, _synonyms(entries[key])) == (None, DEFAULT, [])
        hours = [("log.retention.hours", "24", STATIC), ("log.retention.hours", "168", DEFAULT)]
        assert _synonyms(entries["log.retention.hours"]) == hours
        await ok(await incremental(b, "", [("log.retention.ms", SET, "3600000")]))
        topic = (await configs_of(b, "plain"))["retention.ms"]
        assert (topic.value, topic.config_source) == ("3600000", DYNAMIC_DEFAULT)
        assert _synonyms(topic) == [("log.retention.ms", "3600000", DYNAMIC_DEFAULT), *hours]
        entry = await broker_entry(b, "log.retention.ms")
        assert (entry.value, entry.config_source) == ("3600000", DYNAMIC_DEFAULT)
        assert _synonyms(entry) == [("log.retention.ms", "3600000", DYNAMIC_DEFAULT), *hours]
        assert _synonyms(await broker_entry(b, "log.retention.hours")) == hours
    finally:
        b.close()


async def test_static_per_listener_keys_are_listed_with_their_base_keys_secrets_hidden(tmp_path):
    """Kafka's ConfigHelper lists every key of server.properties: a per-listener key is typed as its base
    key (brokerConfigSynonyms: sasl.jaas.config for plain.sasl.jaas.config), followed by the base key's
    synonyms, read-only (no prefixed name is in AllDynamicConfigs), a PASSWORD never shown."""
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="pw-in-clear";'
    props = {"node.id": NODE_NAME, "log.dirs": str(tmp_path / "data"), "prometheus.port": "0",
             "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
             "security.inter.broker.protocol": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
             "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        await ok(await incremental(b, NODE_NAME, [("listener.name.sasl_plaintext.max.connections", SET, "7")]))
        await ok(await incremental(b, "", [("max.connections", SET, "60")]))
        entries = {c.name: c for c in (await describe(b, NODE_NAME, rtype=BROKER)).configs}
    finally:
        b.close()
    secret = entries["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert (secret.value, secret.is_sensitive, secret.config_type, secret.read_only, secret.config_source) == (
        None, True, 9, True, STATIC)  # fmt: skip
    assert _synonyms(secret) == [("listener.name.sasl_plaintext.plain.sasl.jaas.config", None, STATIC)]
    mechanisms = entries["listener.name.sasl_plaintext.sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.is_sensitive, mechanisms.config_type, mechanisms.read_only) == (
        "PLAIN", False, 7, True)  # fmt: skip
    assert _synonyms(mechanisms) == [("listener.name.sasl_plaintext.sasl.enabled.mechanisms", "PLAIN", STATIC),
                                     ("sasl.enabled.mechanisms", "PLAIN", STATIC),
                                     ("sasl.enabled.mechanisms", "GSSAPI", DEFAULT)]  # fmt: skip
    limit = entries["listener.name.sasl_plaintext.max.connections"]
    assert (limit.value, limit.config_type, limit.read_only) == ("7", 3, True)
    assert _synonyms(limit) == [("listener.name.sasl_plaintext.max.connections", "7", DYNAMIC_BROKER),
                                ("max.connections", "60", DYNAMIC_DEFAULT),
                                ("max.connections", str(2**31 - 1), DEFAULT)]  # fmt: skip
