"""Shared helpers for storage tests: an injected clock, configs, batches."""

from __future__ import annotations

from pathlib import Path

from protocol.records import RecordBatchBuilder, iter_batches
from storage import Log, LogManager
from storage.config import ConfigModel


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def config(**overrides: str):
    return ConfigModel.from_broker_props({}).effective({k.replace("_", "."): str(v) for k, v in overrides.items()})


def open_log(path: Path, clock: Clock, **overrides) -> Log:
    return Log.open(path, "t", 0, config(**overrides), clock)


def batch(base_offset: int, n: int = 1, ts: int = 1_700_000_000_000, value: bytes = b"v" * 50, key=b"k") -> bytes:
    b = RecordBatchBuilder(base_offset=base_offset)
    for i in range(n):
        b.append(key, value, timestamp=ts + i)
    return b.build()


def append(log: Log, n: int = 1, ts: int | None = None, value: bytes = b"v" * 50) -> tuple[int, int]:
    first = log.log_end_offset
    ts = log.clock() if ts is None else ts
    log.append(batch(first, n, ts, value), first, first + n - 1, ts + n - 1)
    return first, first + n - 1


def read_all(log: Log) -> list[tuple[int, bytes | None]]:
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        piece = log.read(offset, 1 << 20, min_one_message=True)
        if piece is None:
            break
        batches = list(iter_batches(memoryview(piece.read_bytes())))
        for b in batches:
            out += [(r.offset, r.value) for r in b if r.offset >= offset]
        offset = batches[-1].next_offset
    return out


def manager(path: Path, clock: Clock, **props: str) -> LogManager:
    return LogManager.open([path], {k: str(v) for k, v in props.items()}, clock)


def crash(manager: LogManager) -> None:
    """``manager``'s process dies: nothing is flushed, checkpointed or closed, no marker is written; only its
    dirs' locks go, as the kernel drops them with the process (``storage/dir_locks.py``)."""
    manager.dir_locks.release()


def reopen(path: Path, clock: Clock) -> tuple[LogManager, Log]:
    """Open the log directory again (after a close, or after ``crash``)."""
    lm = manager(path, clock)
    return lm, lm.get_log("t", 0)
