"""Kafka's tiered-storage topic configs are accepted and described, with no effect here.

Kafka's ``LogConfig`` defines ``remote.storage.enable``, ``local.retention.ms``,
``local.retention.bytes``, ``remote.log.copy.disable`` and
``remote.log.delete.on.disable``; a client may set them on any broker. With
the tiered storage system disabled (as here, always) Kafka refuses only
``remote.storage.enable=true``, with INVALID_CONFIG and its ConfigException
message; ``local.retention.*`` are LONGs at least -2 (-2: follow
``retention.*``) with the broker defaults ``log.local.retention.*``; the
other two have no broker default, so no DEFAULT_CONFIG synonym.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    DEFAULT, OVERRIDE, STATIC, broker, configs_of, create, create_ok, creatable, open_broker,
)  # fmt: skip
from .test_config_handlers import SET, incremental, overrides

REFUSED = "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."
KEYS = ("remote.storage.enable", "local.retention.ms", "local.retention.bytes", "remote.log.copy.disable",
        "remote.log.delete.on.disable")  # fmt: skip


def _synonyms(entry) -> list[tuple[str, str, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


async def test_described_with_kafkas_defaults_and_synonyms(broker):
    await create_ok(broker, "plain")
    entries = await configs_of(broker, "plain")
    shown = {k: (entries[k].value, entries[k].config_source) for k in KEYS}
    assert shown == {
        "remote.storage.enable": ("false", DEFAULT), "local.retention.ms": ("-2", DEFAULT),
        "local.retention.bytes": ("-2", DEFAULT), "remote.log.copy.disable": ("false", DEFAULT),
        "remote.log.delete.on.disable": ("false", DEFAULT),
    }  # fmt: skip
    assert _synonyms(entries["local.retention.ms"]) == [("log.local.retention.ms", "-2", DEFAULT)]
    assert _synonyms(entries["local.retention.bytes"]) == [("log.local.retention.bytes", "-2", DEFAULT)]
    assert _synonyms(entries["remote.storage.enable"]) == []


async def test_accepted_at_creation_and_by_alter_configs(broker):
    configs = {"remote.storage.enable": "false", "local.retention.ms": "60000", "local.retention.bytes": "-1",
               "remote.log.copy.disable": "true", "remote.log.delete.on.disable": "true"}  # fmt: skip
    await create_ok(broker, "tiered", configs=configs)
    entries = await configs_of(broker, "tiered")
    assert {k: (entries[k].value, entries[k].config_source) for k in KEYS} == {
        k: (v, OVERRIDE) for k, v in configs.items()
    }
    done = await incremental(broker, "tiered", [("local.retention.bytes", SET, "1000")])
    assert done.error_code == ErrorCode.NONE, done.error_message
    assert overrides(broker, "tiered")["local.retention.bytes"] == "1000"


async def test_remote_storage_enable_true_is_refused_as_kafka_refuses_it(broker):
    made = (await create(broker, creatable("remote", configs={"remote.storage.enable": "true"})))["remote"]
    assert (made.error_code, made.error_message) == (ErrorCode.INVALID_CONFIG, REFUSED)
    await create_ok(broker, "local")
    altered = await incremental(broker, "local", [("remote.storage.enable", SET, "true")])
    assert (altered.error_code, altered.error_message) == (ErrorCode.INVALID_CONFIG, REFUSED)
    assert overrides(broker, "local") == {}


@pytest.mark.parametrize("key, text, reason", [
    ("local.retention.ms", "-3", "Value must be at least -2"),
    ("local.retention.bytes", "lots", "Not a number of type LONG"),
    ("remote.log.copy.disable", "maybe", "Expected value to be either true or false"),
])  # fmt: skip
async def test_bad_values_carry_kafkas_message(broker, key, text, reason):
    made = (await create(broker, creatable("bad", configs={key: text})))["bad"]
    message = f"Invalid value {text} for configuration {key}: {reason}"
    assert (made.error_code, made.error_message) == (ErrorCode.INVALID_CONFIG, message)


async def test_the_broker_default_of_local_retention(tmp_path):
    b = open_broker(tmp_path, log_local_retention_ms="5000")
    try:
        await create_ok(b, "t")
        entry = (await configs_of(b, "t"))["local.retention.ms"]
        assert (entry.value, entry.config_source) == ("5000", STATIC)
        assert _synonyms(entry) == [("log.local.retention.ms", "5000", STATIC), ("log.local.retention.ms", "-2", DEFAULT)]
    finally:
        b.close()
