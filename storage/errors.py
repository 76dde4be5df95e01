"""Storage errors, each mapping to what the broker answers.

``StorageError`` is an ``OSError`` (disk full, read-only directory, I/O
failure): the broker answers KAFKA_STORAGE_ERROR and nothing already written
is damaged. ``ConfigError`` names the bad key. ``OffsetOutOfRangeError`` is
for reads and deletions outside ``[log_start_offset, log_end_offset]``.
``LogDirsFailed`` is the failure the broker cannot run past: no log dir
left online, or the first one (which holds the metadata) gone; ``MetadataDirFailed``
is the one a metadata change meets when its save fails or is in doubt (the
broker closes the connection without an answer, as Kafka halts before it
answers). Neither is an ``OSError``, so not a ``StorageError``: no handler
that answers a disk failure KAFKA_STORAGE_ERROR (``except OSError``, ``except
StorageError``) can catch one and answer it; they go through to dispatch
(which closes the connection) or end the start (``__main__``: status 1).
They carry ``errno`` and ``strerror`` and print as an ``OSError`` does.
``NothingWritten``: a save refused at its first step because the process
is out of file descriptors or memory (``NOT_THE_DISK``): nothing reached the
disk, so it is answered KAFKA_STORAGE_ERROR and the dir stays online.
``SaveInDoubt``: a save whose new file was renamed in place but whose
directory fsync failed: the metadata log dir fails (the broker stops).
``ProducerIdsUnavailable``: the next block of producer ids was not saved
(the broker answers COORDINATOR_LOAD_IN_PROGRESS, as Kafka while a block is
being fetched).
``LogDirInUse``: another broker holds a log dir's ``.lock`` (``dir_locks.py``).
"""

from __future__ import annotations

import errno

NOT_THE_DISK = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})  # out of descriptors or memory


class StorageError(OSError):
    """A failed disk operation on a log."""


class LogDirsFailed(Exception):
    """The broker cannot go on with the log dirs left online (Kafka halts with status 1). Not a
    ``StorageError``: the broker stops; nothing answers it as a request's disk failure."""

    def __init__(self, errno_: int, strerror: str) -> None:
        super().__init__(errno_, strerror)
        self.errno, self.strerror = errno_, strerror

    def __str__(self) -> str:
        return f"[Errno {self.errno}] {self.strerror}"  # as an OSError prints: the messages are unchanged


class MetadataDirFailed(LogDirsFailed):
    """A metadata change could not be saved, or its save is in doubt: the first log dir (the metadata's) is
    offline and the broker stops. The change is neither made nor refused (the next start finds what the disk
    kept of it): not answered, whatever ``except OSError`` / ``except StorageError`` it passes through."""


class NothingWritten(StorageError):
    """A save refused before it wrote anything (its first ``open`` met a process limit, ``NOT_THE_DISK``):
    nothing to take back, and no sign of a failing disk."""


class SaveInDoubt(StorageError):
    """A save whose new file is in place but not known to be on disk (``atomic_write``: the directory's
    fsync failed after the rename): a restart may find it or not, so the change is neither made nor
    refused; the metadata log dir fails, as Kafka halts when its metadata log's flush fails."""


class ProducerIdsUnavailable(StorageError):
    """The next block of producer ids could not be saved (nothing handed out): try again later."""


class LogDirInUse(Exception):
    """A log dir's ``.lock`` is held by another broker: another process, or another ``LogManager`` of this one."""


class ConfigError(ValueError):
    """An unknown config key or an invalid value; the message names the key."""


class OffsetOutOfRangeError(ValueError):
    """An offset outside the log's ``[log_start_offset, log_end_offset]``."""
