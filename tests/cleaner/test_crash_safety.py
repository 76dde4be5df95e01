"""A crash, or an I/O error, at every file operation of a cleaning round.

The file operations of a round (creating, writing, fsyncing, truncating,
renaming, touching, unlinking files, and fsyncing the directory) all go
through a handful of ``os`` functions; each test counts them and fails the
N-th, for N = 1, 2, ... until a round gets through.

* ``Crash`` is a ``BaseException`` (like the process dying): nothing catches
  it; the log directory is then opened again from disk as after a kill, and
  the oracle must hold, no ``.cleaned``/``.swap``/``.deleted`` file may be
  left, and a later round must finish the job.
* ``OSError`` (EIO): the cleaner marks the partition uncleanable and goes on;
  the log keeps serving the records it had (minus those of groups already
  swapped in before the error), the oracle holds, and after a restart too.
"""

from __future__ import annotations

import builtins
import errno
import os

import pytest

from cleaner import CleanerConfig, LogCleaner
from storage import StorageError
from tests.cleaner.helpers import Model, compacted_log, open_manager, read_records
from tests.storage.lead_helpers import Clock, crash

OPS = ("open", "pwrite", "write", "fsync", "ftruncate", "rename", "replace", "utime", "unlink")


class Crash(BaseException):
    pass


class Faults:
    def __init__(self, monkeypatch, fail_at: int, exc) -> None:
        self.calls, self.fail_at, self.exc, self.hit = 0, fail_at, exc, False
        for name in OPS:
            monkeypatch.setattr(os, name, self._wrap(getattr(os, name)))
        real_open = builtins.open
        monkeypatch.setattr(builtins, "open", self._wrap(real_open, only=lambda a: str(a[0]).endswith(".cleaned")))

    def _wrap(self, fn, only=lambda _a: True):
        def wrapped(*args, **kwargs):
            if only(args):
                self.calls += 1
                if self.calls == self.fail_at:
                    self.hit = True
                    raise self.exc() if self.exc is Crash else OSError(errno.EIO, "injected")
            return fn(*args, **kwargs)

        return wrapped


def _history(path, clock):
    lm = open_manager(path, clock)
    log_ = compacted_log(lm, segment_bytes=700, delete_retention_ms=0, min_cleanable_dirty_ratio=0.01)
    model = Model()
    for i in range(60):
        model.write(log_, [(b"k%d" % (i % 9), None if i % 11 == 0 else b"v%d" % i, 0)])
    log_.roll()
    return lm, log_, model


def crash_round(lm, clock, monkeypatch, fail_at: int) -> None:
    """Run one cleaner round that crashes at its ``fail_at``-th file operation (skip past its last one); the
    process is gone after it (``crash``)."""
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    with monkeypatch.context() as m:
        faults = Faults(m, fail_at, Crash)
        try:
            cleaner.run_once()
        except Crash:
            pass
    crash(lm)
    if not faults.hit:
        pytest.skip(f"the round has fewer than {fail_at} file operations")


def _stray(path) -> list:
    return [p.name for p in path.rglob("*") if p.name.endswith((".cleaned", ".swap", ".deleted"))]


@pytest.mark.parametrize("fail_at", range(1, 166))
def test_a_crash_at_any_file_operation_loses_nothing(tmp_path, monkeypatch, fail_at):
    clock = Clock()
    lm, log_, model = _history(tmp_path, clock)
    crash_round(lm, clock, monkeypatch, fail_at)
    lm2 = open_manager(tmp_path, clock)  # the old objects are dropped: a crash
    log2 = lm2.get_log("t", 0)
    assert not _stray(tmp_path)
    model.check(log2, cleaned_below=lm2.cleaner_offsets().get(("t", 0), 0))
    again = LogCleaner(lm2, CleanerConfig(), clock=clock)
    while again.run_once():
        pass
    model.check(log2, cleaned_below=log2.log_end_offset)


@pytest.mark.parametrize("fail_at", range(1, 120, 3))
def test_an_io_error_marks_the_partition_uncleanable_and_serves_the_same_records(tmp_path, monkeypatch, fail_at):
    clock = Clock()
    lm, log_, model = _history(tmp_path, clock)
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    before = [(r.offset, r.value) for r in read_records(log_)]
    with monkeypatch.context() as m:
        faults = Faults(m, fail_at, OSError)
        cleaner.run_once()
    if not faults.hit:
        pytest.skip(f"the round has fewer than {fail_at} file operations")
    if log_.offline:  # the swap failed: Kafka's replaceSegments takes the log dir offline
        with pytest.raises(StorageError):
            read_records(log_)
    elif cleaner.manager.uncleanable:
        assert set((r.offset, r.value) for r in read_records(log_)) <= set(before)  # groups swapped before stay
        assert cleaner.manager.uncleanable_by_dir()[str(tmp_path)][0] == 1
        assert not cleaner.run_once()  # set aside
    if not log_.offline:
        model.check(log_, cleaned_below=lm.cleaner_offsets().get(("t", 0), 0))
    lm.close()
    lm2 = open_manager(tmp_path, clock)
    model.check(lm2.get_log("t", 0), cleaned_below=lm2.cleaner_offsets().get(("t", 0), 0))
    assert not _stray(tmp_path)
