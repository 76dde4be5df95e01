"""The inter-broker listener as Kafka derives it, and its exemption from the broker-wide connection limits.

Kafka's ``KafkaConfig.interBrokerListenerName``: ``inter.broker.listener.name``,
else the listener named after ``security.inter.broker.protocol`` (PLAINTEXT);
setting both is a config error. ``ConnectionQuotas`` exempts that listener from
``max.connections`` and ``max.connection.creation.rate`` when there are several.
"""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.connection_quotas import ConnectionQuotas
from broker.listeners import inter_broker_listener_name, served_listeners

PAIR = {"listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}  # fmt: skip
WITH_PLAINTEXT = {"listeners": "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                  "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT"}  # fmt: skip
LIMITS = {"max.connections": "1", "max.connection.creation.rate": "1", "quota.window.num": "2"}


def _quotas(props: dict[str, str]) -> tuple[BrokerConfig, ConnectionQuotas]:
    config = BrokerConfig.from_props({**props, **LIMITS})
    return config, ConnectionQuotas(config, [listener.name for listener in served_listeners(config, contexts=False)])


def _open_slots(quotas: ConnectionQuotas, busy: str) -> dict[str, bool]:
    """With the broker-wide one connection taken on ``busy``: which listeners may accept another."""
    assert quotas.admit(busy, "10.0.0.1") is None
    return {name: quotas.slot_available(name) for name in quotas.per_listener}


def _rate_throttled(quotas: ConnectionQuotas) -> dict[str, bool]:
    """Past the broker-wide creation rate of 1/s: which listeners' next connection must wait."""
    return {name: [quotas.accept_throttle(name, 0) for _ in range(3)][-1] > 0 for name in quotas.per_listener}


def test_the_named_listener_is_the_inter_broker_one_and_exempt():
    config, quotas = _quotas({**PAIR, "inter.broker.listener.name": "internal"})
    assert inter_broker_listener_name(config) == quotas.protected == "INTERNAL"
    assert _open_slots(quotas, "EXTERNAL") == {"INTERNAL": True, "EXTERNAL": False}
    assert _rate_throttled(_quotas({**PAIR, "inter.broker.listener.name": "internal"})[1]) == {
        "INTERNAL": False, "EXTERNAL": True}  # fmt: skip


def test_unset_the_plaintext_listener_is_the_inter_broker_one_and_exempt():
    config, quotas = _quotas(WITH_PLAINTEXT)
    assert inter_broker_listener_name(config) == quotas.protected == "PLAINTEXT"
    assert _open_slots(quotas, "EXTERNAL") == {"PLAINTEXT": True, "EXTERNAL": False}
    assert _rate_throttled(_quotas(WITH_PLAINTEXT)[1]) == {"PLAINTEXT": False, "EXTERNAL": True}


def test_unset_without_a_plaintext_listener_none_is_exempt():
    config, quotas = _quotas(PAIR)  # Kafka would refuse this start: its default listener must be advertised
    assert inter_broker_listener_name(config) == "PLAINTEXT" and quotas.protected is None
    assert _open_slots(quotas, "EXTERNAL") == {"INTERNAL": False, "EXTERNAL": False}


def test_a_single_listener_is_not_exempt():
    config = BrokerConfig.from_props({"listeners": "PLAINTEXT://127.0.0.1:0", **LIMITS})
    assert ConnectionQuotas(config, ["PLAINTEXT"]).protected is None  # Kafka: only with several listeners


def test_security_inter_broker_protocol_names_the_listener():
    props = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
             "sasl.mechanism.inter.broker.protocol": "PLAIN", "security.inter.broker.protocol": "SASL_PLAINTEXT"}
    config, quotas = _quotas(props)
    assert inter_broker_listener_name(config) == quotas.protected == "SASL_PLAINTEXT"
    assert _open_slots(quotas, "PLAINTEXT") == {"PLAINTEXT": False, "SASL_PLAINTEXT": True}
    # Kafka's SASL check follows it: the inter-broker mechanism (GSSAPI by default) must be enabled there
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol must be included in "):
        _quotas({**props, "sasl.mechanism.inter.broker.protocol": "GSSAPI"})
    with pytest.raises(ConfigError, match=r"security.inter.broker.protocol: SSL is not one of the listeners"):
        _quotas({**props, "security.inter.broker.protocol": "SSL"})


@pytest.mark.parametrize("value", ["plaintext", "TLS"])
def test_security_inter_broker_protocol_must_be_one_of_kafkas_names(value):
    with pytest.raises(ConfigError, match=f"^Invalid value {value} for configuration security.inter.broker.protocol: "
                                          "String must be one of: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL$"):
        BrokerConfig.from_props({"security.inter.broker.protocol": value})


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_setting_both_keys_is_kafkas_config_error(protocol):
    props = {**WITH_PLAINTEXT, "inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": protocol}
    config = BrokerConfig.from_props(props)  # even set to the default, and agreeing with the name
    message = "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."
    for check in (lambda: served_listeners(config, contexts=False), lambda: ConnectionQuotas(config, ["PLAINTEXT"])):
        with pytest.raises(ConfigError, match=message):
            check()
