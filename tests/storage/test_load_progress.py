"""What the loading of the logs at start reports for Kafka's recovery gauges (``storage.load_progress``).

Kafka's ``LogManager.loadLogs`` counts each dir's logs before loading any and
counts one down as each is loaded; ``LogLoader.recoverLog`` sets its thread's
remaining segments to those from the recovery point on, then one less after
each, or 0 once a segment lost bytes (the rest are deleted). After a clean
stop no segment is recovered, so no thread has a count. Once everything is
loaded the gauges are gone (an empty snapshot). The dirs load at once, each on
its own threads (``num.recovery.threads.per.data.dir``), so the events are
checked dir by dir, and thread by thread within a dir.
"""

from __future__ import annotations

import os
import threading

import pytest

from storage import LogManager
from storage.load_progress import LoadProgress

from .lead_helpers import Clock, append


class Recorded(LoadProgress):
    """Every report, in the order made (the loading threads take turns through ``_record``)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []
        self._record = threading.Lock()

    def found(self, root, count):
        self.events.append(("found", os.path.basename(root), count))
        super().found(root, count)

    def loaded(self, root):
        with self._record:
            self.events.append(("loaded", os.path.basename(root), self.snapshot()[0][os.path.abspath(root)] - 1))
            super().loaded(root)

    def segments_left(self, root, thread, count):
        with self._record:
            self.events.append(("segments", os.path.basename(root), thread, count))
            super().segments_left(root, thread, count)

    def of(self, kind: str, root: str, thread: int | None = None) -> list[tuple]:
        return [e for e in self.events if e[:2] == (kind, root) and (thread is None or e[2] == thread)]


def _two_dirs_stopped(tmp_path, clock, partitions=2, appends=20):
    """Two log dirs holding ``partitions`` logs of topic t between them, several segments each, stopped."""
    dirs = [tmp_path / "a", tmp_path / "b"]
    lm = LogManager.open(dirs, {}, clock)
    lm.create_topic("t", partitions, {"segment.bytes": "700"})
    logs = [lm.get_log("t", p) for p in range(partitions)]
    for log_ in logs:
        for _ in range(appends):
            append(log_)
    segments = {(log_.dir.parent.name, log_.partition): len(log_.segments) for log_ in logs}
    lm.close()
    return dirs, segments


def _crash_from_zero(dirs):
    """No clean-shutdown marker and no recovery points: every segment is recovered."""
    for d in dirs:
        (d / ".kafka_cleanshutdown").unlink()
        (d / "recovery-point-offset-checkpoint").unlink()


def test_an_unclean_start_counts_logs_then_segments_down_to_nothing(tmp_path):
    clock = Clock()
    dirs, segments = _two_dirs_stopped(tmp_path, clock)
    assert all(n >= 3 for n in segments.values())
    _crash_from_zero(dirs)
    progress = Recorded()
    LogManager.open(dirs, {"num.recovery.threads.per.data.dir": "1"}, clock, progress)
    per_dir = {d.name: sorted(p for (name, p) in segments if name == d.name) for d in dirs}
    found = [e for e in progress.events if e[0] == "found"]
    assert found == [("found", d.name, len(per_dir[d.name])) for d in dirs]
    assert progress.events[: len(dirs)] == found  # every dir counted before any log loads
    for d in dirs:  # one thread per dir: its logs in turn, each counted down to nothing, then loaded
        expected = []
        for i, p in enumerate(per_dir[d.name]):
            n = segments[(d.name, p)]
            expected += [("segments", d.name, 0, k) for k in range(n, -1, -1)]
            expected.append(("loaded", d.name, len(per_dir[d.name]) - i - 1))
        assert [e for e in progress.events[len(dirs) :] if e[1] == d.name] == expected
    assert progress.snapshot() == ({}, {}) and not progress.loading


@pytest.mark.parametrize("threads", [2, 3])
def test_each_thread_counts_down_the_logs_it_recovers(tmp_path, threads):
    clock = Clock()
    dirs, segments = _two_dirs_stopped(tmp_path, clock, partitions=8)
    _crash_from_zero(dirs)
    progress = Recorded()
    LogManager.open(dirs, {"num.recovery.threads.per.data.dir": str(threads)}, clock, progress)
    for d in dirs:
        counts = sorted(n for (name, _p), n in segments.items() if name == d.name)
        assert [e[2] for e in progress.of("loaded", d.name)] == list(range(len(counts) - 1, -1, -1))
        runs = []
        for thread in range(threads):  # each thread's reports: whole countdowns, one per log it recovered
            left = [e[3] for e in progress.of("segments", d.name, thread)]
            while left:
                runs.append(left[0])
                assert left[: left[0] + 1] == list(range(left[0], -1, -1))
                left = left[left[0] + 1 :]
        assert sorted(runs) == counts
        assert {e[2] for e in progress.of("segments", d.name)} <= set(range(threads))
    assert progress.snapshot() == ({}, {}) and not progress.loading


def test_a_truncated_segment_leaves_no_segment_to_recover(tmp_path):
    clock = Clock()
    dirs, segments = _two_dirs_stopped(tmp_path, clock, partitions=1)
    _crash_from_zero(dirs)
    (root, _p), n = next(iter(segments.items()))
    first = sorted((tmp_path / root / "t-0").glob("*.log"))[0]
    with open(first, "r+b") as f:  # a torn tail in the first of n segments
        f.truncate(os.path.getsize(first) - 5)
    progress = Recorded()
    LogManager.open(dirs, {}, clock, progress)
    assert [e for e in progress.events if e[0] == "segments"] == [("segments", root, 0, n), ("segments", root, 0, 0)]


def test_a_clean_start_counts_logs_and_recovers_no_segment(tmp_path):
    clock = Clock()
    dirs, _segments = _two_dirs_stopped(tmp_path, clock)
    progress = Recorded()
    LogManager.open(dirs, {}, clock, progress)
    assert [e[0] for e in progress.events] == ["found", "found", "loaded", "loaded"]
    assert progress.snapshot() == ({}, {})
