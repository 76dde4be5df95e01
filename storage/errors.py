"""Storage errors, each mapping to what the broker answers.

``StorageError`` is an ``OSError`` (disk full, read-only directory, I/O
failure): the broker answers KAFKA_STORAGE_ERROR and nothing already written
is damaged. ``ConfigError`` names the bad key. ``OffsetOutOfRangeError`` is
for reads and deletions outside ``[log_start_offset, log_end_offset]``.
``LogDirsFailed`` is the storage error the broker cannot run past: no log dir
left online, or the first one (which holds the metadata) gone.
``LogDirInUse``: another broker holds a log dir's ``.lock`` (``dir_locks.py``).
"""

from __future__ import annotations


class StorageError(OSError):
    """A failed disk operation on a log."""


class LogDirsFailed(StorageError):
    """The broker cannot go on with the log dirs left online (Kafka halts with status 1)."""


class LogDirInUse(Exception):
    """A log dir's ``.lock`` is held by another broker: another process, or another ``LogManager`` of this one."""


class ConfigError(ValueError):
    """An unknown config key or an invalid value; the message names the key."""


class OffsetOutOfRangeError(ValueError):
    """An offset outside the log's ``[log_start_offset, log_end_offset]``."""
