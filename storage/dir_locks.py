"""The ``.lock`` file of each log dir: one broker at a time on a dir, as Kafka's ``LogManager.lockLogDirs``.

Each online log dir's ``.lock`` is opened (made if missing) and locked with
``flock(LOCK_EX | LOCK_NB)`` as the manager opens, before a log is read, and
stays locked on that open descriptor for the manager's whole life: ``close``
releases it after the clean-shutdown marker is written. Another process that
holds it, or another ``LogManager`` of this process (``flock`` locks belong
to an open file, not to a process, as Kafka's ``FileLock`` refuses a lock its
own JVM holds), makes the start fail with ``LogDirInUse`` and Kafka's words.
Any other error (the dir is read-only, the file cannot be made) is a disk
error of that dir, which then goes offline, as Kafka's ``IOException`` there.

The lock is the kernel's: it goes when the process dies (a SIGKILLed broker
does not keep the next one out), and the descriptor is close-on-exec, so a
child process the broker runs does not keep it after the broker is gone.
The file is left in place at close, unlike Kafka's, which deletes it: a
start that opened the old file just before the removal would lock a file no
longer in the dir while the next start locks a new one, both running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from .errors import LogDirInUse

LOCK_FILE = ".lock"


class DirLocks:
    """The locked ``.lock`` files of one ``LogManager``, by log dir."""

    def __init__(self) -> None:
        self._held: dict[Path, int] = {}  # dir -> descriptor of its locked .lock

    def take(self, root: Path) -> None:
        """Lock ``root``'s ``.lock``; ``LogDirInUse`` if another holds it, ``OSError`` for any other failure."""
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            where = root.absolute()  # as Kafka's message names it (its log dirs are absolute files)
            raise LogDirInUse(f"Failed to acquire lock on file {LOCK_FILE} in {where}. A Kafka instance in another "
                              "process or thread is using this directory.") from None  # fmt: skip
        except BaseException:
            os.close(fd)
            raise
        self._held[root] = fd

    def holds(self, root: Path) -> bool:
        return root in self._held

    def release(self) -> None:
        """Unlock and close every ``.lock`` held (again: nothing)."""
        held, self._held = self._held, {}
        for fd in held.values():
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)  # explicitly: a forked copy of the descriptor must not keep it
            os.close(fd)
