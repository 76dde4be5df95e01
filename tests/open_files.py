"""Descriptors by where they point: leak checks that other tests cannot disturb, and a failing fsync.

The whole process's descriptor count moves whenever the garbage collector
frees an earlier test's files, so a test that wants to show its own files were
closed counts the descriptors whose target lies under its own directory.
``fsync_fails_under`` makes storage's fsync fail with EIO for the files of
one directory only (a log dir whose disk fails), the others' going through.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from storage import fileops
from storage.dir_locks import LOCK_FILE


def open_files_under(directory: Path) -> int:
    """How many of this process's descriptors are open on files under ``directory`` (deleted ones too), but
    log dirs' ``.lock`` files."""
    prefix, count = str(directory), 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor, for one)
            continue
        count += target.startswith(prefix) and os.path.basename(target) != LOCK_FILE
    return count


def fsync_fails_under(monkeypatch, directory: Path) -> None:
    """``storage.fileops.fsync`` raises EIO for a descriptor open on a file under ``directory``."""
    real, prefix = fileops.fsync, f"{directory}/"

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
            raise OSError(errno.EIO, "injected")
        real(fd)

    monkeypatch.setattr(fileops, "fsync", fsync)
