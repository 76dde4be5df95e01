"""LogManager: topic metadata, checkpoints, clean-shutdown marker, flush policies, group commit."""

from __future__ import annotations

import base64
import errno
import os
import threading
import time

import pytest

from storage import MetadataDirFailed, StorageError, fileops
from storage.checkpoint import read_checkpoint
from storage.log import Log
from storage.dir_checkpoints import LOG_STARTS, RECOVERY_POINTS
from storage.log_opening import CLEAN_SHUTDOWN

from ..open_files import open_files_under
from .lead_helpers import Clock, append, crash, manager, read_all


def test_topics_persist_with_ids_partitions_and_overrides(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    meta = lm.create_topic("orders", 2, {"cleanup.policy": "compact"})
    lm.add_partitions("orders", 4)
    cluster_id = lm.cluster_id
    lm.close()
    lm2 = manager(tmp_path, clock)
    again = lm2.topics()["orders"]
    assert (again.topic_id, again.num_partitions, again.overrides) == (meta.topic_id, 4, {"cleanup.policy": "compact"})
    assert lm2.cluster_id == cluster_id and all(lm2.get_log("orders", p) is not None for p in range(4))
    text = (tmp_path / "orders-3" / "partition.metadata").read_text().splitlines()
    assert text[0] == "version: 0"
    encoded = text[1].removeprefix("topic_id: ")
    assert base64.urlsafe_b64decode(encoded + "==") == meta.topic_id.bytes and len(encoded) == 22


def test_validate_only_creates_nothing(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 3, {}, validate_only=True)
    assert "t" not in lm.topics() and not (tmp_path / "t-0").exists()


@pytest.mark.parametrize("grow", [False, True], ids=["create", "add partitions"])
def test_a_log_that_cannot_be_made_undoes_the_others(tmp_path, monkeypatch, grow):
    """All or none: the logs already made go, a half-opened log closes its files, the error names the log."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    append(lm.get_log("t", 0))
    fds, made = open_files_under(tmp_path), []
    rebuild = Log.rebuild_producer_state

    def fail_the_third(self, replay_from=None) -> None:  # runs after the log's first segment (and its indexes) is open
        made.append(self.partition)
        if len(made) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        rebuild(self, replay_from)

    monkeypatch.setattr(Log, "rebuild_producer_state", fail_the_third)
    with pytest.raises(StorageError if grow else MetadataDirFailed) as error:
        lm.add_partitions("t", 6) if grow else lm.create_topic("u", 5, {})
    # a new topic is saved at its first step: the only dir (the metadata's) offline, its undoing is not saved;
    # that is no StorageError (nothing answers it KAFKA_STORAGE_ERROR), the growth's failure is one
    cause = error.value if grow else error.value.__context__
    assert isinstance(error.value, MetadataDirFailed) != grow and isinstance(error.value, StorageError) == grow
    assert ("t-3" if grow else "u-2") in str(cause) and "No space left on device" in str(cause)
    assert open_files_under(tmp_path) == fds == 3  # t-0's segment, index and time index
    assert sorted(p.name for p in tmp_path.iterdir() if p.name[:2] in ("t-", "u-")) == ["t-0"]
    assert lm.topics()["t"].num_partitions == 1 and "u" not in lm.topics()
    assert lm.get_log("t", 0).offline  # Kafka's getOrCreateLog: a log that cannot be made takes its dir offline
    monkeypatch.undo()
    lm.close()
    lm2 = manager(tmp_path, Clock())
    assert lm2.get_log("t", 1) is None and len(read_all(lm2.get_log("t", 0))) == 1
    assert sorted(lm2.topics()) == (["t"] if grow else ["t", "u"])  # the start finishes the saved creation


def test_delete_topic_removes_its_directories_after_the_delete_delay(tmp_path):
    """Kafka's asyncDelete: renamed -delete at once, removed once log.segment.delete.delay.ms has passed;
    one found on open (a stop or crash came first) waits that long again."""
    clock = Clock()
    lm = manager(tmp_path, clock, **{"log.segment.delete.delay.ms": "5000"})
    lm.create_topic("gone", 2, {})
    lm.create_topic("kept", 1, {})
    append(lm.get_log("gone", 0))
    lm.delete_topic("gone")
    assert "gone" not in lm.topics() and lm.get_log("gone", 0) is None

    def gone() -> list[str]:
        return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("gone"))

    assert len(gone()) == 2 and all(name.endswith("-delete") for name in gone())
    assert sorted(f.name for f in (tmp_path / gone()[0]).iterdir())[0] == "00000000000000000000.index"
    lm.delete_expired_files(clock.now + 4999)
    assert len(gone()) == 2
    lm.delete_expired_files(clock.now + 5000)
    assert gone() == []
    (tmp_path / "kept-0.0123abcd-delete").mkdir()  # a deletion interrupted by a crash
    (tmp_path / "kept-0.0123abcd-delete" / "00000000000000000000.log").write_bytes(b"x")
    lm.close()
    clock.advance(60_000)
    lm2 = manager(tmp_path, clock, **{"log.segment.delete.delay.ms": "5000"})
    assert list(lm2.topics()) == ["kept"] and (tmp_path / "kept-0.0123abcd-delete").exists()
    lm2.delete_expired_files(clock.now + 5000)
    assert not (tmp_path / "kept-0.0123abcd-delete").exists()


def test_checkpoints_and_marker_after_close(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 2, {"segment.bytes": "400"})
    for _ in range(10):
        append(lm.get_log("t", 0))
    lm.get_log("t", 0).delete_records_before(7)
    lm.close()
    assert (tmp_path / CLEAN_SHUTDOWN).exists()
    assert read_checkpoint(tmp_path / RECOVERY_POINTS) == {("t", 0): 10, ("t", 1): 0}
    lines = (tmp_path / LOG_STARTS).read_text().splitlines()
    assert lines[:2] == ["0", "1"] and lines[2].split() == ["t", "0", "7"]  # only where above the first base
    lm2 = manager(tmp_path, clock)
    log = lm2.get_log("t", 0)
    assert log.log_start_offset == 7 and read_all(log)[0][0] == 7



def test_checkpoints_written_on_a_thread_meet_a_log_made_meanwhile(tmp_path):
    """The broker writes the checkpoints on a worker thread (its timer) while its event loop makes logs
    (CreateTopics): the logs they tend are a copy taken at once. Here the loop's switch comes as the
    thread reads the first log's ``offline``. Before, ``online_logs`` iterated the live dict in Python:
    "dictionary changed size during iteration", and no checkpoint was written that round."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    made: list[str] = []

    class SwitchingHere(Log):
        @property
        def offline(self) -> bool:
            if not made:
                made.append("u")
                lm.create_topic("u", 1, {})  # what the event loop does meanwhile
            return False

        @offline.setter
        def offline(self, _value: bool) -> None:
            pass

    lm.get_log("t", 0).__class__ = SwitchingHere
    lm.write_checkpoints()
    assert made == ["u"] and ("t", 0) in read_checkpoint(tmp_path / RECOVERY_POINTS)


def test_recovery_point_moves_only_with_fsync(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "400"})
    log = lm.get_log("t", 0)
    for _ in range(3):
        append(log)
    assert log.recovery_point == 0
    while len(log.segments) < 3:
        append(log)
    assert log.recovery_point == 0  # a roll queues the old segment's fsync
    lm.write_checkpoints()
    assert log.recovery_point == log.active.base_offset
    assert read_checkpoint(tmp_path / RECOVERY_POINTS) == {("t", 0): log.active.base_offset}


def _count_fsyncs(monkeypatch, delay: float = 0.0):
    """The fsyncs of ``.log`` files (a flush also fsyncs the indexes that changed: test_flush_fsyncs.py)."""
    calls = []
    real = fileops.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".log"):
            calls.append(fd)
        time.sleep(delay)  # a disk's fsync latency, during which other appends queue up
        real(fd)

    monkeypatch.setattr(fileops, "fsync", fsync)
    return calls


def test_flush_messages_policy(tmp_path, monkeypatch):
    """An append fsyncs nothing itself; ``flush_due`` says when ``flush.messages`` are unflushed, and the round
    its caller runs (``note_flush_due``, a group-commit round) flushes the log whole."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"flush.messages": "3"})
    log = lm.get_log("t", 0)
    calls = _count_fsyncs(monkeypatch)
    due = []
    for _ in range(7):
        append(log)
        due.append(log.flush_due(clock.now))
        assert not calls  # never on the append itself
        if due[-1]:
            lm.note_flush_due(log)
            lm.flush_dirty()
            calls.clear()
    assert due == [False, False, True, False, False, True, False] and log.recovery_point == 6


def test_flush_ms_policy_on_the_timer(tmp_path, monkeypatch):
    """The timer only notes a due ``flush.ms`` flush (True); the next group-commit round runs it."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"flush.ms": "1000"})
    log = lm.get_log("t", 0)
    calls = _count_fsyncs(monkeypatch)
    append(log)
    assert lm.roll_idle_segments(clock.now + 999) is False
    assert lm.roll_idle_segments(clock.now + 1000) is True
    assert not calls and log.recovery_point == 0
    lm.flush_dirty()
    assert len(calls) == 1 and log.recovery_point == 1
    assert lm.roll_idle_segments(clock.now + 5000) is False  # nothing new to flush
    lm.flush_dirty()
    assert len(calls) == 1


def test_flush_dirty_waits_for_the_round_under_way(tmp_path):
    """``flush_dirty`` while another thread's round is fsyncing runs its round after that one, as every waiter
    of the group commit does: never two fsync rounds at once. It called ``commit`` itself, alongside."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    log, real = lm.get_log("t", 0), Log.flush
    entered, release, seen, running = threading.Event(), threading.Event(), [], [0]

    def flush(self, *args, **kwargs):
        running[0] += 1
        seen.append(running[0])
        entered.set()
        release.wait(5)
        real(self, *args, **kwargs)
        running[0] -= 1

    log.flush = flush.__get__(log)
    rounds = []
    for _ in range(2):
        append(log)
        lm.note_flush_due(log)
        rounds.append(threading.Thread(target=lm.flush_dirty))
        rounds[-1].start()
        assert entered.wait(5)
    time.sleep(0.1)  # the second round had its chance to begin alongside
    release.set()
    for thread in rounds:
        thread.join(5)
    assert seen == [1, 1] and log.recovery_point == 2
    lm.close()


def test_default_policy_never_fsyncs_on_append(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    calls = _count_fsyncs(monkeypatch)
    for _ in range(50):
        append(lm.get_log("t", 0))
    assert not calls


def test_group_commit_covers_every_append_with_few_fsyncs(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock(), **{"log.flush.durable.enable": "true"})
    assert lm.durable
    lm.create_topic("t", 4, {})
    calls = _count_fsyncs(monkeypatch, delay=0.001)
    lock = threading.Lock()
    acked: list[tuple[int, int]] = []

    def producer(partition: int) -> None:
        log = lm.get_log("t", partition)
        for _ in range(100):
            with lock:
                first, _ = append(log)
                target = lm.flush_generation()
            lm.sync_to(target)
            assert lm.flushed_generation() >= target and log.recovery_point > first
            acked.append((partition, first))

    threads = [threading.Thread(target=producer, args=(i % 4,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(acked) == 800 and lm.flushed_generation() == lm.flush_generation() == 800
    rounds = lm.group_commit.rounds
    assert 0 < rounds < 400  # flush rounds: far fewer than appends
    assert len(calls) <= 4 * rounds  # one fsync per dirty partition per round


def test_partition_states(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 2, {})
    append(lm.get_log("t", 1))
    states = {(t, p): rest for t, p, *rest in lm.partition_states()}
    assert states[("t", 0)] == [0, 0, 0, 1]
    size, start, end, segments = states[("t", 1)]
    assert size == (tmp_path / "t-1" / f"{0:020d}.log").stat().st_size > 0
    assert (start, end, segments) == (0, lm.get_log("t", 1).log_end_offset, 1) and end > 0


def test_manager_timer_rolls_idle_compacted_logs_and_runs_retention(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("c", 1, {"cleanup.policy": "compact", "max.compaction.lag.ms": "60000"})
    lm.create_topic("d", 1, {"retention.ms": "1000", "file.delete.delay.ms": "0"})
    append(lm.get_log("c", 0), ts=clock.now)
    append(lm.get_log("d", 0), ts=clock.now)
    lm.roll_idle_segments(clock.now + 60_001)
    assert len(lm.get_log("c", 0).segments) == 2
    lm.run_retention(clock.now + 1001)
    d = lm.get_log("d", 0)
    assert d.log_start_offset == 1 == d.log_end_offset and len(d.segments) == 1
    lm.delete_expired_files(clock.now + 1001)
    assert not list((tmp_path / "d-0").glob("*.deleted"))


def test_manager_retention_leaves_compacted_logs_to_the_cleaner(tmp_path):
    """Kafka's LogManager.cleanupLogs only takes logs whose cleanup.policy lacks compact: a compact,delete
    log's retention is run by the cleaner thread, so with log.cleaner.enable=false it keeps everything."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    for name, policy in (("d", "delete"), ("cd", "compact,delete"), ("dc", "delete,compact")):
        lm.create_topic(name, 1, {"cleanup.policy": policy, "retention.ms": "1000"})
        append(lm.get_log(name, 0), ts=clock.now)
    lm.run_retention(clock.now + 1001)
    assert [lm.get_log(n, 0).log_start_offset for n in ("d", "cd", "dc")] == [1, 0, 0]
    assert len(read_all(lm.get_log("cd", 0))) == 1


def test_manager_timer_leaves_backfilled_delete_policy_logs_alone(tmp_path):
    """Records stamped days ago on a delete-policy topic: Kafka keeps one segment (it rolls on append,
    comparing record times), so the 1 s timer duty must not roll one segment per batch."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("backfill", 1, {"retention.ms": "-1"})
    log = lm.get_log("backfill", 0)
    old = clock.now - 8 * 24 * 3_600_000
    for i in range(5):
        append(log, ts=old + i)
        clock.advance(1000)
        lm.roll_idle_segments(clock.now)
    assert [s.base_offset for s in log.segments] == [0]


@pytest.mark.parametrize("bad", ["0\n2\nt 0 5\n", "0\nx\n", "", "0\n1\nt 0\n"])
def test_bad_checkpoint_files_only_cost_a_rescan(tmp_path, bad):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "400"})
    for _ in range(10):
        append(lm.get_log("t", 0))
    expected = read_all(lm.get_log("t", 0))
    crash(lm)
    del lm  # unclean
    (tmp_path / RECOVERY_POINTS).write_text(bad)
    lm2 = manager(tmp_path, clock)
    assert read_all(lm2.get_log("t", 0)) == expected


def test_close_waits_for_a_group_commit_round_under_way_and_runs_none_after(tmp_path, monkeypatch):
    """A round still fsyncing when the broker closes (the broker's background round for acks=1 appends) ends
    before the logs are flushed and closed; the close's flush covers what was appended after the round began,
    so a ``sync_to`` asked afterwards runs no round on the closed logs. The old close flushed and closed the
    logs while the round still ran on them."""
    lm = manager(tmp_path, Clock(), **{"log.flush.durable.enable": "true"})
    lm.create_topic("t", 1, {})
    append(lm.get_log("t", 0))
    real, entered, release = Log.flush, threading.Event(), threading.Event()

    def flush(log_, *args, **kwargs):
        if threading.current_thread().name == "round":
            entered.set()
            assert release.wait(10)
        return real(log_, *args, **kwargs)

    monkeypatch.setattr(Log, "flush", flush)
    errors: list[BaseException] = []

    def run(fn, *args):
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported by the asserts below
            errors.append(exc)

    target = lm.flush_generation()
    round_ = threading.Thread(target=run, args=(lm.sync_to, target), name="round")
    round_.start()
    assert entered.wait(10)
    append(lm.get_log("t", 0))  # after the round took its generation: left to the close
    later, rounds = lm.flush_generation(), lm.group_commit.rounds
    closing = threading.Thread(target=run, args=(lm.close,), name="closing")
    closing.start()
    closing.join(0.3)
    assert closing.is_alive()  # waits for the round under way
    release.set()
    for thread in (round_, closing):
        thread.join(10)
    assert errors == [] and not lm.failures.offline
    assert (tmp_path / CLEAN_SHUTDOWN).exists()
    lm.sync_to(later)
    assert lm.flushed_generation() == later and lm.group_commit.rounds == rounds + 1  # the round under way only
