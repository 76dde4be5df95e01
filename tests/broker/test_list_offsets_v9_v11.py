"""ListOffsets v9-v11 and the timestamps each version may send, driven through ``dispatch``.

v9 brings -5 (latest tiered, KIP-1005), v10 ``timeout_ms`` (KIP-1075), v11
-6 (earliest pending upload, KIP-1023). Without tiered storage Kafka answers
both with offset -1, timestamp -1 and leader epoch -1, and no error. A
negative timestamp a version does not know is UNSUPPORTED_VERSION with
offset and timestamp -1 (Kafka's ``isListOffsetsTimestampUnsupported``);
v0 refuses anything below -2 the same way.
"""

from __future__ import annotations

import pytest

from broker.dispatch import REGISTRY
from broker.handlers.list_offsets import TIMESTAMP_MIN_VERSION, timestamp_unsupported
from protocol import API_BY_KEY, ErrorCode, decode_body, encode_body

from ._admin_client import broker, call, create_ok, delete_records, now_ms, produce, req, sub  # noqa: F401
from .test_offset_handlers import list_offsets, list_one

NONE, UNSUPPORTED = ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION
NOT_FOUND = (NONE, -1, -1, -1)  # (error, timestamp, offset, leader_epoch)


def test_versions_and_the_timestamps_they_bring():
    assert API_BY_KEY[2].versions == (0, 11) and (REGISTRY[2].min_version, REGISTRY[2].max_version) == (0, 11)
    assert TIMESTAMP_MIN_VERSION == {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}
    assert [v for v in range(12) if not timestamp_unsupported(-5, v)] == [9, 10, 11]
    assert [v for v in range(12) if not timestamp_unsupported(-6, v)] == [11]
    assert all(timestamp_unsupported(-7, v) for v in range(12))
    assert not any(timestamp_unsupported(ts, v) for ts in (0, 5, 2**62) for v in range(12))
    assert [ts for ts in range(-7, 0) if not timestamp_unsupported(ts, 0)] == [-2, -1]


@pytest.mark.parametrize("version", [9, 10, 11])
async def test_latest_tiered_is_not_found_without_tiered_storage(broker, version):
    await create_ok(broker, "tiered", 2)
    await produce(broker, "tiered", [now_ms()] * 4)
    await delete_records(broker, "tiered", {0: 2})
    assert await list_one(broker, "tiered", 0, -5, version) == NOT_FOUND
    assert await list_one(broker, "tiered", 1, -5, version) == NOT_FOUND  # empty partition: the same
    assert await list_one(broker, "tiered", 0, -1, version) == (NONE, -1, 4, 0)
    assert await list_one(broker, "tiered", 0, -4, version) == (NONE, -1, 2, 0)


async def test_earliest_pending_upload_is_v11_and_not_found(broker):
    await create_ok(broker, "pending")
    await produce(broker, "pending", [now_ms()] * 3)
    assert await list_one(broker, "pending", 0, -6, 11) == NOT_FOUND
    for version in (9, 10):
        assert await list_one(broker, "pending", 0, -6, version) == (UNSUPPORTED, -1, -1, -1)


@pytest.mark.parametrize("version, timestamp", [(8, -5), (1, -3), (6, -3), (7, -4), (5, -4), (11, -7), (4, -100)])
async def test_a_timestamp_the_version_does_not_know_is_unsupported(broker, version, timestamp):
    await create_ok(broker, "old")
    await produce(broker, "old", [now_ms()] * 3)
    epoch = -1  # never set on an error, and absent before v4
    assert await list_one(broker, "old", 0, timestamp, version) == (UNSUPPORTED, -1, -1, epoch)


async def test_unsupported_comes_after_duplicates_and_before_unknown_partitions(broker):
    await create_ok(broker, "order", 2)
    got = await list_offsets(broker, "order", [(0, -5), (0, -1), (1, -5), (8, -5), (9, -1)], 8)
    assert [p.error_code for p in got] == [
        ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, UNSUPPORTED, UNSUPPORTED,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]  # fmt: skip
    ghost = await list_offsets(broker, "ghost", [(0, -5)], 8)
    assert ghost[0].error_code == UNSUPPORTED


async def test_v0_refuses_timestamps_below_earliest(broker):
    await create_ok(broker, "legacy0")
    await produce(broker, "legacy0", [now_ms()] * 2)
    got = await list_offsets(broker, "legacy0", [(0, -3, 5), (0, -5, 5), (0, -1, 5)], 0)
    assert [(p.error_code, p.old_style_offsets) for p in got] == [(UNSUPPORTED, []), (UNSUPPORTED, []), (NONE, [2, 0])]


def _timed_request():
    T = sub(2, "ListOffsetsTopic")
    parts = [T.ListOffsetsPartition(partition_index=i, timestamp=ts) for i, ts in ((0, -1), (1, -5))]
    return req(2, replica_id=-1, timeout_ms=30_000, topics=[T(name="timed", partitions=parts)])


def test_timeout_ms_is_on_the_wire_from_v10():
    body, api = _timed_request(), API_BY_KEY[2]
    assert decode_body(api, 10, encode_body(api, 10, body, True), True).timeout_ms == 30_000
    assert decode_body(api, 9, encode_body(api, 9, body, True), True).timeout_ms == 0  # absent before v10
    assert len(encode_body(api, 10, body, True)) == len(encode_body(api, 9, body, True)) + 4


@pytest.mark.parametrize("version", [10, 11])
async def test_timeout_ms_is_read_and_the_answer_is_immediate(broker, version):
    await create_ok(broker, "timed", 2)
    await produce(broker, "timed", [now_ms()] * 2)
    resp = await call(broker, 2, version, _timed_request(), timeout=2)
    got = [(p.partition_index, p.error_code, p.offset) for p in resp.topics[0].partitions]
    assert got == [(0, NONE, 2), (1, NONE, -1)]
