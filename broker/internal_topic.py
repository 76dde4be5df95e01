"""An internal compacted topic the broker writes itself (``__consumer_offsets``, ``__transaction_state``).

``InternalTopic`` creates the topic on first use, in the background and one
partition at a time (``TopicRegistry.create`` under ``topics.changes``), so
other connections are served meanwhile; like Kafka, callers answer
COORDINATOR_NOT_AVAILABLE until it exists (``ensure_topic`` is False) or
wait for it (``ready``). A topic of that name that already exists is used as
it is, as Kafka does, with a warning if it is not compacted (older versions
of this broker auto-created it as an ordinary topic). A key lives in
partition ``abs(java_hash(key)) % partitions`` as in Kafka.

``append_reporting(index, build)`` writes the v2 batch ``build(base_offset)``
returns through ``Broker.append_own`` (so fetchers wake up, durable mode's
group commit covers it and the topic's metrics count it) and returns once
``Broker.wait_durable`` does: what the broker acknowledges survives a crash.
It fails with the error the append met (a storage error, a batch too large),
for callers that map it as Kafka does; a batch too large counts as Kafka's
log counts it (a produce request, its bytes rejected) unless the limit is
the group coordinator runtime's, checked before the log. Its two halves are
there on their own too, for a caller that orders its appends under a lock
but waits for durability outside it: ``append_now`` (in the log, not yet
durable; no await) and ``durable(index)``. ``records_batch`` and
``marker_batch`` make such builders (a marker is a COMMIT or ABORT control
batch, KIP-98); ``split_rows`` cuts rows into runs whose batches stay under
a size limit. ``batches(index)`` reads a partition back from its log start,
batch by batch, for the replay at startup.

The topic may be deleted under its coordinator (DeleteTopics allows it, as
Kafka's controller does): ``deleted`` then bumps ``epoch``, as Kafka's
coordinator resigns the partitions of a deleted topic. An append that was
made before the deletion and is still waiting to be durable fails with
NOT_LEADER_OR_FOLLOWER (callers answer NOT_COORDINATOR, as Kafka's
coordinator runtime fails the writes of a partition it unloads), and so does
an append whose writer began under the old epoch (``epoch`` given); the
next ``ensure_topic`` or ``ready`` makes the topic again, with the
configured partition count (``offsets.topic.num.partitions``,
``transaction.state.log.num.partitions``), not the deleted topic's, as
Kafka's ``AutoTopicCreationManager.creatableTopic`` takes it from the config.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator

import trio

from protocol import ErrorCode
from protocol.records.batches import iter_batches
from protocol.records.builder import RecordBatchBuilder
from protocol.records.control import build_marker_batch

from .groups.records import partition_for
from .log_validator import LEADER_EPOCH, ValidatedRecords

log = logging.getLogger("minibroker")
_READ_CHUNK = 1 << 20
Build = Callable[[int], tuple[Any, int, int]]  # base offset -> (batch bytes, record count, max timestamp)


def records_batch(rows: list[tuple[bytes, bytes | None]], now_ms: int,
                  producer: tuple[int, int] | None = None) -> Build:  # fmt: skip
    """A batch of ``(key, value)`` rows; transactional for ``producer`` (id, epoch)."""

    def build(base: int) -> tuple[Any, int, int]:
        pid, epoch = producer or (-1, -1)
        builder = RecordBatchBuilder(base_offset=base, producer_id=pid, producer_epoch=epoch,
                                     is_transactional=producer is not None, partition_leader_epoch=LEADER_EPOCH)  # fmt: skip
        for key, value in rows:
            builder.append(key, value, timestamp=now_ms)
        return builder.build(), len(rows), now_ms

    return build


def split_rows(rows: list[tuple[bytes, bytes | None]], now_ms: int,
               limit: int) -> list[list[tuple[bytes, bytes | None]]]:  # fmt: skip
    """``rows`` in order, cut into runs whose batch (``records_batch``) stays within ``limit`` bytes; a row that
    alone is over it makes a run of its own, which the append then refuses (Kafka's coordinator runtime fills a
    non-atomic write's batches the same way: ``CoordinatorRuntime.append`` with ``hasRoomFor``)."""
    runs: list[list[tuple[bytes, bytes | None]]] = []
    builder = RecordBatchBuilder()
    for key, value in rows:
        if not runs or not builder.has_room_for(key, value, timestamp=now_ms, limit=limit):
            runs.append([])
            builder = RecordBatchBuilder()
        builder.append(key, value, timestamp=now_ms)
        runs[-1].append((key, value))
    return runs


def marker_batch(producer_id: int, epoch: int, commit: bool, coordinator_epoch: int, now_ms: int) -> Build:
    """The COMMIT or ABORT marker ending ``producer_id``'s transaction in a partition."""

    def build(base: int) -> tuple[Any, int, int]:
        data = bytearray(build_marker_batch(producer_id, epoch, commit, coordinator_epoch, now_ms))
        view = next(iter_batches(memoryview(data)))
        view.set_base_offset(base)
        view.set_partition_leader_epoch(LEADER_EPOCH)  # as Kafka's appendAsLeader stamps every batch
        return data, 1, now_ms

    return build


class InternalTopic:
    def __init__(self, broker: Any, name: str, num_partitions: int, configs: dict[str, str]) -> None:
        self.broker = broker
        self.name = name
        self.configured_partitions = num_partitions  # what the topic is made with (the broker's config)
        self.num_partitions = num_partitions  # the topic's own count once it exists
        self.configs = configs  # the topic configs it is made with (its coordinator's, as Kafka's)
        self._ready = trio.Event()
        self._creating = False
        self._warned = False
        self.epoch = 0  # how many times the topic was deleted under us (``deleted``)

    def exists(self) -> bool:
        topic = self.broker.topics.get(self.name)
        if topic is not None:
            self.num_partitions = topic.num_partitions
            self._warn_unless_compacted()
        return topic is not None

    def _warn_unless_compacted(self) -> None:
        """An existing topic made without ``compact`` (e.g. auto-created as an ordinary topic by an older
        version of this broker) is left as it is, as Kafka leaves it; a warning says so, once."""
        if self._warned:
            return
        self._warned = True
        policy = self.broker.topics.effective_config(self.name).cleanup_policy
        if "compact" not in policy:
            log.warning("%s has cleanup.policy=%s, not compact: its records expire by retention; set "
                        "cleanup.policy=compact on it to keep them", self.name, ",".join(policy))  # fmt: skip

    def ensure_topic(self) -> bool:
        """True when the topic exists; else its creation starts in the background and False is returned."""
        if self._ready.is_set():
            return True
        if not self._creating and self.exists():
            self._ready.set()
            return True
        if not self._creating:
            self._creating = True
            trio.lowlevel.spawn_system_task(self._create_topic)
        return False

    async def _create_topic(self) -> None:
        topics = self.broker.topics
        try:
            async with topics.changes:  # the logs are made a few at a time; requests are served in between
                if topics.get(self.name) is None:
                    await topics.create(self.name, self.configured_partitions, dict(self.configs))
                self.num_partitions = topics.get(self.name).num_partitions
        except Exception:  # retried by the next request that needs the topic
            log.exception("creating %s failed", self.name)
        else:
            log.info("created %s with %d partitions", self.name, self.num_partitions)
            self._ready.set()
        finally:
            self._creating = False

    async def ready(self) -> None:
        while not self.ensure_topic():  # made, then deleted again before this task ran: made once more
            await self._ready.wait()

    def deleted(self) -> None:
        """The topic was deleted: appends not yet durable, and those of writers that began before, fail
        (``epoch``); the next caller that needs the topic makes it again (Kafka's resignation of the
        deleted partitions, ``BrokerMetadataPublisher.updateCoordinator``, then their election once the
        topic is made again)."""
        self.epoch += 1
        self.num_partitions = self.configured_partitions  # the deleted topic's count is not the new one's
        if self._ready.is_set():
            self._ready = trio.Event()
        self._warned = False

    def partition_of(self, key: str) -> int:
        """Kafka's ``Utils.abs(key.hashCode) % partitions``."""
        return partition_for(key, self.num_partitions)

    def offline_for(self, key: str) -> bool:
        """Is ``key``'s partition in a failed log dir (``storage.log_dir_failure``)? It then has no leader."""
        partition = self.broker.topics.partition(self.name, self.partition_of(key))
        return partition is not None and partition.log.offline

    async def append_reporting(self, index: int, build: Build, on_append: Callable[[int], None] | None = None,
                               max_bytes: int | None = None, before_log: bool = False,
                               epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """Append the batch ``build(base_offset)`` makes to partition ``index`` and wait until it is durable; the
        error the append met: UNKNOWN_TOPIC_OR_PARTITION (no such partition), KAFKA_STORAGE_ERROR (the write or
        its fsync failed, or the log is offline), MESSAGE_TOO_LARGE (a batch over ``max_bytes``, when given).
        ``on_append`` gets the batch's first offset as soon as it is in the log (before the wait); the topic
        deleted before the batch is durable, or since ``epoch`` (a writer's that began then; None: now), is
        NOT_LEADER_OR_FOLLOWER (``deleted``), and the topic is not made again for it."""
        if epoch is not None and epoch != self.epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        await self.ready()
        epoch = self.epoch if epoch is None else epoch
        error = self.append_now(index, build, on_append, max_bytes, before_log, epoch)
        return error if error is not None else await self.durable(index, epoch)

    def append_now(self, index: int, build: Build, on_append: Callable[[int], None] | None = None,
                   max_bytes: int | None = None, before_log: bool = False,
                   epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """The append of ``append_reporting`` without the wait (the topic must exist: ``ready``): the batch is in
        the log when this returns None, its place in the log fixed, not yet durable. A writer that began under
        ``epoch`` is refused (NOT_LEADER_OR_FOLLOWER) once the topic was deleted since (``deleted``).

        A batch too large is refused as Kafka's log refuses it (``UnifiedLog.analyzeAndValidateRecords``, under
        ``ReplicaManager.appendToLocalLog``): a produce request and its bytes rejected in the topic's metrics.
        ``before_log``: the limit is the group coordinator runtime's, which refuses an atomic write before it
        reaches the log, so nothing is counted."""
        if epoch is not None and epoch != self.epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        partition = self.broker.topics.partition(self.name, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        base = partition.log.log_end_offset
        data, count, max_ts = build(base)
        if max_bytes is not None and len(data) > max_bytes:
            if not before_log:
                self.broker.metrics.total_produce.labels(self.name).inc()
                self.broker.metrics.bytes_rejected.labels(self.name).inc(len(data))
            return ErrorCode.MESSAGE_TOO_LARGE
        validated = ValidatedRecords(data, base, base + count - 1, max_ts, -1, count, 0)
        if self.broker.append_own(partition, validated) is not None:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if on_append is not None:
            on_append(base)
        return None

    async def durable(self, index: int, epoch: int) -> ErrorCode | None:
        """Wait until everything appended so far is durable; KAFKA_STORAGE_ERROR when partition ``index``'s log
        is not (the fsync failed, or the log went offline: an append in its dir failed, so it was never
        fsynced), NOT_LEADER_OR_FOLLOWER when the topic appended to under ``epoch`` was deleted meanwhile."""
        try:
            await self.broker.wait_durable()
        except OSError:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if epoch != self.epoch:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        partition = self.broker.topics.partition(self.name, index)
        return ErrorCode.KAFKA_STORAGE_ERROR if partition is None or partition.log.offline else None

    def batches(self, index: int) -> Iterator[tuple[Any, int]]:
        """``(batch, offset read from)`` for every batch of partition ``index`` from its log start, in log
        order (read at startup; records below the offset read from were deleted)."""
        partition = self.broker.topics.partition(self.name, index)
        if partition is None or partition.log.offline:  # its log dir failed at start: nothing to load from it
            return
        log_, offset = partition.log, partition.log.log_start_offset
        while True:
            piece = log_.read(offset, _READ_CHUNK, min_one_message=True)
            if piece is None:
                return
            last = offset - 1
            for batch in iter_batches(piece.read_bytes()):
                last = batch.last_offset
                yield batch, offset
            if last < offset:
                return
            offset = last + 1
