"""minibroker's storage: partition logs in Kafka's on-disk layout (synchronous, no trio).

* ``LogManager`` — every log of the broker, topic metadata, checkpoints,
  recovery on open, timed duties and durable group commit;
* ``new_logs`` — topic creation and growth one log at a time, seen whole;
* ``log_move`` — a partition's log moving to another of ``log.dirs``, crash-safe;
* ``dir_checkpoints`` — each log dir's recovery-point, log-start and cleaner checkpoints;
* ``Log`` — one partition: segments, offsets, rolls, reads, retention;
  ``append`` returns an ``AppendInfo``, ``read`` a ``LogSlice`` for sendfile;
* ``group_commit`` — durable mode: one fsync round for every waiting producer;
* ``retention`` — DeleteRecords, retention.ms/bytes, delayed file removal;
* ``log_loader`` — opening a partition directory after a crash;
* ``log_txn`` — producer state and transactions of a log: last stable offset, aborted transactions;
* ``Segment`` — one ``.log`` with its ``.index`` and ``.timeindex`` (``index``) and ``.txnindex``
  (``txn_index``: ``AbortedTxn`` entries);
* ``config`` — topic configs with Kafka's names, broker synonyms and checks;
* ``checkpoint`` — Kafka's checkpoint text files; ``fileops`` — the fault-injection seam.

See ``storage/README.md`` for the files on disk and the flush modes.
"""

from .config import TOPIC_CONFIGS, ConfigEntry, ConfigModel, LogConfig
from .errors import (ConfigError, LogDirInUse, LogDirsFailed, MetadataDirFailed, NothingWritten, OffsetOutOfRangeError,
                     ProducerIdsUnavailable, SaveInDoubt, StorageError)  # fmt: skip
from .log import Log
from .log_info import AppendInfo, LogSlice, SegmentInfo
from .log_manager import LogManager
from .topic_store import TopicMeta
from .txn_index import AbortedTxn

__all__ = [
    "TOPIC_CONFIGS",
    "AbortedTxn",
    "AppendInfo",
    "ConfigEntry",
    "ConfigError",
    "ConfigModel",
    "Log",
    "LogConfig",
    "LogDirInUse",
    "LogDirsFailed",
    "MetadataDirFailed",
    "LogManager",
    "NothingWritten",
    "LogSlice",
    "OffsetOutOfRangeError",
    "ProducerIdsUnavailable",
    "SaveInDoubt",
    "SegmentInfo",
    "StorageError",
    "TopicMeta",
]
