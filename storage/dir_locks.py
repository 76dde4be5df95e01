"""The ``.lock`` file of each log dir: one broker at a time on a dir, as Kafka's ``LogManager.lockLogDirs``.

Each online log dir's ``.lock`` is opened (made if missing) and locked with
``flock(LOCK_EX | LOCK_NB)`` as the manager opens, before a log is read, and
stays locked on that open descriptor for the manager's whole life: ``close``
releases it after the clean-shutdown marker is written. Another process that
holds it, or another ``LogManager`` of this process (``flock`` locks belong
to an open file, not to a process, as Kafka's ``FileLock`` refuses a lock its
own JVM holds), makes the start fail with ``LogDirInUse`` and Kafka's words.
The same descriptor also takes a write lock on the whole file as a POSIX
record lock (``fcntl``), which is the kind Java's ``FileChannel.tryLock``
takes on Linux: ``flock`` and record locks do not see each other, so without
it a Java Kafka broker and this one could run on one dir together. It is an
open-file-description lock (``F_OFD_SETLK``, Linux 3.15+), tied to this
descriptor like the ``flock``, so closing another descriptor of the file in
this process does not drop it (a classic record lock would go); where the
kernel has none, the ``flock`` alone is taken.
Any other error (the dir is read-only, the file cannot be made) is a disk
error of that dir, which then goes offline, as Kafka's ``IOException`` there.

A dir that goes offline while the broker runs has its lock released then,
as Kafka's ``handleLogDirFailure`` does. The lock is the kernel's: it goes when the process dies (a SIGKILLed broker
does not keep the next one out), and the descriptor is close-on-exec, so a
child process the broker runs does not keep it after the broker is gone.
The file is left in place at close, unlike Kafka's, which deletes it: a
start that opened the old file just before the removal would lock a file no
longer in the dir while the next start locks a new one, both running.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
from pathlib import Path

from .errors import LogDirInUse

LOCK_FILE = ".lock"
# struct flock on Linux (x86-64 and arm64): l_type, l_whence (short), l_start, l_len (off_t), l_pid (int);
# l_len 0 is to the end of the file, whatever it grows to. OFD locks want l_pid 0.
_WHOLE_FILE = struct.Struct("hhqqi4x")
_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", None)


class DirLocks:
    """The locked ``.lock`` files of one ``LogManager``, by log dir."""

    def __init__(self) -> None:
        self._held: dict[Path, int] = {}  # dir -> descriptor of its locked .lock
        self._guard = threading.Lock()  # a dir can fail on a worker thread (a group-commit fsync)

    def take(self, root: Path) -> None:
        """Lock ``root``'s ``.lock``; ``LogDirInUse`` if another holds it, ``OSError`` for any other failure."""
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _record_lock(fd)
        except BlockingIOError:
            os.close(fd)
            where = root.absolute()  # as Kafka's message names it (its log dirs are absolute files)
            raise LogDirInUse(f"Failed to acquire lock on file {LOCK_FILE} in {where}. A Kafka instance in another "
                              "process or thread is using this directory.") from None  # fmt: skip
        except BaseException:
            os.close(fd)
            raise
        with self._guard:
            self._held[root] = fd

    def holds(self, root: Path) -> bool:
        return root in self._held

    def release(self) -> None:
        """Unlock and close every ``.lock`` held (again: nothing)."""
        with self._guard:
            held, self._held = self._held, {}
        for fd in held.values():
            _unlock(fd)

    def release_dir(self, root: Path) -> None:
        """Unlock and close ``root``'s ``.lock``, if held: the dir went offline, as Kafka's
        ``handleLogDirFailure`` destroys that dir's lock (so it can be replaced while the broker runs)."""
        with self._guard:
            fd = self._held.pop(root, None)
        if fd is not None:
            _unlock(fd)


def _unlock(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)  # explicitly: a forked copy of the descriptor must not keep it
        _record_lock(fd, fcntl.F_UNLCK)
    os.close(fd)


def _record_lock(fd: int, kind: int = fcntl.F_WRLCK) -> None:
    """A write lock (or with ``F_UNLCK`` none) on the whole file as an open-file-description record lock;
    ``BlockingIOError`` when another holds a record lock on it (a Java process's ``FileChannel.tryLock``)."""
    if _OFD_SETLK is None:
        return
    try:
        fcntl.fcntl(fd, _OFD_SETLK, _WHOLE_FILE.pack(kind, os.SEEK_SET, 0, 0, 0))
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):  # the kernel's two answers for a lock held elsewhere
            raise BlockingIOError(exc.errno, exc.strerror) from None
        raise

