"""Synonym lists of DescribeConfigs as Kafka's ``ConfigHelper.configSynonyms`` builds them.

Time keys (``log.retention.ms``, ``.minutes``, ``.hours``; ``log.roll.*``)
listed per place (dynamic node, dynamic default, static, default) in family
order, with no synonyms for a topic key that only a longer unit sets; and
per-listener keys of ``server.properties`` typed as their base keys, listed
with the base key's synonyms, read-only, secrets never shown.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.core import Broker

from ._admin_client import BROKER, DEFAULT, OVERRIDE, STATIC, configs_of, create_ok, describe, open_broker
from ._dynamic_configs import DYNAMIC_BROKER, DYNAMIC_DEFAULT, NODE_NAME, SET, broker_entry, incremental, ok


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
