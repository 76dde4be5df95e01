"""What a flush makes durable, as Kafka's ``LogSegment.flush`` and ``writeSnapshot(..., sync)`` do.

A flush fsyncs each written segment's ``.log``, ``.index``, ``.timeindex``
(and ``.txnindex``), an index only if it changed since the last flush; a
stop's producer snapshot is fsynced before it takes its name, then its
directory; a roll's snapshot is written without an fsync (it is on the append
path) and fsynced by the next flush. A durable-mode group-commit round
fsyncs the active segment's ``.log`` but not its offset and time indexes.
"""

from __future__ import annotations

import os

import pytest

from .lead_helpers import Clock, append, manager
from .txn_helpers import data, open_at


@pytest.fixture
def synced(monkeypatch):
    """Names of the files (and directories) ``os.fsync`` is called on."""
    names: list[str] = []
    real = os.fsync

    def spy(fd):
        names.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return names


def test_flush_fsyncs_every_written_segment_with_its_indexes(tmp_path, synced):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "1500", "index.interval.bytes": "200"})
    log = lm.get_log("t", 0)
    synced.clear()  # the manager's own files
    for _ in range(30):
        append(log)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) == 3 and synced == []  # appends and rolls fsync nothing
    log.flush()
    for base in bases:
        for suffix in (".log", ".index", ".timeindex"):
            assert f"{base:020d}{suffix}" in synced
    synced.clear()
    log.flush()  # nothing changed: the indexes are not fsynced again
    assert not [n for n in synced if n.endswith("index")]
    clock.advance(1)
    append(log, n=1, value=b"x" * 300)  # one more entry in each index of the active segment
    synced.clear()
    log.flush(active_indexes=False)  # a durable-mode group-commit round: the .log only
    assert synced == [f"{bases[-1]:020d}.log"]
    synced.clear()
    log.flush()
    assert sorted(synced) == sorted(f"{bases[-1]:020d}{s}" for s in (".log", ".index", ".timeindex"))


def test_a_stop_snapshot_is_fsynced_before_its_rename_and_a_roll_snapshot_by_the_next_flush(tmp_path, synced):
    clock, d = Clock(), tmp_path / "t-0"
    log_ = open_at(d, clock, clean=False, segment_bytes="1000")
    for i in range(12):
        data(log_, pid=8, n=1, seq=i, txn=False)
    rolled = [s.base_offset for s in log_.segments[1:]]
    assert rolled and (d / f"{rolled[0]:020d}.snapshot").exists()
    assert not [n for n in synced if "snapshot" in n]  # not on the append path
    log_.flush()
    assert {f"{base:020d}.snapshot" for base in rolled} <= set(synced) and "t-0" in synced
    synced.clear()
    log_.close()
    end = log_.log_end_offset
    assert synced.index(f"{end:020d}.snapshot.tmp") < synced.index("t-0")  # the file, then its new name


def test_a_group_commit_keeps_the_checkpointed_recovery_point_at_the_segment_with_unsynced_indexes(tmp_path):
    # a group commit moves the recovery point without fsyncing the active segment's indexes; if the log then
    # rolls at that offset, the checkpoint must still send a restart after a crash back to rescan that segment
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "1500", "index.interval.bytes": "200"})
    log = lm.get_log("t", 0)
    for _ in range(12):
        append(log)
    active = log.active.base_offset
    log.flush(active_indexes=False)
    assert log.recovery_point == log.log_end_offset > active
    assert log.checkpointed_recovery_point == active
    log.roll()
    lm.write_checkpoints()
    points = (tmp_path / "recovery-point-offset-checkpoint").read_text().split()
    assert points[-1] == str(active)
    log.flush()  # a full flush fsyncs every index: the checkpoint may move to the recovery point again
    assert log.checkpointed_recovery_point == log.recovery_point == log.log_end_offset
