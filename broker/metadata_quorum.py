"""The KRaft metadata quorum this node stands for: the leader epoch and high watermark DescribeQuorum reports.

A Kafka node with ``process.roles=broker,controller`` alone in its quorum is
the only voter and the leader of the metadata log (``__cluster_metadata``
partition 0). It is elected at each start, each election bumps the leader
epoch (kept in its ``quorum-state`` file), and the new leader appends a
leader-change record. Every metadata change (a topic, its partitions, a
config, an ACL, a quota, a SCRAM credential) appends records, and with one
voter a record is committed as soon as it is written: the high watermark is
the log's end offset.

This broker keeps its metadata in files of the first log dir, not in a log.
``MetadataQuorum`` keeps the two numbers in ``__quorum_state.json`` there
(``{"version": 0, "leader_epoch": e, "end_offset": o}``):

* ``start``: the leader epoch and the end offset each grow by one (the
  election and its leader-change record) and are saved at once; a new log
  dir starts at epoch 1, end offset 1.
* ``append``: one record per metadata change. Each store of metadata calls it
  through its ``on_metadata_change`` hook after it has saved the change: the
  topics (one line of ``__topics.journal`` per topic creation, deletion,
  partition increase, topic configs; ``storage.LogManager``), the dynamic
  broker configs, the group configs, the ACLs, the client quotas, the SCRAM credentials and each
  block of producer ids (Kafka's ``ProducerIdsRecord``). The new
  offset is saved at once (fsync), so it never goes back, across restarts
  either. A change that is refused or only validated writes nothing and
  appends nothing. A topic creation that fails on disk part way has
  saved two changes (its pending entry, then its removal) and so counts two
  records, where Kafka's controller would write none. Every store calls
  it from the worker thread that saved the change (``broker.topics.run_steps``
  for the topics, ``store_saves.py`` for the others, producer ids included), so its fsync never runs
  on the event loop; stores save side by side, so appends take a lock.

For the metrics (``quorum_metrics.py``) it also keeps, in memory only, the
wall time (``clock``, ms) of the last record (the start's leader-change
record, then each change) and the records appended in Kafka's sample window
(``append_records``: the broker's ``metrics.num.samples`` samples of
``metrics.sample.window.ms``, 2 of 30 s by default, as Kafka's raft metrics
have them), recorded by the stores' worker threads and read by the metrics
endpoint's under the samples' own lock (``sampled_stat.Samples``).

A file that cannot be read stops the start (``StorageError``), as Kafka's
unreadable ``quorum-state`` does. One that cannot be written is logged and
the numbers are kept in memory: the change itself was made.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Callable

from storage import StorageError
from storage.topic_store import atomic_write

from .clock import wall_clock_ms
from .sampled_stat import KAFKA_METRIC_WINDOWS, Samples

log = logging.getLogger(__name__)
FILE_NAME = "__quorum_state.json"


def _read(path: Path) -> tuple[int, int]:
    """The saved ``(leader epoch, end offset)``; ``(0, 0)`` before the first start."""
    try:
        data = json.loads(path.read_text())
        epoch, offset = data["leader_epoch"], data["end_offset"]
        if not all(type(n) is int and n >= 0 for n in (epoch, offset)):
            raise ValueError(f"not two non-negative integers: {epoch!r}, {offset!r}")
    except FileNotFoundError:
        return 0, 0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise StorageError(f"{path} is damaged ({exc!r}): mend or remove it") from None
    return epoch, offset


class MetadataQuorum:
    """The leader epoch and metadata end offset of this one-node quorum; see the module docstring."""

    def __init__(self, path: Path, leader_epoch: int, end_offset: int,
                 clock: Callable[[], int] = wall_clock_ms,
                 metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:  # fmt: skip
        self.path = path
        self.leader_epoch = leader_epoch
        self.end_offset = end_offset
        self.clock = clock
        self.last_append_ms = clock()
        self.append_records = Samples(*metric_windows)
        self._appending = threading.Lock()  # the stores append from their worker threads

    @classmethod
    def start(cls, log_dir: str | Path, clock: Callable[[], int] = wall_clock_ms,
              metric_windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> "MetadataQuorum":
        """This start's election: the saved epoch and end offset plus one each, saved."""
        path = Path(log_dir) / FILE_NAME
        epoch, offset = _read(path)
        quorum = cls(path, epoch + 1, offset, clock, metric_windows)
        quorum.append()  # the leader-change record
        log.info("metadata quorum: leader epoch %d, end offset %d", quorum.leader_epoch, quorum.end_offset)
        return quorum

    @property
    def high_watermark(self) -> int:
        """Every record is committed once written: one voter is a majority."""
        return self.end_offset

    @property
    def last_offset(self) -> int:
        """Offset of the last record (the metadata image's offset, in Kafka's terms)."""
        return self.end_offset - 1

    def append(self) -> None:
        """A metadata change was stored: its record joins the log (from any thread)."""
        with self._appending:
            self.end_offset += 1
            self.last_append_ms = self.clock()
            self.append_records.record(1.0, self.last_append_ms)
            self._save()

    def _save(self) -> None:
        data = {"version": 0, "leader_epoch": self.leader_epoch, "end_offset": self.end_offset}
        try:
            atomic_write(self.path, json.dumps(data) + "\n")
        except OSError as exc:
            log.error("could not save the metadata quorum state in %s: %s", self.path, exc)
