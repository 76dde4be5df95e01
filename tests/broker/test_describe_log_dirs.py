"""DescribeLogDirs: every log dir with the partitions it holds and their sizes, as Kafka answers.

A null topic list asks for every partition, a list for the partitions named
(unknown ones left out, an empty list for none); sizes are the bytes of the
log's segments; v4+ adds the volume's total and usable bytes; a directory
that cannot be read is KAFKA_STORAGE_ERROR with no topics.
"""

from __future__ import annotations

import os

import pytest

from broker.config import BrokerConfig
from broker.core import Broker
from protocol import ErrorCode

from ._admin_client import broker, call, create_ok, now_ms, produce, req, sub  # noqa: F401  (broker is a fixture)

Topic = sub(35, "DescribableLogDirTopic")


async def _describe(broker, version: int, topics):  # noqa: F811
    return await call(broker, 35, version, req(35, topics=topics))


def _listed(result) -> dict[tuple[str, int], tuple[int, int, bool]]:
    return {(t.name, p.partition_index): (p.partition_size, p.offset_lag, p.is_future_key)
            for t in result.topics for p in t.partitions}  # fmt: skip


@pytest.mark.parametrize("version", range(6))
async def test_null_topics_list_every_partition_with_its_size(broker, version):  # noqa: F811
    await create_ok(broker, "a", 2)
    await create_ok(broker, "b", 1)
    await produce(broker, "a", [now_ms()] * 5, partition=1)
    resp = await _describe(broker, version, None)
    (result,) = resp.results
    assert result.error_code == ErrorCode.NONE and resp.error_code == ErrorCode.NONE
    assert result.log_dir == os.path.abspath(broker.topics.manager.dirs[0])
    size = broker.topics.partition("a", 1).log.size_in_bytes
    assert size > 0
    assert _listed(result) == {("a", 0): (0, 0, False), ("a", 1): (size, 0, False), ("b", 0): (0, 0, False)}
    assert [t.name for t in result.topics] == ["a", "b"]
    space = os.statvfs(result.log_dir)
    if version >= 4:
        assert result.total_bytes == space.f_blocks * space.f_frsize and 0 < result.usable_bytes <= result.total_bytes
    else:
        assert result.total_bytes == result.usable_bytes == -1  # not on the wire before v4
    assert result.is_cordoned is False


async def test_named_partitions_only_and_unknown_ones_left_out(broker):  # noqa: F811
    await create_ok(broker, "a", 3)
    resp = await _describe(broker, 4, [Topic(topic="a", partitions=[2, 0, 7]), Topic(topic="nope", partitions=[0])])
    assert set(_listed(resp.results[0])) == {("a", 0), ("a", 2)}
    assert (await _describe(broker, 4, [])).results[0].topics == []


async def test_each_log_dir_lists_its_own_partitions(tmp_path):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    props = {"node.id": "1", "log.dirs": ",".join(map(str, dirs)), "prometheus.port": "0"}
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        await create_ok(b, "t", 4)
        resp = await _describe(b, 2, None)
        assert [r.log_dir for r in resp.results] == [os.path.abspath(d) for d in dirs]
        held = [sorted(p for _, p in _listed(r)) for r in resp.results]
        assert sorted(held[0] + held[1]) == [0, 1, 2, 3] and held[0] and held[1]
        for r, d in zip(resp.results, dirs):
            assert all((d / f"t-{p}").is_dir() for _, p in _listed(r))
    finally:
        b.close()


async def test_a_log_dir_that_cannot_be_read_is_a_storage_error(broker, monkeypatch):  # noqa: F811
    await create_ok(broker, "a", 1)

    def unreadable(path):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr("broker.handlers.describe_log_dirs.os.statvfs", unreadable)
    (result,) = (await _describe(broker, 4, None)).results
    assert (result.error_code, result.topics) == (ErrorCode.KAFKA_STORAGE_ERROR, [])
