"""How many partitions one admin request may create, and what a disk failure while creating them does.

Kafka's KRaft controller bounds the partitions one CreateTopics or
CreatePartitions request creates at 10,000 (POLICY_VIOLATION past it), so a
request cannot ask a broker for millions of logs. A log that cannot be
created (here: the process out of file descriptors, as a count of thousands
can make it) is KAFKA_STORAGE_ERROR for that topic, and storage removes what
the request had made, so the topic is as it was and the broker serves on.
The same holds when the save of the topics itself is out of descriptors
before it wrote anything: refused, not a failure of the metadata log dir.
"""

from __future__ import annotations

import errno
import os
import resource

from protocol import ErrorCode
from storage import log_manager
from tests.open_files import open_files_under

from ._admin_client import (  # noqa: F401  (broker is a fixture)
    broker, call, create, create_ok, creatable, now_ms, produce, req, sub,
)  # fmt: skip

EXCESSIVE = "Excessively large number of partitions per request."


def _dirs(broker, topic: str) -> list[str]:
    root = broker.topics.manager.dirs[0]
    return sorted(p.name for p in root.iterdir() if p.name.startswith(f"{topic}-"))


async def _grow(broker, *counts: tuple[str, int], validate_only: bool = False):
    Topic = sub(37, "CreatePartitionsTopic")
    topics = [Topic(name=name, count=count, assignments=None) for name, count in counts]
    resp = await call(broker, 37, 3, req(37, topics=topics, timeout_ms=1000, validate_only=validate_only))
    return [(r.name, r.error_code, r.error_message) for r in resp.results]


async def test_create_topics_past_ten_thousand_partitions_creates_nothing(broker):
    topics = [creatable("a", 6001), creatable("b", 4000), creatable("c", 1), creatable("c", 1)]
    got = await create(broker, *topics)
    assert {n: (t.error_code, t.error_message) for n, t in got.items()} == {
        "a": (ErrorCode.POLICY_VIOLATION, EXCESSIVE), "b": (ErrorCode.POLICY_VIOLATION, EXCESSIVE),
        "c": (ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
    }  # fmt: skip
    assert broker.topics.names() == [] and _dirs(broker, "a") == []
    huge = await create(broker, creatable("d", 2**31 - 1), creatable("e", -1))  # -1: num.partitions (3)
    assert huge["d"].error_code == huge["e"].error_code == ErrorCode.POLICY_VIOLATION


async def test_create_topics_up_to_ten_thousand_partitions_passes_the_bound(broker):
    got = await create(broker, creatable("a", 9997), creatable("b", -1), validate_only=True)
    assert [t.error_code for t in got.values()] == [ErrorCode.NONE, ErrorCode.NONE]
    assigned = creatable("m", -1, assignments=[(i, [1]) for i in range(10_001)])
    assert (await create(broker, assigned, validate_only=True))["m"].error_code == ErrorCode.POLICY_VIOLATION


async def test_create_partitions_bounds_the_request_not_each_topic(broker):
    await create_ok(broker, "a", 1)
    await create_ok(broker, "b", 1)
    got = await _grow(broker, ("a", 6001), ("b", 4001), validate_only=True)  # 10,000 new in all
    assert got == [("a", ErrorCode.NONE, None), ("b", ErrorCode.NONE, None)]
    got = await _grow(broker, ("a", 6001), ("b", 4002), ("nope", 3), validate_only=True)
    assert got[1] == ("b", ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    assert got[2][1] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert (await _grow(broker, ("a", 2**31 - 1)))[0][1] == ErrorCode.POLICY_VIOLATION
    assert broker.topics.get("a").num_partitions == 1 and _dirs(broker, "a") == ["a-0"]


def _fail_log_open_after(monkeypatch, allowed: int) -> None:
    opened = [0]
    real = log_manager.Log.open

    def open_or_fail(*args, **kwargs):
        opened[0] += 1
        if opened[0] > allowed:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real(*args, **kwargs)

    monkeypatch.setattr(log_manager.Log, "open", open_or_fail)


async def test_create_partitions_that_run_out_of_files_undoes_them(broker, monkeypatch):
    await create_ok(broker, "grow", 2)
    await produce(broker, "grow", [now_ms()] * 3, partition=1)
    fds = open_files_under(broker.topics.manager.dirs[0])
    _fail_log_open_after(monkeypatch, 3)
    [(name, code, message)] = await _grow(broker, ("grow", 8))
    assert (name, code) == ("grow", ErrorCode.KAFKA_STORAGE_ERROR)
    assert "grow-5" in message and "Too many open files" in message
    assert broker.topics.get("grow").num_partitions == 2 and _dirs(broker, "grow") == ["grow-0", "grow-1"]
    assert broker.topics.partition("grow", 2) is None and open_files_under(broker.topics.manager.dirs[0]) == fds
    monkeypatch.undo()
    assert await _grow(broker, ("grow", 4)) == [("grow", ErrorCode.NONE, None)]
    assert await produce(broker, "grow", [now_ms()], partition=1) == 3  # the old partition kept its records


async def test_create_topics_that_run_out_of_files_leaves_no_topic(broker, monkeypatch):
    fds = open_files_under(broker.topics.manager.dirs[0])
    _fail_log_open_after(monkeypatch, 2)
    got = await create(broker, creatable("t", 5), creatable("u", 1))
    assert got["t"].error_code == got["u"].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "t-2" in got["t"].error_message and "Too many open files" in got["t"].error_message
    assert broker.topics.names() == [] and _dirs(broker, "t") == []
    assert open_files_under(broker.topics.manager.dirs[0]) == fds
    monkeypatch.undo()
    await create_ok(broker, "t", 5)
    assert _dirs(broker, "t") == [f"t-{p}" for p in range(5)]


def _fill_descriptor_holes() -> list[int]:
    """Descriptors on /dev/null in every free number below the highest one in use (earlier tests closed
    some), and one past it: so the next descriptors the broker opens come after the last of them."""
    highest, fillers = max(int(fd) for fd in os.listdir("/proc/self/fd")), []
    while not fillers or fillers[-1] < highest:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
    return fillers


async def test_a_real_shortage_of_file_descriptors_is_answered_and_undone(broker):
    """The process's own limit, lowered for the test: segment files and indexes fail where they may."""
    await create_ok(broker, "grow", 1)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    fds = open_files_under(broker.topics.manager.dirs[0])
    fillers = _fill_descriptor_holes()  # the limit caps descriptor numbers: no free ones below it but ours
    resource.setrlimit(resource.RLIMIT_NOFILE, (fillers[-1] + 40, hard))  # room for about a dozen partitions
    try:
        [(_, grown, message)] = await _grow(broker, ("grow", 31))
        created = await create(broker, creatable("t", 30))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        for fd in fillers:
            os.close(fd)
    assert grown == created["t"].error_code == ErrorCode.KAFKA_STORAGE_ERROR and "Too many open files" in message
    assert broker.topics.get("grow").num_partitions == 1 and broker.topics.names() == ["grow"]
    assert _dirs(broker, "grow") == ["grow-0"] and _dirs(broker, "t") == []
    assert open_files_under(broker.topics.manager.dirs[0]) == fds
    assert await _grow(broker, ("grow", 3)) == [("grow", ErrorCode.NONE, None)]


async def test_a_topic_save_out_of_descriptors_is_answered_and_the_broker_serves_on(broker, monkeypatch):
    """The journal cannot even be opened: nothing was written, so the creation is answered
    KAFKA_STORAGE_ERROR and undone, and the metadata log dir stays online (no stop of the broker)."""
    from storage import fileops
    from storage.topic_journal import JOURNAL_FILE

    await create_ok(broker, "a", 1)  # the journal exists: the next change appends to it
    real_open = fileops.open_file

    def journal_refused(path, *args, **kwargs):
        if os.path.basename(path) in (JOURNAL_FILE, JOURNAL_FILE + ".tmp"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(fileops, "open_file", journal_refused)
    got = await create(broker, creatable("t", 2))
    assert got["t"].error_code == ErrorCode.KAFKA_STORAGE_ERROR and "Too many open files" in got["t"].error_message
    assert broker.topics.names() == ["a"] and _dirs(broker, "t") == []
    assert not broker.topics.manager.failures.metadata_offline
    monkeypatch.undo()
    await create_ok(broker, "t", 2)
    assert broker.topics.names() == ["a", "t"]


async def test_a_log_out_of_descriptors_at_its_partition_metadata_names_the_partition(broker, monkeypatch):
    """The partition's ``partition.metadata`` is the log's first file: out of descriptors there, the answer
    names the partition whose log could not be made, as for the log's own files."""
    from storage import fileops

    real_open = fileops.open_file

    def metadata_refused(path, *args, **kwargs):
        if os.path.basename(path) == "partition.metadata.tmp" and "t-1" in str(path):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(fileops, "open_file", metadata_refused)
    got = await create(broker, creatable("t", 3))
    assert got["t"].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert got["t"].error_message == "[Errno 24] creating the log of t-1 failed: Too many open files"
    assert broker.topics.names() == [] and _dirs(broker, "t") == []
