"""What the loading of the logs at start reports for Kafka's recovery gauges (``storage.load_progress``).

Kafka's ``LogManager.loadLogs`` counts each dir's logs before loading any and
counts one down as each is loaded; ``LogLoader.recoverLog`` sets its thread's
remaining segments to those from the recovery point on, then one less after
each, or 0 once a segment lost bytes (the rest are deleted). After a clean
stop no segment is recovered, so no thread has a count. Once everything is
loaded the gauges are gone (an empty snapshot).
"""

from __future__ import annotations

import os

from storage import LogManager
from storage.load_progress import LoadProgress

from .lead_helpers import Clock, append


class Recorded(LoadProgress):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple] = []

    def found(self, root, count):
        self.events.append(("found", os.path.basename(root), count))
        super().found(root, count)

    def loaded(self, root):
        self.events.append(("loaded", os.path.basename(root), self.snapshot()[0][os.path.abspath(root)] - 1))
        super().loaded(root)

    def segments_left(self, root, count):
        self.events.append(("segments", os.path.basename(root), count))
        super().segments_left(root, count)


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
    LogManager.open(dirs, {}, clock, progress)
    per_dir = {d.name: sorted(p for (name, p) in segments if name == d.name) for d in dirs}
    found = [e for e in progress.events if e[0] == "found"]
    assert found == [("found", d.name, len(per_dir[d.name])) for d in dirs]
    assert progress.events[: len(dirs)] == found  # every dir counted before any log loads
    expected = []
    for d in dirs:
        for i, p in enumerate(per_dir[d.name]):
            n = segments[(d.name, p)]
            expected += [("segments", d.name, k) for k in range(n, -1, -1)]
            expected.append(("loaded", d.name, len(per_dir[d.name]) - i - 1))
    assert progress.events[len(dirs):] == expected
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
    assert [e for e in progress.events if e[0] == "segments"] == [("segments", root, n), ("segments", root, 0)]


def test_a_clean_start_counts_logs_and_recovers_no_segment(tmp_path):
    clock = Clock()
    dirs, _segments = _two_dirs_stopped(tmp_path, clock)
    progress = Recorded()
    LogManager.open(dirs, {}, clock, progress)
    assert [e[0] for e in progress.events] == ["found", "found", "loaded", "loaded"]
    assert progress.snapshot() == ({}, {})
