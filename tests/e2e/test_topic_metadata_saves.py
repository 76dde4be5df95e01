"""Topic changes saved by a real broker process: concurrent ones all kept; one the disk refuses stops it.

A broker under a file size limit (``LimitedBroker``, ``prlimit --fsize``: a
write past it fails with EFBIG, as a full disk fails with ENOSPC) creates
topics with long names until ``__topics.journal`` meets the limit. That save
fails: the first log dir, which holds the metadata, goes offline, the request
is not answered (the connection closes) and the broker exits with status 1,
as Kafka halts when its metadata log cannot be written (its raft thread's
fatal fault handler; ``ReplicaManager.handleLogDirFailure`` for the metadata
log dir). Restarted without the limit, it has every topic whose creation was
answered, and the unanswered one only if the disk kept its line whole.

Creations from several connections at once (saved on a worker thread, one
change at a time) are all kept across a SIGKILL, each connection's in the
order it sent them.
"""

from __future__ import annotations

import shutil
import threading

import pytest

from protocol import API_BY_KEY, ErrorCode, message_class

from .harness import BrokerProcess, LimitedBroker, raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]
needs_prlimit = pytest.mark.skipif(shutil.which("prlimit") is None, reason="needs prlimit (util-linux)")
TOPICS_LIMIT = 48 << 10  # about 140 journal lines of a 249-character name
_CreateTopics = message_class(API_BY_KEY[19], True)
_Metadata = message_class(API_BY_KEY[3], True)


def create_topic(port: int, name: str):
    """One CreateTopics v7 of one topic with one partition, on a new connection; its topic's result."""
    topic = _CreateTopics.CreatableTopic(name=name, num_partitions=1, replication_factor=-1, assignments=[],
                                         configs=[])  # fmt: skip
    return raw_call(port, 19, 7, _CreateTopics(topics=[topic], timeout_ms=10_000, validate_only=False)).topics[0]


def topic_names(port: int) -> set[str]:
    answer = raw_call(port, 3, 12, _Metadata(topics=None, allow_auto_topic_creation=False))
    return {topic.name for topic in answer.topics}


def _create_until_unanswered(port: int, limit: int) -> tuple[list[str], str | None]:
    """Create topics until one is not answered; the names answered NONE, and the one not answered."""
    answered: list[str] = []
    for i in range(limit):
        name = f"{i:04d}-" + "t" * 244
        try:
            result = create_topic(port, name)
        except (ConnectionError, OSError):
            return answered, name
        assert result.error_code == ErrorCode.NONE, result.error_message
        answered.append(name)
    return answered, None


@needs_prlimit
def test_a_topic_save_the_disk_refuses_stops_the_broker_unanswered_and_a_restart_keeps_every_answered_one(
        tmp_path):  # fmt: skip
    limited = LimitedBroker(tmp_path / "data", TOPICS_LIMIT, {"log.index.size.max.bytes": "4096"}).start()
    try:
        answered, unanswered = _create_until_unanswered(limited.port, 1000)
        assert limited.proc is not None and limited.proc.wait(30) == 1
    finally:
        limited.kill()
    log = limited.log_text()
    assert unanswered is not None and 100 < len(answered) < 1000
    assert f"Error in log dir {tmp_path / 'data'} (saving the topics failed: File too large)" in log
    assert "CRITICAL minibroker: Stopping the broker because all log dirs in" in log
    again = BrokerProcess(tmp_path / "data").start()
    try:
        names = topic_names(again.port)
        assert set(answered) <= names <= {*answered, unanswered}
    finally:
        again.kill()


def _journal_order(data_dir) -> list[str]:
    """The topics ``__topics.journal`` names, in its order (the header left out)."""
    lines = (data_dir / "__topics.journal").read_text().splitlines()[1:]
    return [line.split('"name": "', 1)[1].split('"', 1)[0] for line in lines]


def test_concurrent_creations_from_several_connections_all_survive_a_sigkill(tmp_path):
    """Each creation is answered once its line is fsynced (on a worker thread, one change at a time): every
    answered one is in the journal, each connection's in the order it sent them, and after a SIGKILL (no
    fold, no clean stop) the restarted broker has them all."""
    broker = BrokerProcess(tmp_path / "data").start()
    answered: dict[int, list[str]] = {n: [] for n in range(8)}

    def client(n: int) -> None:
        for i in range(12):
            result = create_topic(broker.port, f"c{n}-{i}")
            assert result.error_code == ErrorCode.NONE, result.error_message
            answered[n].append(f"c{n}-{i}")

    try:
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        broker.kill()  # SIGKILL
    order = _journal_order(tmp_path / "data")
    assert all(len(names) == 12 for names in answered.values()) and len(order) == 96
    for names in answered.values():
        assert [name for name in order if name in names] == names
    again = BrokerProcess(tmp_path / "data").start()
    try:
        assert topic_names(again.port) == {name for names in answered.values() for name in names}
    finally:
        again.kill()
