"""The offset and cluster handlers, driven in-process through ``dispatch``.

DeleteRecords, DescribeCluster, OffsetForLeaderEpoch and ListOffsets (v0's
old-style offsets included) against a real broker and storage (see
``_admin_client``), with records written through the Produce handler.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    NODE, broker, call, create_ok, delete_records, now_ms, produce, req, sub,
)  # fmt: skip


# -- DeleteRecords ---------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 3))
async def test_delete_records(broker, version):
    await create_ok(broker, "trim", 2)
    await produce(broker, "trim", [now_ms()] * 5)
    await produce(broker, "trim", [now_ms()] * 2, partition=1)
    got = await delete_records(broker, "trim", {0: 3, 1: -1, 7: 0}, version)
    assert got == {0: (ErrorCode.NONE, 3), 1: (ErrorCode.NONE, 2), 7: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}
    assert broker.topics.partition("trim", 0).log.log_start_offset == 3
    assert await delete_records(broker, "trim", {0: 1}, version) == {0: (ErrorCode.NONE, 3)}  # never backwards
    assert await delete_records(broker, "trim", {0: 6}, version) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert await delete_records(broker, "trim", {0: -5}, version) == {0: (ErrorCode.OFFSET_OUT_OF_RANGE, -1)}
    assert await delete_records(broker, "nope", {0: 0}, version) == {0: (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1)}


async def test_delete_records_internal_topic_is_refused(broker):
    got = await delete_records(broker, "__consumer_offsets", {0: 0})
    assert got == {0: (ErrorCode.INVALID_TOPIC_EXCEPTION, -1)}


async def test_delete_records_compacted_topic_is_policy_violation(broker):
    await create_ok(broker, "compact-only", configs={"cleanup.policy": "compact"})
    await produce(broker, "compact-only", [now_ms()] * 2)
    assert await delete_records(broker, "compact-only", {0: 1}) == {0: (ErrorCode.POLICY_VIOLATION, -1)}


# -- DescribeCluster -------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 3))
async def test_describe_cluster(broker, version):
    resp = await call(broker, 60, version, req(60, include_cluster_authorized_operations=True))
    assert resp.error_code == ErrorCode.NONE and resp.cluster_id == broker.cluster_id and resp.cluster_id
    assert resp.controller_id == NODE
    assert [(b.broker_id, b.host, b.port, b.rack) for b in resp.brokers] == [(NODE, "127.0.0.1", 9999, None)]
    assert resp.cluster_authorized_operations & (1 << 8)  # DESCRIBE
    plain = await call(broker, 60, version, req(60))
    assert plain.cluster_authorized_operations == -(2**31)


@pytest.mark.parametrize("version", [1, 2])
async def test_describe_cluster_controller_endpoint_is_mismatched(broker, version):
    resp = await call(broker, 60, version, req(60, endpoint_type=2, include_fenced_brokers=True))
    assert resp.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE and resp.brokers == []


@pytest.mark.parametrize("fenced_too", [False, True])
async def test_describe_cluster_v2_this_broker_is_never_fenced(broker, fenced_too):
    """KIP-1073: fenced brokers only when asked for; the one broker here is registered and unfenced."""
    resp = await call(broker, 60, 2, req(60, include_fenced_brokers=fenced_too))
    assert [(b.broker_id, b.is_fenced) for b in resp.brokers] == [(NODE, False)]


# -- OffsetForLeaderEpoch --------------------------------------------------------------


async def epoch_end(broker, topic: str, partition: int, epoch: int, current: int = -1, version: int = 4):
    T = sub(23, "OffsetForLeaderTopic")
    p = T.OffsetForLeaderPartition(partition=partition, current_leader_epoch=current, leader_epoch=epoch)
    resp = await call(broker, 23, version, req(23, replica_id=-1, topics=[T(topic=topic, partitions=[p])]))
    r = resp.topics[0].partitions[0]
    return r.error_code, r.leader_epoch, r.end_offset


@pytest.mark.parametrize("version", range(0, 5))
async def test_offset_for_leader_epoch(broker, version):
    await create_ok(broker, "epochs")
    await produce(broker, "epochs", [now_ms()] * 4)
    await delete_records(broker, "epochs", {0: 1})
    epoch = 0 if version >= 1 else -1  # v0 answers carry no leader_epoch
    assert await epoch_end(broker, "epochs", 0, 0, version=version) == (0, epoch, 4)
    assert await epoch_end(broker, "epochs", 0, 1, version=version) == (0, -1, -1)
    assert await epoch_end(broker, "epochs", 0, -1, version=version) == (0, -1, -1)
    assert (await epoch_end(broker, "epochs", 0, -5, version=version))[2] == 1  # log start offset
    assert (await epoch_end(broker, "epochs", 3, 0, version=version))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await epoch_end(broker, "nope", 0, 0, version=version))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_offset_for_leader_epoch_current_epoch_checks(broker):
    await create_ok(broker, "epochs")
    assert (await epoch_end(broker, "epochs", 0, 0, current=0))[0] == ErrorCode.NONE
    assert (await epoch_end(broker, "epochs", 0, 0, current=1))[0] == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert (await epoch_end(broker, "epochs", 0, 0, current=-3))[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert (await epoch_end(broker, "epochs", 0, 0, current=5, version=1))[0] == ErrorCode.NONE  # not sent < v2


# -- ListOffsets -----------------------------------------------------------------------


async def list_offsets(broker, topic: str, specs: list, version: int = 8, replica_id=-1, isolation=0):
    """``specs``: (partition, timestamp[, current_leader_epoch or max_num_offsets for v0])."""
    T = sub(2, "ListOffsetsTopic")
    parts = []
    for partition, timestamp, *extra in specs:
        p = T.ListOffsetsPartition(partition_index=partition, timestamp=timestamp)
        if extra and version == 0:
            p.max_num_offsets = extra[0]
        elif extra:
            p.current_leader_epoch = extra[0]
        parts.append(p)
    body = req(2, replica_id=replica_id, isolation_level=isolation, topics=[T(name=topic, partitions=parts)])
    return (await call(broker, 2, version, body)).topics[0].partitions


async def list_one(broker, topic: str, partition: int, timestamp: int, version: int = 8, **kw):
    """One partition per request: Kafka refuses a partition listed twice."""
    p = (await list_offsets(broker, topic, [(partition, timestamp)], version, **kw))[0]
    return p.error_code, p.timestamp, p.offset, p.leader_epoch


@pytest.mark.parametrize("version", range(1, 9))
async def test_list_offsets_special_timestamps(broker, version):
    await create_ok(broker, "lo", 2)
    base = now_ms() - 60_000
    await produce(broker, "lo", [base, base + 10, base + 30, base + 20])
    await delete_records(broker, "lo", {0: 1})
    epoch = 0 if version >= 4 else -1  # leader_epoch is v4+
    assert await list_one(broker, "lo", 0, -1, version) == (0, -1, 4, epoch)
    assert await list_one(broker, "lo", 0, -2, version) == (0, -1, 1, epoch)
    assert await list_one(broker, "lo", 1, -1, version) == (0, -1, 0, epoch)
    assert await list_one(broker, "lo", 1, -2, version) == (0, -1, 0, epoch)
    assert (await list_one(broker, "lo", 5, -1, version))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await list_one(broker, "nope", 0, -1, version))[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    both = await list_offsets(broker, "lo", [(0, -1), (1, -2)], version)
    assert [(p.partition_index, p.offset) for p in both] == [(0, 4), (1, 0)]


@pytest.mark.parametrize("version", [1, 4, 8])
async def test_list_offsets_by_timestamp(broker, version):
    await create_ok(broker, "times")
    base = now_ms() - 60_000
    await produce(broker, "times", [base, base + 10, base + 30, base + 20])
    epoch = 0 if version >= 4 else -1
    assert await list_one(broker, "times", 0, base + 5, version) == (0, base + 10, 1, epoch)
    assert await list_one(broker, "times", 0, base + 30, version) == (0, base + 30, 2, epoch)
    assert await list_one(broker, "times", 0, base + 31, version) == (0, -1, -1, -1)
    assert await list_one(broker, "times", 0, 0, version) == (0, base, 0, epoch)


async def test_list_offsets_max_timestamp(broker):
    await create_ok(broker, "maxts")
    assert await list_one(broker, "maxts", 0, -3, 7) == (0, -1, -1, -1)  # nothing found: no epoch
    base = now_ms() - 60_000
    await produce(broker, "maxts", [base, base + 30, base + 10])
    await produce(broker, "maxts", [base + 20])
    assert await list_one(broker, "maxts", 0, -3, 7) == (0, base + 30, 1, 0)


async def test_list_offsets_errors(broker):
    await create_ok(broker, "errs", 2)
    dup = await list_offsets(broker, "errs", [(0, -1), (0, -2)], 5)
    assert [p.error_code for p in dup] == [ErrorCode.INVALID_REQUEST] * 2
    epochs = await list_offsets(broker, "errs", [(0, -1, 1), (1, -2, -4)], 4)
    assert [p.error_code for p in epochs] == [ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH]
    ok = await list_offsets(broker, "errs", [(0, -1, 0)], 4)
    assert ok[0].error_code == ErrorCode.NONE


async def test_list_offsets_read_committed_and_debug_replica(broker):
    await create_ok(broker, "iso")
    await produce(broker, "iso", [now_ms()] * 3)
    assert await list_one(broker, "iso", 0, -1, 2, isolation=1) == (0, -1, 3, -1)
    assert await list_one(broker, "iso", 0, -1, 2, replica_id=-2) == (0, -1, 3, -1)


async def test_list_offsets_v0_old_style(broker):
    await create_ok(broker, "legacy")
    empty = await list_offsets(broker, "legacy", [(0, -1, 5), (0, -2, 5)], 0)
    assert [p.old_style_offsets for p in empty] == [[0], [0]]
    await produce(broker, "legacy", [now_ms()] * 3)
    got = await list_offsets(broker, "legacy", [(0, -1, 5), (0, -2, 1), (0, -1, 1), (0, 0, 5)], 0)
    assert [p.old_style_offsets for p in got] == [[3, 0], [0], [3], []]
    missing = await list_offsets(broker, "nope", [(0, -1, 1)], 0)
    assert (missing[0].error_code, missing[0].old_style_offsets) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


async def test_list_offsets_v0_negative_max_num_offsets_is_a_server_error(broker):
    """Kafka sizes its answer array by ``min(max_num_offsets, found)``: a negative count throws
    (NegativeArraySizeException), answered UNKNOWN_SERVER_ERROR; 0 is an empty answer."""
    await create_ok(broker, "legacy")
    await produce(broker, "legacy", [now_ms()] * 3)
    got = await list_offsets(broker, "legacy", [(0, -1, -1), (0, 0, -5), (0, -1, 0)], 0)
    assert [(p.error_code, p.old_style_offsets) for p in got] == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, []), (ErrorCode.UNKNOWN_SERVER_ERROR, []), (ErrorCode.NONE, [])]  # fmt: skip
    missing = await list_offsets(broker, "nope", [(0, -1, -1)], 0)  # the partition is looked up first
    assert missing[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_list_offsets_v0_dates_the_log_end_by_the_brokers_clock(broker):
    await create_ok(broker, "legacy")
    await produce(broker, "legacy", [now_ms()] * 3)
    later = now_ms() + 3_600_000
    broker.clock = lambda: later  # the (log end offset, now) pair takes the broker's time, not the machine's
    got = await list_offsets(broker, "legacy", [(0, later - 1, 5), (0, later, 5)], 0)
    assert [p.old_style_offsets for p in got] == [[0], [3, 0]]  # before "now": only the segment's base
