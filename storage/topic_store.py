"""The broker's own metadata files in the first log dir: ``meta.properties``, ``__topics.json``, ``producer-id-block``.

Kafka keeps a topic's partition count, config overrides and id in its
controller; a single-node broker keeps them in ``__topics.json``, one JSON
object per topic (with the changes since it was written in
``__topics.journal``: ``topic_journal.py`` reads, appends and folds), and its
cluster id in ``meta.properties`` (``cluster.id`` in Kafka's UUID text form).
Both are written whole and atomically (``atomic_write``: a temporary file,
fsync, rename, fsync of the directory), so a crash leaves the old file or the
new one. A damaged ``__topics.json`` stops the start with a ``StorageError``:
configs such as ``cleanup.policy`` must never silently fall back to defaults. ``ProducerIds`` hands out producer
ids, reserving them ``PRODUCER_ID_BLOCK`` at a time in ``producer-id-block``; a damaged one stops the start
too: a producer id handed out twice would fence or mix up producers.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import attrs

from protocol.primitives import INT64_MAX  # a producer id is an int64 on the wire

from . import fileops
from .errors import ProducerIdsUnavailable, SaveInDoubt, StorageError

TOPICS_FILE = "__topics.json"
META_PROPERTIES = "meta.properties"
PRODUCER_IDS = "producer-id-block"
PRODUCER_ID_BLOCK = 1000
_PRODUCER_IDS_REMEDY = ("restore the file: one line, a number above every producer id ever handed out "
                        "(removing it would hand them out again)")


@attrs.define
class TopicMeta:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    overrides: dict[str, str]


def read_cluster_id(root: Path) -> str | None:
    """The cluster id ``meta.properties`` holds, or None before the dir is formatted."""
    path = root / META_PROPERTIES
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    return None


def write_cluster_id(root: Path, cluster_id: str) -> None:
    """Format ``root``: its ``meta.properties`` with ``cluster_id``."""
    root.mkdir(parents=True, exist_ok=True)
    atomic_write(root / META_PROPERTIES, f"version=1\ncluster.id={cluster_id}\n")


def load_cluster_id(root: Path) -> str:
    """The cluster id from ``meta.properties``, made and written on the first start."""
    cluster_id = read_cluster_id(root)
    if cluster_id is None:
        cluster_id = kafka_uuid(uuid.uuid4())
        write_cluster_id(root, cluster_id)
    return cluster_id


class TopicTable(dict):
    """The topics by name, and (``by_id``) by id: an index built on the first look-up after a topic came or
    went, so a request naming many topics by id costs one pass over the topics, not one each, and the
    requests after it none. Every way of changing the table drops the index; the index itself is never
    changed, only replaced, so one handed out stays as it was (a snapshot, read-only)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._by_id: Mapping[uuid.UUID, str] | None = None

    def __setitem__(self, name: str, meta: TopicMeta) -> None:
        self._by_id = None
        super().__setitem__(name, meta)

    def __delitem__(self, name: str) -> None:
        self._by_id = None
        super().__delitem__(name)

    def __ior__(self, other):
        self._by_id = None
        return super().__ior__(other)

    def pop(self, *args):
        self._by_id = None
        return super().pop(*args)

    def popitem(self):
        self._by_id = None
        return super().popitem()

    def setdefault(self, *args):
        self._by_id = None
        return super().setdefault(*args)

    def update(self, *args, **kwargs) -> None:
        self._by_id = None
        super().update(*args, **kwargs)

    def clear(self) -> None:
        self._by_id = None
        super().clear()

    def by_id(self) -> Mapping[uuid.UUID, str]:
        """Every topic's name by its id, read-only."""
        if self._by_id is None:
            self._by_id = MappingProxyType({meta.topic_id: name for name, meta in self.items()})
        return self._by_id

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self.by_id().get(topic_id)


def topic_from_json(name: object, raw: dict) -> TopicMeta:
    """A topic as ``__topics.json`` keeps it (``ValueError``, ``KeyError``... if it is not that)."""
    if not isinstance(name, str):
        raise TypeError(f"topic name {name!r}")
    overrides = {str(k): str(v) for k, v in raw["overrides"].items()}
    return TopicMeta(name, uuid.UUID(raw["topic_id"]), int(raw["num_partitions"]), overrides)


def topic_to_json(meta: TopicMeta) -> dict:
    """``meta`` as ``__topics.json`` keeps it."""
    return {"topic_id": str(meta.topic_id), "num_partitions": meta.num_partitions, "overrides": dict(meta.overrides)}


BAD_JSON = (ValueError, KeyError, TypeError, AttributeError)  # what reading a damaged file can raise


def damaged(path: Path, what: str, exc: Exception, remedy: str) -> StorageError:
    return StorageError(errno.EIO, f"{path}: unreadable {what} ({exc!r}); {remedy}")


def parse_topics(path: Path, text: bytes) -> dict[str, dict]:
    """The topics of ``__topics.json`` as saved, each checked; ``StorageError`` if the file is damaged."""
    try:
        raw = json.loads(text)
        for name, entry in raw.items():
            topic_from_json(name, entry)
        return raw
    except BAD_JSON as exc:
        raise damaged(path, "topic metadata", exc, "restore the file or remove it to start without topics") from None


def topics_text(raw: dict[str, dict]) -> str:
    """``__topics.json``: every topic by name, as saved."""
    return json.dumps(raw, indent=1, sort_keys=True)


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's text form of a UUID (``Uuid.toString``): URL-safe base64 without padding, 22 characters."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def atomic_write(path: Path, text: str, *, sync: bool = True, private: bool = False) -> None:
    """Replace ``path`` by ``text`` through a temporary file; ``sync``: fsync the file and its directory;
    ``private``: readable by the owner only (it may hold passwords). Every write, fsync and rename goes
    through ``fileops``, the fault-injection seam; out of descriptors or memory at the first step it is
    ``NothingWritten``; once renamed, a failed fsync of the directory is ``SaveInDoubt``."""
    tmp = path.with_name(path.name + ".tmp")
    fd = fileops.open_to_save(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o666)
    try:
        if private:
            os.fchmod(fd, 0o600)  # a temporary file left by a crash may have other bits
        fileops.write_all(fd, text.encode(), 0)
        if sync:
            fileops.fsync(fd)
    finally:
        os.close(fd)
    fileops.replace(tmp, path)
    if sync:
        try:
            fileops.fsync_path(path.parent)
        except OSError as exc:  # the new file is seen now, but a crash may undo the rename
            raise SaveInDoubt(exc.errno, f"the rename is not known to be on disk: {exc.strerror or exc}",
                              str(path)) from exc


PARTITION_METADATA = "partition.metadata"


def _partition_metadata(topic_id: uuid.UUID) -> str:
    return f"version: 0\ntopic_id: {kafka_uuid(topic_id)}\n"


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    """Kafka's ``partition.metadata``, not fsynced: ``__topics.json`` holds the id durably."""
    atomic_write(directory / PARTITION_METADATA, _partition_metadata(topic_id), sync=False)


def read_partition_topic_id(directory: Path) -> uuid.UUID | None:
    """The topic id in a directory's ``partition.metadata``; None if it is missing or unreadable (a crash
    can lose it, since it is not fsynced)."""
    try:
        lines = (directory / PARTITION_METADATA).read_text().splitlines()
        encoded = next(line for line in lines if line.startswith("topic_id: ")).removeprefix("topic_id: ")
        raw = base64.urlsafe_b64decode(encoded + "==")
    except (OSError, UnicodeDecodeError, StopIteration, ValueError):
        return None
    return uuid.UUID(bytes=raw) if len(raw) == 16 else None


class ProducerIds:
    """Producer ids never handed out twice, even across restarts: a block is saved before it is used.

    ``load`` reads ``producer-id-block`` at the start: one line, the first id of the next block to save (no
    file: 0); a file that is not that (cut short, not an integer, out of int64's range, unreadable) stops the
    start naming it, as a bad record in Kafka's metadata log stops the broker: the ids are not guessed, since
    one guessed too low would be handed out again. From then on the next block is known from memory.
    ``claim`` hands out the next id of the block in use (which starts at ``first``), from memory, or None once
    that block is used up; ``handed_out`` counts its ids handed out;
    ``save_next_block`` saves the block after the last one saved (the file then names the first id past
    it) and returns its first id, touching nothing ``claim`` reads, so it may run on a worker thread while
    ``claim`` goes on; ``use_block`` then puts it in use. One save at a time (the caller's turn). A save in
    doubt (``SaveInDoubt``: the file may hold the block or not) counts as saved, so no block is used twice,
    whatever the caller does next. Once the next block would end past int64's range it is
    ``ProducerIdsUnavailable``, as Kafka's controller answers ``generateNextProducerId`` once the producer
    ids are exhausted."""

    def __init__(self, dirs: list[Path]) -> None:
        self.dirs = dirs  # the file is in the first
        self.first = self._next = self._limit = 0
        self._saved = 0  # the first id of the next block to save, as the file holds it

    def load(self) -> None:
        """Read the file (see the class); ``StorageError`` naming it if it is damaged."""
        path = self.dirs[0] / PRODUCER_IDS
        try:
            text = path.read_bytes().decode("ascii")
            if not (text.endswith("\n") and text[:-1].isdigit()):
                raise ValueError(f"not one line holding a non-negative integer: {text[:40]!r}")
            if int(text) > INT64_MAX:
                raise ValueError(f"past int64's range: {text[:40]!r}")
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            raise damaged(path, "producer id block", exc, _PRODUCER_IDS_REMEDY) from None
        self._saved = int(text)

    def claim(self) -> int | None:
        if self._next >= self._limit:
            return None
        self._next += 1
        return self._next - 1

    def handed_out(self) -> int:
        """How many ids of the block in use are handed out."""
        return self._next - self.first

    def save_next_block(self) -> int:
        start = self._saved
        if start > INT64_MAX - PRODUCER_ID_BLOCK:
            raise ProducerIdsUnavailable(errno.ERANGE, f"the producer ids are exhausted (the next block is {start})")
        try:
            atomic_write(self.dirs[0] / PRODUCER_IDS, f"{start + PRODUCER_ID_BLOCK}\n")
        except SaveInDoubt:  # the file may hold the block now: no later save may hand it out again
            self._saved = start + PRODUCER_ID_BLOCK
            raise
        self._saved = start + PRODUCER_ID_BLOCK
        return start

    def use_block(self, start: int) -> None:
        self.first, self._next, self._limit = start, start, start + PRODUCER_ID_BLOCK
