"""Requests listing tens of thousands of entries are answered in time linear in their length.

Found by fuzzing: ListOffsets, DeleteTopics, CreatePartitions, AlterConfigs and
IncrementalAlterConfigs looked for repeated entries by counting each entry in
the whole list, so a 40,000-entry request (well under 1 MB) held the broker's
only thread for half a minute or more, and one of ``socket.request.max.bytes``
for hours. Kafka finds the repeats with a set or a map, in one pass. Each
request here lists 40,000 distinct entries of topics that do not exist, and
one entry again, which must still be refused as a repeat.
"""

from __future__ import annotations

import time

import pytest
import trio

from protocol import ErrorCode

from ._admin_client import broker, call, req, sub  # noqa: F401  (broker is a fixture)

N = 40_000
BUDGET_S = 20.0  # linear: about 3 s on a loaded 2-core machine; counting each entry in the list: over 30 s
UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _timed(broker, api_key: int, version: int, body):
    async def run():
        started = time.perf_counter()
        resp = await call(broker, api_key, version, body, timeout=120)
        return resp, time.perf_counter() - started

    resp, elapsed = trio.run(run)
    assert elapsed < BUDGET_S, f"{N} entries took {elapsed:.1f} s"
    return resp


def test_list_offsets(broker):
    part = sub(2, "ListOffsetsTopic", "ListOffsetsPartition")
    parts = [part(partition_index=i, timestamp=-1) for i in [*range(N), 7]]
    resp = _timed(broker, 2, 9, req(2, replica_id=-1, topics=[sub(2, "ListOffsetsTopic")(name="t", partitions=parts)]))
    codes = [p.error_code for p in resp.topics[0].partitions]
    assert len(codes) == N + 1 and codes[7] == codes[-1] == ErrorCode.INVALID_REQUEST
    assert set(codes[:7] + codes[8:-1]) == {UNKNOWN}


def test_delete_topics(broker):
    resp = _timed(broker, 20, 4, req(20, topic_names=[f"t{i}" for i in [*range(N), 7]], timeout_ms=1000))
    codes = {r.name: r.error_code for r in resp.responses}
    assert len(resp.responses) == N and codes.pop("t7") == ErrorCode.INVALID_REQUEST  # the repeat answered once
    assert set(codes.values()) == {UNKNOWN}


def test_create_partitions(broker):
    topic = sub(37, "CreatePartitionsTopic")
    resp = _timed(broker, 37, 3, req(37, topics=[topic(name=f"t{i}", count=2) for i in [*range(N), 7]],
                                     timeout_ms=1000))  # fmt: skip
    codes = {r.name: r.error_code for r in resp.results}
    assert len(resp.results) == N and codes.pop("t7") == ErrorCode.INVALID_REQUEST
    assert set(codes.values()) == {UNKNOWN}


@pytest.mark.parametrize("api_key,version", [(33, 2), (44, 1)], ids=["AlterConfigs", "IncrementalAlterConfigs"])
def test_alter_configs(broker, api_key, version):
    resource = sub(api_key, "AlterConfigsResource")
    body = req(api_key, resources=[resource(resource_type=2, resource_name=f"t{i}") for i in [*range(N), 7]])
    resp = _timed(broker, api_key, version, body)
    codes = [r.error_code for r in resp.responses]
    assert len(codes) == N + 1 and codes[7] == codes[-1] == ErrorCode.INVALID_REQUEST
    assert set(codes[:7] + codes[8:-1]) == {UNKNOWN}
