"""``metrics.num.samples`` and ``metrics.sample.window.ms``: the broker's metric config, as Kafka's
``Server.buildMetricsConfig`` makes it for every sensor that sets none of its own.

Checked as Kafka's MetricConfigs defines them (an INT and a LONG, each at
least 1), described by DescribeConfigs as the KafkaConfig keys they are
(listed when unset, Kafka's default, read-only), and used: a broker with 3
samples of 1 s measures the metadata log's append rate, the authorizer's
decision rates and the login rates over at least 2 s, and forgets a
throttle time (client quotas', connection accepts') 3 s after it was
recorded, where Kafka's defaults would take 30 s and 60 s. The client
quotas' own measures keep ``quota.window.num`` and ``quota.window.size.seconds``.
"""

from __future__ import annotations

import logging
import math

import pytest

from broker.acl_model import AclOperation, ResourceType
from broker.config import BrokerConfig, ConfigError
from broker.connection_quotas import ConnectionQuotas
from broker.core import Broker
from broker.topics import TopicRegistry

from ._admin_client import DEFAULT, NODE, STATIC, describe
from ._authz import STANDARD_AUTHORIZER

BROKER_RESOURCE, INT, LONG = 4, 3, 5
T0 = 1_700_000_000_000
SHORT = {"metrics.num.samples": "3", "metrics.sample.window.ms": "1000"}  # at least 2 whole windows of 1 s


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _config(tmp_path, **props: str) -> BrokerConfig:
    base = {"node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "prometheus.port": "0"}
    return BrokerConfig.from_props(base | props)


@pytest.mark.parametrize(("key", "text", "message"), [
    ("metrics.num.samples", "0", "Value must be at least 1"),
    ("metrics.num.samples", "-1", "Value must be at least 1"),
    ("metrics.num.samples", "two", "Not a number of type INT"),
    ("metrics.num.samples", "2147483648", "Not a number of type INT"),
    ("metrics.sample.window.ms", "0", "Value must be at least 1"),
    ("metrics.sample.window.ms", "9223372036854775808", "Not a number of type LONG"),
])  # fmt: skip
def test_the_keys_are_checked_as_kafka_checks_them(tmp_path, key, text, message):
    with pytest.raises(ConfigError, match=f"^Invalid value {text} for configuration {key}: {message}$"):
        _config(tmp_path, **{key: text})


def test_the_keys_are_used_not_warned_about(tmp_path, caplog):
    path = tmp_path / "server.properties"
    path.write_text("metrics.num.samples=5\nmetrics.sample.window.ms=2147483648\n")  # a LONG may pass 2^31
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        config = BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})
    assert (config.metrics_num_samples, config.metrics_sample_window_ms, config.unused) == (5, 2**31, {})
    assert "no effect in minibroker" not in caplog.text


async def test_describe_configs_reports_them_as_kafka_does(tmp_path):
    """Always listed (KafkaConfig keys), INT and LONG, read-only (not among Kafka's dynamic configs); set in
    server.properties: STATIC_BROKER_CONFIG over Kafka's default."""
    for name, props, expected in (
        ("unset", {}, {"metrics.num.samples": ("2", DEFAULT, [("2", DEFAULT)]),
                       "metrics.sample.window.ms": ("30000", DEFAULT, [("30000", DEFAULT)])}),
        ("set", SHORT, {"metrics.num.samples": ("3", STATIC, [("3", STATIC), ("2", DEFAULT)]),
                        "metrics.sample.window.ms": ("1000", STATIC, [("1000", STATIC), ("30000", DEFAULT)])}),
    ):  # fmt: skip
        broker = Broker.open(_config(tmp_path / name, **props))
        try:
            result = await describe(broker, str(NODE), rtype=BROKER_RESOURCE, docs=True)
        finally:
            broker.close()
        configs = {c.name: c for c in result.configs}
        for key, (value, source, synonyms) in expected.items():
            entry = configs[key]
            assert (entry.value, entry.config_source, entry.read_only, entry.is_sensitive) == (value, source, True,
                                                                                               False), key
            assert [(s.value, s.source) for s in entry.synonyms] == synonyms, key
            assert "no effect" not in entry.documentation, key
        assert (configs["metrics.num.samples"].config_type, configs["metrics.sample.window.ms"].config_type) == (
            INT, LONG)  # fmt: skip


def test_rates_and_throttle_times_use_the_configured_windows(tmp_path):
    clock = Clock()
    config = _config(tmp_path, **SHORT, **{"authorizer.class.name": STANDARD_AUTHORIZER})
    broker = Broker(config, TopicRegistry.open(config, clock), clock=clock)
    try:
        value = broker.metrics.registry.get_sample_value
        # the leader-change record of the start: 1 over 2 windows of 1 s (Kafka's defaults: 1 over 30 s)
        assert value("kafka_server_raftmetrics_append_records_rate") == 0.5
        for _ in range(3):
            broker.authorizer.authorize("User:bob", "10.0.0.1", AclOperation.READ, ResourceType.TOPIC, "t",
                                        log_denied=False)  # fmt: skip
        tags = {"config": "authorizer.class.name", "class": "StandardAuthorizer", "role": "broker"}
        assert value("kafka_server_plugins_authorization_denied_rate_per_minute", tags) == 90.0  # 3 in 2 s
        broker.metrics.logins.record("PLAINTEXT", "successful_authentication", clock())
        assert value("kafka_server_socket_server_metrics_successful_authentication_rate",
                     {"listener": "PLAINTEXT"}) == 0.5  # fmt: skip
        broker.quotas.record_throttle("request_percentage", ("bob", "app"), 40.0, clock())
        labels = {"user": "bob", "client_id": "app"}
        clock.now += 2999
        assert value("kafka_server_request_throttle_time", labels) == 40.0
        clock.now += 1  # 3 windows without an event: the sample is purged (Kafka's defaults: 60 s)
        assert math.isnan(value("kafka_server_request_throttle_time", labels))
    finally:
        broker.close()


def test_connection_accept_throttle_times_use_the_configured_windows(tmp_path):
    """The creation rate itself is measured over the quota windows (quota.window.num 2 of 1 s: the third
    connection at once waits 500 ms); the average of the waits over the broker's metric windows."""
    config = _config(tmp_path, **SHORT, **{"max.connection.creation.rate": "2", "quota.window.num": "2"})
    quotas = ConnectionQuotas(config, ["PLAINTEXT"])
    assert [quotas.accept_throttle("PLAINTEXT", 0) for _ in range(3)] == [0, 0, 500]
    waits = {name: samples for name, _doc, _labels, samples in quotas.metric_samples(2999)}
    assert waits["kafka_server_socket_server_metrics_connection_accept_throttle_time"] == [(["PLAINTEXT"], 500.0)]
    waits = {name: samples for name, _doc, _labels, samples in quotas.metric_samples(3000)}
    assert math.isnan(waits["kafka_server_socket_server_metrics_connection_accept_throttle_time"][0][1])
