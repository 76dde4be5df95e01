"""Shared helpers for cleaner tests: a compacted log under an injected clock, writes, reads, the oracle."""

from __future__ import annotations

from pathlib import Path

from protocol.records import TOMBSTONE_FLAG, Codec, RecordBatchBuilder, is_tombstone, iter_batches
from storage import LogManager
from tests.storage.lead_helpers import Clock

COMPACT = {"log.cleanup.policy": "compact", "log.cleaner.enable": "false"}


def open_manager(path: Path, clock: Clock, **props: str) -> LogManager:
    merged = dict(COMPACT)
    merged.update({k: str(v) for k, v in props.items()})
    return LogManager.open([path], merged, clock)


def compacted_log(lm: LogManager, name: str = "t", **overrides: str):
    lm.create_topic(name, 1, {k.replace("_", "."): str(v) for k, v in overrides.items()})
    return lm.get_log(name, 0)


def write(log_, records: list[tuple[bytes | None, bytes | None, int]], *, codec: Codec = Codec.NONE,
          producer_id: int = -1, base_sequence: int = -1) -> int:  # fmt: skip
    """Append one batch of (key, value, record attributes); returns its base offset."""
    base = log_.log_end_offset
    builder = RecordBatchBuilder(base_offset=base, compression=codec, producer_id=producer_id,
                                 producer_epoch=0 if producer_id >= 0 else -1, base_sequence=base_sequence)  # fmt: skip
    now = log_.clock()
    for key, value, attributes in records:
        builder.append(key, value, timestamp=now, attributes=attributes)
    log_.append(builder.build(), base, base + len(records) - 1, now)
    return base


def read_batches(log_) -> list:
    """Every batch from the log start (CRC-checked), the way a consumer walks the log."""
    out, offset = [], log_.log_start_offset
    while offset < log_.log_end_offset:
        piece = log_.read(offset, 1 << 22, min_one_message=True)
        if piece is None:
            break
        batches = list(iter_batches(memoryview(bytearray(piece.read_bytes()))))
        for b in batches:
            b.ensure_valid()
        out += batches
        offset = batches[-1].next_offset
    return out


def read_records(log_) -> list:
    """Every record from the log start, fully decoded (``Record`` objects)."""
    start = log_.log_start_offset
    return [r for b in read_batches(log_) for r in b if r.offset >= start]


class Model:
    """What was written at each offset, and per key the latest write."""

    def __init__(self) -> None:
        self.at: dict[int, tuple[bytes | None, bytes | None, int]] = {}
        self.latest: dict[bytes, int] = {}

    def write(self, log_, records: list, **kw) -> None:
        base = write(log_, records, **kw)
        for i, rec in enumerate(records):
            self.at[base + i] = rec
            if rec[0] is not None:
                self.latest[rec[0]] = base + i

    def check(self, log_, *, cleaned_below: int = 0) -> list:
        """The oracle (see the module docstring of test_model)."""
        records = read_records(log_)
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets)), "offsets must strictly increase"
        for r in records:
            key, value, attributes = self.at[r.offset]
            assert (r.key, r.value, r.attributes) == (key, value, attributes), f"offset {r.offset} changed"
        by_key: dict = {}
        for r in records:
            by_key.setdefault(r.key, []).append(r.offset)
        for key, offset in self.latest.items():
            rec = self.at[offset]
            if offset not in by_key.get(key, ()):
                assert rec[1] is None or rec[2] & TOMBSTONE_FLAG, f"latest value of {key!r} at {offset} is missing"
                assert key not in by_key, f"{key!r}: older records survived its removed tombstone"
        below = [r for r in records if r.offset < cleaned_below]
        assert all(r.key is not None for r in below), "a keyless record survived cleaning"
        keys = [r.key for r in below]
        assert len(keys) == len(set(keys)), "a superseded record survived cleaning"
        return records

    def settled(self) -> dict:
        """key -> value once everything is cleaned and every tombstone's horizon has passed."""
        out = {}
        for key, offset in self.latest.items():
            _k, value, attributes = self.at[offset]
            if value is not None and not attributes & TOMBSTONE_FLAG:
                out[key] = value
        return out


def tombstone_flagged(record) -> bool:
    return bool(record.attributes & TOMBSTONE_FLAG) and is_tombstone(record)
