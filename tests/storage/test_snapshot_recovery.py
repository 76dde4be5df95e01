"""Producer state after a clean stop whose newest snapshot is damaged or lost (Kafka's ``rebuildProducerState``).

A clean stop writes a snapshot at the log end offset. When it is corrupt,
Kafka's ``loadFromSnapshot`` deletes it and falls back to an older one (or
none: the log start offset), and the batches after that are replayed, so an
idempotent retry is still recognised as a duplicate. With no snapshot file at
all after a clean stop Kafka replays nothing.
"""

from __future__ import annotations

import pytest

from protocol import ErrorCode
from storage.producer_state import BatchInfo, Duplicate

from .lead_helpers import Clock
from .txn_helpers import data, open_at


def _written_and_closed(path, clock, segment_bytes):
    log_ = open_at(path, clock, clean=False, segment_bytes=segment_bytes)
    for i in range(25):
        data(log_, pid=8, n=1, seq=i, txn=False)
    log_.flush()
    log_.close()
    return [int(p.name[:20]) for p in sorted(path.glob("*.snapshot"))]


def _damage(path, mode):
    if mode == "unlink":
        path.unlink()
    elif mode == "flip":
        raw = bytearray(path.read_bytes())
        raw[-1] ^= 0xFF
        path.write_bytes(bytes(raw))
    else:
        path.write_bytes(path.read_bytes()[:7])


@pytest.mark.parametrize(
    "mode, segment_bytes",
    [("flip", "1000"), ("truncate", "1000"), ("unlink", "1000"), ("flip", "1048576"), ("truncate", "1048576")],
)
def test_a_damaged_newest_snapshot_is_replaced_by_a_replay(tmp_path, mode, segment_bytes):
    clock, d = Clock(), tmp_path / "t-0"
    snapshots = _written_and_closed(d, clock, segment_bytes)
    assert snapshots[-1] == 25 and (len(snapshots) == 2) == (segment_bytes == "1000")
    _damage(d / f"{25:020d}.snapshot", mode)
    log_ = open_at(d, clock, clean=True, segment_bytes=segment_bytes)
    entry = log_.producer_state.producers[8]
    assert (entry.last_seq, entry.last_offset) == (24, 24)
    retry = log_.producer_state.check(BatchInfo(8, 0, 24, 24, 0, 0, 0))
    assert isinstance(retry, Duplicate) and (retry.first_offset, retry.last_offset) == (24, 24)
    assert log_.producer_state.check(BatchInfo(8, 0, 25, 25, 0, 0, 0)) is None
    assert log_.producer_state.check(BatchInfo(8, 0, 27, 27, 0, 0, 0)) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert not (d / f"{25:020d}.snapshot").exists()  # the corrupt one is deleted, as Kafka does


def test_an_intact_snapshot_after_a_clean_stop_reads_no_segment(tmp_path):
    clock, d = Clock(), tmp_path / "t-0"
    _written_and_closed(d, clock, "1000")
    log_ = open_at(d, clock, clean=True, segment_bytes="1000")
    assert (log_.producer_state.producers[8].last_seq, log_.producer_state.producers[8].last_offset) == (24, 24)
    assert all(s._handle is None and not s._loaded for s in log_.segments)


def test_no_snapshot_file_at_all_after_a_clean_stop_replays_nothing(tmp_path):
    """Kafka's shortcut for a clean shutdown without snapshots (an upgrade): producer state starts empty."""
    clock, d = Clock(), tmp_path / "t-0"
    for offset in _written_and_closed(d, clock, "1000"):
        (d / f"{offset:020d}.snapshot").unlink()
    log_ = open_at(d, clock, clean=True, segment_bytes="1000")
    assert log_.producer_state.producers == {} and log_.log_end_offset == 25
