"""Keys Kafka defines that do nothing on this broker: accepted with a warning, described when set, refused
dynamically as Kafka refuses (or as this broker chooses for those Kafka changes at runtime). A key neither
ours nor Kafka's still stops the start."""

from __future__ import annotations

import logging

import pytest

from broker.config import BROKER_KEYS, OLDER_NAMES, LISTENER_PREFIX, BrokerConfig, ConfigError
from broker.kafka_keys import KAFKA_DYNAMIC, KAFKA_KEYS
from protocol import ErrorCode
from storage.config import is_storage_key

from ._admin_client import BROKER, NODE, STATIC, call, describe, open_broker, req, sub

SET = 0
# Keys a Kafka 3.x server.properties (ZooKeeper or KRaft era) or a compose file commonly carries.
KAFKA_3_KEYS = {
    "num.replica.fetchers": "2", "auto.leader.rebalance.enable": "true", "replica.lag.time.max.ms": "30000",
    "replica.fetch.max.bytes": "1048576", "replica.socket.timeout.ms": "30000", "background.threads": "10",
    "queued.max.requests": "500", "metric.reporters": "", "kafka.metrics.reporters": "",
    "metadata.log.dir": "/tmp/meta", "leader.imbalance.check.interval.seconds": "300",
    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required password="s3cret";',
    "controller.quorum.election.timeout.ms": "1000", "request.timeout.ms": "30000",
    "zookeeper.connect": "localhost:2181", "zookeeper.connection.timeout.ms": "18000",
}  # fmt: skip


def test_the_list_holds_only_keys_we_do_not_declare():
    ours = {k.name for k in BROKER_KEYS} | OLDER_NAMES
    assert not [name for name in KAFKA_KEYS if name in ours or is_storage_key(name) or name.startswith(LISTENER_PREFIX)]
    assert KAFKA_DYNAMIC <= KAFKA_KEYS.keys()
    assert {kind for kind, _ in KAFKA_KEYS.values()} <= {"INT", "SHORT", "LONG", "DOUBLE", "BOOLEAN", "STRING",
                                                          "LIST", "CLASS", "PASSWORD"}  # fmt: skip
    assert len(KAFKA_KEYS) > 150 and set(KAFKA_3_KEYS) <= KAFKA_KEYS.keys()


def test_kafka_keys_are_accepted_and_each_is_warned_about_once(tmp_path, caplog):
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in KAFKA_3_KEYS.items()) + "broker.rack=r1\nnum.partitions=2\n")
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        config = BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})
    assert (config.num_partitions, config.broker_rack, config.unused) == (2, "r1", KAFKA_3_KEYS)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for name in KAFKA_3_KEYS:
        assert len([m for m in warned if m.startswith(f"{name} ") and "no effect in minibroker" in m]) == 1
    assert not [m for m in warned if "broker.rack" in m or "num.partitions" in m]  # ours: used, not warned about
    assert "s3cret" not in caplog.text


@pytest.mark.parametrize(("props", "named"), [
    ({"num.replica.fetcher": "2"}, "num.replica.fetcher: unknown configuration key"),  # a typo
    ({"zookeeper.conect": "localhost:2181"}, "zookeeper.conect: unknown configuration key"),
    ({"num.replica.fetchers": "two"}, "Invalid value two for configuration num.replica.fetchers: Not a number of type INT"),
    ({"auto.leader.rebalance.enable": "yes"},
     "Invalid value yes for configuration auto.leader.rebalance.enable: Expected value to be either true or false"),
    ({"offsets.commit.required.acks": "40000"}, "Not a number of type SHORT"),
    # plugins that enforce or map principals: running without them would allow what they refuse
    ({"create.topic.policy.class.name": "com.acme.Policy"},
     "Invalid value com.acme.Policy for configuration create.topic.policy.class.name: a Java plugin"),
    ({"alter.config.policy.class.name": "com.acme.P"}, "configuration alter.config.policy.class.name: a Java plugin"),
    ({"client.quota.callback.class": "com.acme.Q"}, "configuration client.quota.callback.class: a Java plugin"),
    ({"principal.builder.class": "com.acme.B"}, "configuration principal.builder.class: a Java plugin"),
    # Kafka's broker builds its MetricConfig at startup with RecordingLevel.forName: an unknown level stops it
    ({"metrics.recording.level": "VERBOSE"}, "Invalid value VERBOSE for configuration metrics.recording.level: "
     "String must be one of (case insensitive): INFO, DEBUG, TRACE"),
])  # fmt: skip
def test_a_typo_or_a_value_kafka_cannot_parse_stops_the_start(tmp_path, props, named):
    path = tmp_path / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace(")", r"\)")):
        BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})


def test_a_recording_level_is_accepted_in_any_case_and_said_to_change_no_metric(tmp_path, caplog):
    """Kafka records no broker sensor at DEBUG or TRACE level (only clients and Streams do), nor does this
    broker: every level leaves the metrics as they are, and the warning says why."""
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        for level in ("INFO", "debug", "Trace"):
            config = BrokerConfig.load(None, {"log.dirs": str(tmp_path / "data"), "metrics.recording.level": level})
            assert config.unused == {"metrics.recording.level": level}
    assert "no metric is recorded at DEBUG or TRACE level" in KAFKA_KEYS["metrics.recording.level"][1]
    assert "no metric is recorded at DEBUG or TRACE level" in caplog.text


async def test_describe_configs_lists_the_kafka_keys_set_as_static_read_only_passwords_hidden(tmp_path):
    broker = open_broker(tmp_path, num_replica_fetchers="4", sasl_jaas_config=KAFKA_3_KEYS["sasl.jaas.config"],
                         zookeeper_connect="zk:2181")  # fmt: skip
    try:
        result = await describe(broker, str(NODE), rtype=BROKER, docs=True)
        configs = {c.name: c for c in result.configs}
        fetchers, jaas, zk = configs["num.replica.fetchers"], configs["sasl.jaas.config"], configs["zookeeper.connect"]
        assert (fetchers.value, fetchers.config_source, fetchers.read_only, fetchers.is_sensitive) == ("4", STATIC,
                                                                                                        True, False)
        assert (fetchers.config_type, zk.config_type, jaas.config_type) == (3, 2, 9)  # INT, STRING, PASSWORD
        assert [(s.name, s.value, s.source) for s in fetchers.synonyms] == [("num.replica.fetchers", "4", STATIC)]
        assert (jaas.value, jaas.is_sensitive, [s.value for s in jaas.synonyms]) == (None, True, [None])
        assert "no effect" in fetchers.documentation
        assert "background.threads" not in configs  # not set: not listed
    finally:
        broker.close()


async def incremental(broker, level: str, ops: list):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=SET, value=v) for k, v in ops]
    body = req(44, resources=[Res(resource_type=BROKER, resource_name=level, configs=entries)], validate_only=False)
    return (await call(broker, 44, 1, body)).responses[0]


@pytest.mark.parametrize(("ops", "message"), [
    ([("auto.leader.rebalance.enable", "false"), ("zookeeper.connect", "zk:2181")],
     "Cannot update these configs dynamically: Set(auto.leader.rebalance.enable, zookeeper.connect)"),
    ([("broker.rack", "r2")], "Cannot update these configs dynamically: Set(broker.rack)"),
    ([("num.replica.fetchers", "2"), ("metric.reporters", "")],
     "These configs have no effect on this broker and are not changed dynamically: "
     "Set(metric.reporters, num.replica.fetchers)"),
])  # fmt: skip
async def test_dynamic_changes_of_kafka_keys_are_refused(tmp_path, ops, message):
    broker = open_broker(tmp_path)
    try:
        for level in ("", str(NODE)):
            result = await incremental(broker, level, ops)
            assert (result.error_code, result.error_message) == (ErrorCode.INVALID_REQUEST, message)
        assert broker.dynamic_config.levels == {"": {}, str(NODE): {}}
    finally:
        broker.close()


def test_kafkas_default_principal_builder_spelled_out_is_accepted(tmp_path):
    """A file that spells out Kafka's default principal builder asks for what this broker does: no refusal."""
    path = tmp_path / "server.properties"
    path.write_text("principal.builder.class=org.apache.kafka.common.security.authenticator."
                    "DefaultKafkaPrincipalBuilder\n")  # fmt: skip
    config = BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})
    assert "principal.builder.class" in config.unused


@pytest.mark.parametrize(("key", "replacement"), [
    ("port", "use listeners)"), ("host.name", "use listeners)"), ("advertised.port", "use advertised.listeners)"),
    ("advertised.host.name", "use advertised.listeners)"), ("replica.lag.max.messages", "use replica.lag.time.max.ms)"),
    ("quota.producer.default", "--entity-type clients --entity-default --add-config producer_byte_rate="),
    ("quota.consumer.default", "--entity-type clients --entity-default --add-config consumer_byte_rate="),
])  # fmt: skip
def test_a_key_kafka_removed_still_stops_the_start_and_names_what_replaced_it(tmp_path, key, replacement):
    path = tmp_path / "server.properties"
    path.write_text(f"{key}=9092\n")
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})
    assert str(refused.value).startswith(f"{key}: unknown configuration key (Kafka removed it; use ")
    assert replacement in str(refused.value)
