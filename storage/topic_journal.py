"""Topic metadata saved one change at a time: ``__topics.json`` plus an append-only ``__topics.journal``.

Kafka's controller appends one record per metadata change to its metadata log
and answers CreateTopics once the record is committed (flushed, with one
voter); now and then it writes a snapshot of the whole image
(``metadata.log.max.record.bytes.between.snapshots``). Here the snapshot is
``__topics.json`` (``topic_store.py``: every topic by name, written whole and
atomically) and the log is ``__topics.journal`` next to it, so a change costs
one line, whatever the number of topics:

* Each line is the CRC-32C of its JSON (8 hex digits), a space and the JSON
  (as Kafka's metadata log checksums its record batches, so that damage to a
  line is found, not read as another value). The first line names the
  snapshot the journal follows:
  ``{"follows": "<sha256 of __topics.json's bytes, empty if there is none>", "version": 0}``.
  Each further line is one change, fsynced before the change is answered:
  ``{"op": "put", "name": ..., "topic_id": ..., "num_partitions": ..., "overrides": {...}}``
  (a topic made, grown or reconfigured: the whole topic) or
  ``{"op": "delete", "name": ...}``. The journal is made whole with its first
  change (``atomic_write``), then appended to.
* Loading reads the snapshot and replays the journal over it if the journal
  follows that very snapshot; one that follows another (a fold cut short by a
  crash after the new snapshot was written, or a snapshot restored by hand) is
  left out, with a warning. A crash while a line is appended can leave that
  last line cut or filled with zeros: a last piece without its newline, or a
  last line whose checksum fails, is ignored (its change was never answered);
  a line whose checksum holds but which is no change is damage.
  Any other damage stops the start with a ``StorageError``, as a damaged
  snapshot does: configs such as ``cleanup.policy`` must never silently fall
  back to defaults.
* A fold writes the snapshot anew from the topics in memory, then removes the
  journal (for good, with an fsync of the directory, when the snapshot came
  out the same, since the journal would follow it still); the next change
  starts a new one. It happens when the journal has
  grown past both ``FOLD_BYTES`` and the snapshot's size (so the rewrites cost
  O(1) a change over time, and a start replays at most about a snapshot's
  worth), at every start that finds a journal (a crash left it) and at a clean
  stop.
* A write that fails (no space, an I/O error: an append, a fold) is the
  failure of the log dir that holds the metadata, which stops the broker
  (``LogManager``, ``log_dir_failure.py``), as Kafka halts when it cannot
  write its metadata log: the raft thread's append or flush fails, and its
  fatal fault handler calls ``Exit.halt`` (``KafkaRaftClientDriver``,
  ``ProcessTerminatingFaultHandler``); a broker whose metadata log dir fails
  halts too (``ReplicaManager.handleLogDirFailure``, KIP-858). Nothing more
  is written to the files after it, not even a take-back: the change that
  failed is not answered (neither made nor refused: the broker stops), and
  the next start finds what the disk kept of it, the whole line (the change
  is made) or a cut one (ignored), as Kafka's start finds the records a
  failed flush may or may not have kept. A fold that fails at the start
  stops the start the same way.
* Except when the process is out of file descriptors or memory at a write's
  very first step (opening the journal or the temporary file): that is
  ``NothingWritten``, the files are as they were and stay writable. The
  change is refused (KAFKA_STORAGE_ERROR) and a fold is put off to the next
  change, as a log write out of descriptors fails its request alone
  (``log_dir_failure.py``): here Kafka, which keeps its metadata log open,
  would have failed before, on accepting the connection.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Iterator

import crc32c

from . import fileops
from .errors import NothingWritten
from .topic_store import (BAD_JSON, TOPICS_FILE, TopicMeta, TopicTable, atomic_write, damaged, parse_topics,
                          topic_from_json, topic_to_json, topics_text)  # fmt: skip

log = logging.getLogger(__name__)

JOURNAL_FILE = "__topics.journal"
FOLD_BYTES = 1 << 20
_REMEDY = f"restore the file, or remove it to start from {TOPICS_FILE} alone"


def _digest(snapshot: bytes | None) -> str:
    return "" if snapshot is None else hashlib.sha256(snapshot).hexdigest()


def _read(path: Path, what: str, remedy: str) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise damaged(path, what, exc, remedy) from None


def _apply(topics: dict[str, dict], change: dict) -> None:
    """One journal line's change on the topics as saved; ``ValueError``... if it is not a change."""
    name, op = change["name"], change["op"]
    if op == "put":
        entry = {key: change[key] for key in ("topic_id", "num_partitions", "overrides")}
        topic_from_json(name, entry)
        topics[name] = entry
    elif op == "delete" and isinstance(name, str):
        topics.pop(name, None)
    else:
        raise ValueError(f"not a change: {change!r}")


def _line(entry: dict) -> str:
    """``entry`` as a journal line: the CRC-32C of its JSON (8 hex digits), a space, the JSON, a newline."""
    text = json.dumps(entry, sort_keys=True)
    return f"{crc32c.crc32c(text.encode()):08x} {text}\n"


def _entry(line: bytes) -> dict:
    """A journal line's JSON (without its newline); ``ValueError`` if its checksum does not match."""
    crc, space, text = line.partition(b" ")
    if not space or len(crc) != 8 or int(crc, 16) != crc32c.crc32c(text):
        raise ValueError("checksum mismatch")
    return json.loads(text)


def _replay(path: Path, journal: bytes, follows: str, topics: dict[str, dict]) -> None:
    """Apply the journal's changes to ``topics`` if it follows the snapshot ``follows``; see the module doc."""
    lines = journal.split(b"\n")
    torn = lines.pop()  # empty when the journal ends with a whole line
    try:
        if len(lines) < (1 if torn else 2):  # the header and the first change are written together
            raise ValueError("no whole change after the header")
        header = _entry(lines[0])
        if header.get("follows") != follows:
            log.warning("%s follows another %s: its changes are left out", path, TOPICS_FILE)
            return
    except BAD_JSON as exc:
        raise damaged(path, "topic metadata journal", exc, _REMEDY) from None
    for number, line in enumerate(lines[1:], start=2):
        try:
            change = _entry(line)
        except ValueError as exc:
            if torn or number < len(lines):
                raise damaged(path, f"topic metadata journal line {number}", exc, _REMEDY) from None
            torn = line  # the last line, cut by a crash while it was written
            break
        try:
            _apply(topics, change)
        except BAD_JSON as exc:  # its checksum holds: written so, not cut
            raise damaged(path, f"topic metadata journal line {number}", exc, _REMEDY) from None
    if torn:
        log.warning("%s: ignoring its last line, cut short by a crash (%d bytes)", path, len(torn))


def _load(root: Path) -> tuple[dict[str, dict], bytes | None]:
    snapshot_path = root / TOPICS_FILE
    snapshot = _read(snapshot_path, "topic metadata", "restore the file or remove it to start without topics")
    topics = parse_topics(snapshot_path, snapshot) if snapshot is not None else {}
    journal = _read(root / JOURNAL_FILE, "topic metadata journal", _REMEDY)
    if journal is not None:
        _replay(root / JOURNAL_FILE, journal, _digest(snapshot), topics)
    return topics, snapshot


def read_topics(root: Path) -> dict[str, dict]:
    """The topics as saved in ``root``: the snapshot with the journal's changes; nothing is written."""
    return _load(root)[0]


class TopicJournal:
    """The saved topics of one log dir (the first): ``put`` and ``delete`` append, ``fold`` rewrites. After a
    write that failed, nothing more is written (``OSError`` at once): see the module docstring."""

    def __init__(self, root: Path, topics: dict[str, dict], snapshot: bytes | None) -> None:
        self.root = root
        self.path = root / JOURNAL_FILE
        self.fold_bytes = FOLD_BYTES
        self._topics = topics  # as saved: name -> the JSON of its topic
        self._follows, self._snapshot_size = _digest(snapshot), len(snapshot or b"")
        self._journal_size = 0  # 0: no journal follows the snapshot yet; the next change starts one
        self.failed: OSError | None = None  # the write that failed: the files' state is in doubt from then on

    @classmethod
    def open(cls, root: Path) -> tuple["TopicJournal", TopicTable]:
        """The saved topics of ``root`` and the journal to save their changes; a journal a crash left is
        folded at once (``OSError`` if that fails; ``StorageError`` if the files are damaged)."""
        topics, snapshot = _load(root)
        journal = cls(root, topics, snapshot)
        if journal.path.exists():
            journal.fold()
        table = TopicTable({name: topic_from_json(name, entry) for name, entry in topics.items()})
        return journal, table

    def put(self, meta: TopicMeta) -> None:
        """Save ``meta`` (a topic made, grown or reconfigured) durably before returning; ``OSError`` if not."""
        entry = topic_to_json(meta)
        self._change({"op": "put", "name": meta.name, **entry}, meta.name, entry)

    def delete(self, name: str) -> None:
        """Forget the topic ``name`` durably before returning; ``OSError`` if that cannot be saved."""
        self._change({"op": "delete", "name": name}, name, None)

    def _change(self, change: dict, name: str, entry: dict | None) -> None:
        with self._writing():
            self._append(_line(change))
        if entry is None:
            self._topics.pop(name, None)
        else:
            self._topics[name] = entry

    @property
    def wants_fold(self) -> bool:
        """The journal has outgrown both ``fold_bytes`` and the snapshot: time to ``fold``."""
        return self._journal_size > max(self.fold_bytes, self._snapshot_size)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A write of the files: refused at once after one that failed, and remembered if it fails."""
        if self.failed is not None:
            raise OSError(self.failed.errno, f"{self.root / TOPICS_FILE}: not written since a write failed "
                                             f"({self.failed.strerror or self.failed})")  # fmt: skip
        try:
            yield
        except NothingWritten:  # out of descriptors or memory before a byte was written: the files are as they were
            raise
        except OSError as exc:
            self.failed = exc
            raise

    def _append(self, line: str) -> None:
        if not self._journal_size:  # the header and the first change at once, or no journal
            text = _line({"version": 0, "follows": self._follows}) + line
            atomic_write(self.path, text)
            self._journal_size = len(text)
            return
        fd = fileops.open_to_save(self.path, os.O_WRONLY)
        try:  # at its known end: nothing is appended after a failure, so the end is known
            fileops.write_all(fd, line.encode(), self._journal_size)
            fileops.fsync(fd)
        finally:
            os.close(fd)
        self._journal_size += len(line)

    def fold(self) -> None:
        """Write ``__topics.json`` anew with every topic and drop the journal (``OSError`` if that fails)."""
        with self._writing():
            text = topics_text(self._topics)
            digest = _digest(text.encode())
            if digest != self._follows:
                atomic_write(self.root / TOPICS_FILE, text)
                self._follows, self._snapshot_size = digest, len(text)
                try:  # a journal left behind follows the old snapshot: the next start leaves it out
                    self._remove(sync=False)
                except OSError as exc:
                    log.warning("%s: could not remove it after a fold: %s", self.path, exc)
            else:  # the same snapshot: the journal, which it would still follow, must go for good
                self._remove(sync=True)
            self._journal_size = 0

    def _remove(self, sync: bool) -> None:
        """Remove the journal (if there is one); ``sync``: for good, with an fsync of its directory."""
        try:
            fileops.unlink(self.path)
        except FileNotFoundError:
            pass
        if sync:
            fileops.fsync_path(self.root)

    def close(self) -> None:
        """A clean stop: fold whatever the journal holds, so the next start reads the snapshot alone (not
        after a failed write: the next start replays what the files hold)."""
        if self.failed is None and (self._journal_size or self.path.exists()):
            try:
                self.fold()
            except OSError as exc:  # the journal still holds every change: the next start folds it
                log.error("%s: folding the topic metadata journal failed: %s", self.root / TOPICS_FILE, exc)
