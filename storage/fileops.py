"""The few file operations that write a log or the saved topics, behind one seam for fault injection.

Segments, indexes, the topic files (``__topics.json``, ``__topics.journal``,
through ``topic_store.atomic_write`` and ``topic_journal.py``) and the
fsyncs of directories (``checkpoint.fsync_dir``) open, write, fsync, cut,
rename and remove their files through these functions instead of calling
``os`` directly, so tests can replace one of them (``monkeypatch.setattr(fileops, "pwrite", ...)``) to
simulate a full disk (ENOSPC), a read-only file system (EROFS) or a failing
one (EIO) at an exact point, or to hold a write back, and check that nothing
written before is damaged. Reads use ``os`` as usual.
"""

from __future__ import annotations

import os

from .errors import NOT_THE_DISK, NothingWritten


def open_file(path, flags: int, mode: int = 0o644) -> int:
    return os.open(path, flags, mode)


def open_to_save(path, flags: int, mode: int = 0o644) -> int:
    """``open_file`` as the first step of a save: a process limit met there (out of descriptors or memory)
    is ``NothingWritten``, since nothing has reached the disk yet."""
    try:
        return open_file(path, flags, mode)
    except OSError as exc:
        if exc.errno in NOT_THE_DISK:
            raise NothingWritten(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise


def pwrite(fd: int, data, position: int) -> int:
    return os.pwrite(fd, data, position)


def fsync(fd: int) -> None:
    os.fsync(fd)


def fsync_path(path) -> None:
    """fsync a file or a directory by name (a directory: the names made, renamed or removed in it)."""
    fd = open_file(path, os.O_RDONLY)
    try:
        fsync(fd)
    finally:
        os.close(fd)


def fsync_if_exists(path) -> None:
    """fsync a file by name (one whose descriptor was closed); nothing if it was deleted meanwhile."""
    try:
        fsync_path(path)
    except FileNotFoundError:
        return


def ftruncate(fd: int, size: int) -> None:
    os.ftruncate(fd, size)


def replace(source, target) -> None:
    """Rename ``source`` over ``target`` (atomically, on one file system)."""
    os.replace(source, target)


def unlink(path) -> None:
    os.unlink(path)


def write_all(fd: int, data, position: int) -> None:
    """Write every byte of ``data`` at ``position`` (``pwrite`` may write less than asked)."""
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        done += pwrite(fd, view[done:], position + done)
