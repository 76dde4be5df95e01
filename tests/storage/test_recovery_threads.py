"""Loading the logs on ``num.recovery.threads.per.data.dir`` threads per log dir, as Kafka's LogManager.loadLogs.

Each log dir gets a pool of that many threads (named ``log-recovery-<dir>-<n>``),
the dirs load at once, and each partition directory is a job. The result must
not depend on the threads: the same crashed dirs, opened with 1 thread and with
3, give the same logs (offsets, high watermarks, recovery points, segments,
producer state, the records, torn tails cut off). A hook in ``Segment.recover``
holds each thread's first recovery until three of a dir's threads are in one,
which shows that three threads did the work without relying on timing. A log
that fails to load fails the start as with one thread: the first failure in
(dir, partition) order is raised, once no loading thread is left and no file of
the logs that did open is still open, and no dir keeps its clean-shutdown
marker (each went before its logs loaded). The default is Kafka 4's 2 threads.
"""

from __future__ import annotations

import os
import shutil
import threading

import pytest

import storage.log as storage_log
from storage import LogManager
from storage.log_opening import CLEAN_SHUTDOWN
from storage.segment import Segment

from .lead_helpers import Clock, read_all
from .txn_helpers import data, marker, producer_view

PARTITIONS = 12


def _crashed(root, clock) -> list:
    """Two log dirs holding topic t's logs as a crash leaves them: no marker, no recovery points, a few
    transactions (one left open), a torn tail in one segment and junk after the last batch of another."""
    dirs = [root / "a", root / "b"]
    lm = LogManager.open(dirs, {}, clock)
    lm.create_topic("t", PARTITIONS, {"segment.bytes": "600"})
    for p in range(PARTITIONS):
        log_ = lm.get_log("t", p)
        txn = p % 3 == 0
        for seq in range(14):
            data(log_, 1000 + p, seq=seq, txn=txn)
            if txn and seq in (4, 9):
                marker(log_, 1000 + p, commit=seq == 4)  # committed, aborted, then one left open
    lm.close()
    for d in dirs:
        (d / CLEAN_SHUTDOWN).unlink()
        (d / "recovery-point-offset-checkpoint").unlink()
    for p in range(1, PARTITIONS, 4):  # a torn batch in the middle: that segment is cut, the later ones go
        logs = sorted(next(root.glob(f"*/t-{p}")).glob("*.log"))
        with open(logs[len(logs) // 2], "r+b") as f:
            f.truncate(os.path.getsize(logs[len(logs) // 2]) - 7)
    for p in range(2, PARTITIONS, 4):  # junk after the last batch
        with open(sorted(next(root.glob(f"*/t-{p}")).glob("*.log"))[-1], "ab") as f:
            f.write(b"\x00\x00\x00\x00\x00\x00\x00\x99\x00\x00\x00\x40junk")
    return dirs


def _state(lm: LogManager) -> dict:
    out = {}
    for log_ in lm.logs():
        out[(log_.dir.parent.name, log_.partition)] = (
            log_.log_start_offset, log_.log_end_offset, log_.high_watermark, log_.recovery_point,
            log_.last_stable_offset, [(s.base_offset, s.size) for s in log_.segments], producer_view(log_),
            read_all(log_), sorted(p.name for p in log_.dir.iterdir()),
        )  # fmt: skip
    return out


def _threads(props: dict, n: int) -> dict:
    return {**props, "num.recovery.threads.per.data.dir": str(n)}


def _meet_in_recovery(monkeypatch, threads: int) -> dict:
    """Each loading thread's first ``Segment.recover`` waits until ``threads`` threads of its dir wait too;
    returns {dir name: names of the threads that recovered there}."""
    barriers: dict = {}
    seen: dict[str, set] = {}
    lock = threading.Lock()
    real = Segment.recover

    def meeting(self, *args, **kwargs):
        name, root = threading.current_thread().name, self.dir.parent.name
        with lock:
            first = name not in seen.setdefault(root, set())
            seen[root].add(name)
            barrier = barriers.setdefault(root, threading.Barrier(threads, timeout=10))
        if first:
            barrier.wait()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Segment, "recover", meeting)
    return seen


def test_three_threads_recover_what_one_thread_recovers(tmp_path, monkeypatch):
    clock = Clock()
    crashed = _crashed(tmp_path / "crashed", clock)
    results, names = {}, {}
    for threads in (1, 3):
        copies = [tmp_path / str(threads) / d.name for d in crashed]
        for d, copy in zip(crashed, copies):
            shutil.copytree(d, copy)
        with monkeypatch.context() as patch:
            seen = _meet_in_recovery(patch, threads)
            lm = LogManager.open(copies, _threads({}, threads), clock)
        results[threads], names[threads] = _state(lm), seen
        lm.close()
    assert results[3] == results[1]
    assert len(results[1]) == PARTITIONS
    assert any(r[1] < 14 + 2 * (p % 3 == 0) for (_d, p), r in results[1].items())  # tails were cut
    for threads in (1, 3):
        assert names[threads] == {
            d.name: {f"log-recovery-{os.path.abspath(tmp_path / str(threads) / d.name)}-{n}" for n in range(threads)}
            for d in crashed
        }  # fmt: skip


def test_two_threads_by_default(tmp_path, monkeypatch):
    clock = Clock()
    crashed = _crashed(tmp_path, clock)
    seen = _meet_in_recovery(monkeypatch, 2)
    LogManager.open(crashed, {}, clock).close()
    assert {len(names) for names in seen.values()} == {2}


def _open_fds_under(path) -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def _failing_loads(monkeypatch, failures: dict, wait_for_later: bool) -> None:
    """``storage.log``'s ``load_log`` raises ``failures[(dir name, partition)]`` once the log is loaded;
    with ``wait_for_later`` the first of them waits (up to 10 s) for the others to fail first."""
    real, later_failed = storage_log.load_log, threading.Event()
    first = next(iter(failures))

    def load(log_, *args, **kwargs):
        real(log_, *args, **kwargs)
        key = (log_.dir.parent.name, log_.partition)
        if key == first and wait_for_later:
            later_failed.wait(10)
        if key in failures:
            if key != first:
                later_failed.set()
            raise failures[key]

    monkeypatch.setattr(storage_log, "load_log", load)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("clean", [True, False], ids=["clean", "crashed"])
def test_a_failing_log_fails_the_start_as_with_one_thread(tmp_path, monkeypatch, threads, clean):
    clock = Clock()
    dirs = _crashed(tmp_path, clock)
    if clean:  # a clean stop: the markers are back, no segment is scanned
        LogManager.open(dirs, {}, clock).close()
    in_b = [int(p.name[2:]) for p in sorted((tmp_path / "b").glob("t-*"))]  # the order they load in
    failures = {("b", in_b[1]): RuntimeError("first in order"), ("b", in_b[-1]): OSError(5, "later")}
    _failing_loads(monkeypatch, failures, wait_for_later=threads > 1)
    with pytest.raises(RuntimeError, match="first in order"):
        LogManager.open(dirs, _threads({}, threads), clock)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("log-recovery-")]
    assert _open_fds_under(tmp_path) == []
    # each dir's marker went before its logs loaded (Kafka's loadLogs, KAFKA-10471): none claims a clean stop
    assert [(d / CLEAN_SHUTDOWN).exists() for d in dirs] == [False, False]
