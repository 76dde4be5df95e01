"""The broker's ``fetch.max.bytes`` (KIP-541), driven in-process through ``dispatch``.

Kafka's ``handleFetchRequest`` reads at most ``min(request max_bytes,
fetch.max.bytes, the quota window)`` for every Fetch (a follower's too: only
the quota cap is skipped for it) and caps ``min_bytes`` at that; the first
batch still goes out whole (KIP-74). The key is Kafka's: default 55 MiB, at
least 1024, read only at startup (DescribeConfigs says read-only; a dynamic
change is refused).
"""

from __future__ import annotations

import pytest
import trio

from broker.config import BrokerConfig, ConfigError
from protocol import ErrorCode

from ._admin_client import BROKER, DEFAULT, NODE, STATIC, call, create_ok, describe, open_broker, produce, req, sub
from .test_fetch_rules import BIG, batches, by_partition, fetch_body, produce_big

CAP = 1024


@pytest.fixture
def capped(tmp_path):
    b = open_broker(tmp_path, fetch_max_bytes=str(CAP))
    yield b
    b.close()


async def _many_batches(broker, topic: str) -> None:
    await create_ok(broker, topic)
    for _ in range(40):
        await produce(broker, topic, [1, 2, 3])


@pytest.mark.parametrize("version", [4, 12])
async def test_a_fetch_gets_at_most_the_brokers_cap(capped, version):
    await _many_batches(capped, "many")
    p = by_partition(await call(capped, 1, version, fetch_body({"many": {0: 0}}, max_bytes=1 << 20)))["many", 0]
    assert p.error_code == ErrorCode.NONE and len(p.records) == CAP  # cut at the cap, not at max_bytes
    smaller = by_partition(await call(capped, 1, version, fetch_body({"many": {0: 0}}, max_bytes=600)))["many", 0]
    assert len(smaller.records) == 600  # a smaller max_bytes still rules


async def test_the_first_batch_goes_whole_above_the_cap(capped):
    await create_ok(capped, "big", partitions=2)
    await produce_big(capped, "big", 0)
    await produce(capped, "big", [1], partition=1)
    got = by_partition(await call(capped, 1, 12, fetch_body({"big": {0: 0, 1: 0}}, max_bytes=1 << 20)))
    assert len(batches(got["big", 0])) == 1 and len(got["big", 0].records) > BIG
    assert not got["big", 1].records  # nothing left of the cap for the next partition


async def test_a_followers_fetch_is_capped_too(capped):
    await _many_batches(capped, "rep")
    body = fetch_body({"rep": {0: 0}}, max_bytes=1 << 20)
    body.replica_id = NODE + 1
    assert len(by_partition(await call(capped, 1, 12, body))["rep", 0].records) == CAP


async def test_min_bytes_is_capped_at_the_brokers_cap(capped):
    await _many_batches(capped, "mb")
    with trio.fail_after(5):
        start = trio.current_time()
        body = fetch_body({"mb": {0: 0}}, min_bytes=10_000, max_bytes=1 << 20, max_wait_ms=3000)
        p = by_partition(await call(capped, 1, 12, body))["mb", 0]
        assert trio.current_time() - start < 2 and len(p.records) == CAP  # fetchMinBytes: never above the cap


async def test_the_key_is_described_read_only_and_refused_dynamically(capped, tmp_path):
    entry = {c.name: c for c in (await describe(capped, str(NODE), rtype=BROKER)).configs}["fetch.max.bytes"]
    assert (entry.value, entry.config_source, entry.read_only, entry.config_type) == (str(CAP), STATIC, True, 3)
    assert [(s.value, s.source) for s in entry.synonyms] == [(str(CAP), STATIC), (str(55 << 20), DEFAULT)]
    Res = sub(44, "AlterConfigsResource")
    change = Res(resource_type=BROKER, resource_name=str(NODE),
                 configs=[Res.AlterableConfig(name="fetch.max.bytes", config_operation=0, value="2048")])  # fmt: skip
    result = (await call(capped, 44, 1, req(44, resources=[change], validate_only=False))).responses[0]
    assert result.error_code == ErrorCode.INVALID_REQUEST
    assert result.error_message == "Cannot update these configs dynamically: Set(fetch.max.bytes)"


def test_the_default_is_55_mib_and_the_minimum_1024():
    assert BrokerConfig.from_props({}).fetch_max_bytes == 55 * 1024 * 1024
    assert BrokerConfig.from_props({"fetch.max.bytes": "1024"}).fetch_max_bytes == 1024
    with pytest.raises(ConfigError, match="fetch.max.bytes"):
        BrokerConfig.from_props({"fetch.max.bytes": "1023"})
