"""KIP-724 startup upgrade: legacy v0/v1 segments rewritten as v2, crash-safely.

Legacy segments are written with our own record writer (magic 0 and 1,
uncompressed and compressed), then the log directory is reopened with
``log.record.version.force.upgrade=2``. Every offset, key, value and
timestamp must survive (v0 has no timestamp: -1), every entry must now be a
v2 batch (an uncompressed legacy message a single-record batch, a wrapper one
batch), and a crash at any rename of the swap leaves a log that reads the
same and finishes the upgrade on the next start.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.records import Codec, RecordBatchBuilder, iter_batches

from .lead_helpers import Clock, append, manager, read_all, reopen

UPGRADE = {"log.record.version.force.upgrade": "2"}
TS = 1_700_000_000_000


def _legacy(base: int, n: int, magic: int, codec: Codec) -> bytes:
    b = RecordBatchBuilder(magic=magic, compression=codec, base_offset=base)
    for i in range(n):
        b.append(f"k{base + i}".encode(), f"v{base + i}".encode(), timestamp=TS + base + i, offset=base + i)
    return b.build()


def _build(path: Path, clock: Clock) -> list[tuple[int, int, bytes, bytes, int]]:
    lm = manager(path, clock)
    lm.create_topic("t", 1, {"segment.bytes": "600"})
    log = lm.get_log("t", 0)
    plan = [(0, 3, Codec.NONE), (1, 4, Codec.GZIP), (0, 2, Codec.LZ4), (1, 5, Codec.NONE), (1, 3, Codec.SNAPPY)]
    expected = []
    for magic, n, codec in plan * 3:
        base = log.log_end_offset
        log.append(_legacy(base, n, magic, codec), base, base + n - 1, TS + base + n - 1)
        expected += [(base + i, magic, f"k{base + i}".encode(), f"v{base + i}".encode(),
                      -1 if magic == 0 else TS + base + i) for i in range(n)]  # fmt: skip
    append(log, n=2, ts=TS)  # some v2 batches too, copied unchanged
    expected += [(log.log_end_offset - 2 + i, 2, b"k", b"v" * 50, TS + i) for i in range(2)]
    lm.close()
    return expected


def _entries(log) -> list:
    return [b for seg in log.segments for b in iter_batches(memoryview(os.pread(seg.fileno(), seg.size, 0)))]


def _records(log) -> list:
    return [(r.offset, r.key, r.value, r.timestamp) for b in _entries(log) for r in b]


def test_upgrade_rewrites_every_legacy_entry_as_v2(tmp_path):
    clock = Clock()
    expected = _build(tmp_path, clock)
    lm, log = reopen(tmp_path, clock)
    assert {b.magic for b in _entries(log)} == {0, 1, 2}  # without the setting nothing changes
    lm.close()
    lm = manager(tmp_path, clock, **UPGRADE)
    log = lm.get_log("t", 0)
    entries = _entries(log)
    assert {b.magic for b in entries} == {2}
    assert _records(log) == [(o, k, v, ts) for o, _, k, v, ts in expected]
    assert [v for _, v in read_all(log)] == [v for *_, v, _ in expected]
    wrappers = [b for b in entries if b.compression is not Codec.NONE]
    assert all(b.records_count > 1 for b in wrappers)  # a compressed wrapper became one batch
    single = [b for b in entries if b.compression is Codec.NONE and b.records_count == 1]
    assert len(single) >= 3 * (3 + 5)  # each uncompressed legacy message became its own batch
    first, _ = append(log)
    assert first == expected[-1][0] + 1


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_crash_during_the_swap_loses_nothing_and_the_next_start_finishes(tmp_path, monkeypatch, fail_at):
    clock = Clock()
    expected = [(o, k, v, ts) for o, _, k, v, ts in _build(tmp_path, clock)]
    real_rename = Path.rename
    calls = {"n": 0}

    def crashing_rename(self, target):
        calls["n"] += 1
        if calls["n"] == fail_at:
            raise OSError("simulated crash")
        return real_rename(self, target)

    monkeypatch.setattr(Path, "rename", crashing_rename)
    with pytest.raises(OSError, match="simulated crash"):
        manager(tmp_path, clock, **UPGRADE)
    monkeypatch.setattr(Path, "rename", real_rename)
    lm, log = reopen(tmp_path, clock)  # recovery alone: the same records, whatever state the swap was in
    assert _records(log) == expected
    assert not list((tmp_path / "t-0").glob("*.cleaned")) and not list((tmp_path / "t-0").glob("*.swap"))
    lm.close()
    lm = manager(tmp_path, clock, **UPGRADE)
    log = lm.get_log("t", 0)
    assert {b.magic for b in _entries(log)} == {2}
    assert _records(log) == expected


def test_only_format_2_is_accepted(tmp_path):
    from storage import ConfigError

    with pytest.raises(ConfigError, match="log.record.version.force.upgrade"):
        manager(tmp_path, Clock(), **{"log.record.version.force.upgrade": "1"})


def test_an_upgrade_that_fails_leaves_no_file_open(tmp_path, monkeypatch):
    """The start fails with the upgrade's error, every log's files closed and the dir free for the next start."""
    import storage.log_manager as log_manager

    from ..open_files import open_files_under

    clock = Clock()
    _build(tmp_path, clock)

    def upgrade_log(log_) -> None:
        read_all(log_)  # the segments' files opened, as the upgrade's reads open them
        raise ValueError("injected: the upgrade failed")

    monkeypatch.setattr(log_manager, "upgrade_log", upgrade_log)
    with pytest.raises(ValueError, match="injected"):
        manager(tmp_path, clock, **UPGRADE)
    assert open_files_under(tmp_path) == 0
    monkeypatch.undo()
    lm = manager(tmp_path, clock, **UPGRADE)  # not refused: the failed start's lock went too
    lm.close()
