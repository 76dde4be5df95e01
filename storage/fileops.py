"""The few file operations that write a log, behind one seam for fault injection.

Segments and indexes open, write, fsync and cut their files through these
functions instead of calling ``os`` directly, so tests can replace one of them (``monkeypatch.setattr(fileops,
"pwrite", ...)``) to simulate a full disk (ENOSPC) or a read-only file system
(EROFS) at an exact point, and check that nothing written before is damaged.
Everything else (reads, renames of whole files) uses ``os`` as usual.
"""

from __future__ import annotations

import os


def open_file(path, flags: int, mode: int = 0o644) -> int:
    return os.open(path, flags, mode)


def pwrite(fd: int, data, position: int) -> int:
    return os.pwrite(fd, data, position)


def fsync(fd: int) -> None:
    os.fsync(fd)


def fsync_if_exists(path) -> None:
    """fsync a file by name (one whose descriptor was closed); nothing if it was deleted meanwhile."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fsync(fd)
    finally:
        os.close(fd)


def ftruncate(fd: int, size: int) -> None:
    os.ftruncate(fd, size)


def write_all(fd: int, data, position: int) -> None:
    """Write every byte of ``data`` at ``position`` (``pwrite`` may write less than asked)."""
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        done += pwrite(fd, view[done:], position + done)
