"""``__consumer_offsets``: where groups and offsets are written and read back at startup.

The internal topic is created on first use (FindCoordinator or any group
request that writes), in the background one partition at a time, compacted,
with ``offsets.topic.num.partitions`` partitions and
``offsets.topic.segment.bytes`` segments; a group lives in partition
``abs(java_hash(group)) % partitions`` as in Kafka.
Writes are ordinary v2 batches appended through ``Broker.append`` (so
fetchers of the internal topic wake up and durable mode's group commit
covers them), and a write returns once ``Broker.wait_durable`` does: a
commit the coordinator acknowledged survives a broker crash (``write``; or
its halves, ``append_rows`` then ``durable_for``, for the consumer-group
store, which orders its appends under a lock and waits outside it). A write
that fails answers what Kafka's group coordinator answers for every request
(``coordinator_error``: a log dir gone offline is NOT_COORDINATOR), and a
request's batch over the topic's ``max.message.bytes`` less a batch header
(61 bytes) is refused (UNKNOWN_SERVER_ERROR), as Kafka's coordinator runtime
refuses it. The topic may be deleted (``InternalTopic.deleted``, with every
group, ``GroupManager.resign``): a write begun before answers NOT_COORDINATOR
(``epoch``), and a write nobody waits for is dropped.

A TxnOffsetCommit's records go in a *transactional* batch of its producer
(``producer``); ``write_marker`` appends the COMMIT or ABORT control batch
that ends the producer's transaction in a partition (KIP-98).

``load`` reads every partition from its log start and yields what it finds
in log order: a ``Loaded`` per record (its partition, offset, parsed key,
value and, for a transactional batch, its producer id) and a ``Marker`` per
control batch; ``replay.rebuild_groups`` turns them into groups (the last
record per key wins, a null value deletes; the cleaner keeps the topic small
because only the latest record per key matters).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterator

import attrs
import trio

from protocol import ErrorCode
from protocol.records import RECORD_BATCH_OVERHEAD
from protocol.records.control import ABORT, COMMIT, marker_type

from ..internal_topic import InternalTopic, marker_batch, records_batch, split_rows
from . import records as r

log = logging.getLogger("minibroker.groups")
OFFSETS_TOPIC = "__consumer_offsets"


@attrs.frozen
class Loaded:
    """One record of ``__consumer_offsets``; ``producer_id`` is -1 unless its batch is transactional."""

    partition: int
    offset: int
    producer_id: int
    key: Any
    value: bytes | None


@attrs.frozen
class Marker:
    """A transaction marker: ``producer_id``'s transaction in ``partition`` ended."""

    partition: int
    producer_id: int
    commit: bool


class GroupStore(InternalTopic):
    """``__consumer_offsets`` (``InternalTopic``: created on first use, written durably, read at startup).

    Creating 50 partitions takes a while (each log's files are fsynced), so like Kafka the broker answers
    COORDINATOR_NOT_AVAILABLE meanwhile (``ensure_topic``) instead of stalling every connection.
    """

    def __init__(self, broker: Any) -> None:
        c = broker.config
        configs = {"cleanup.policy": "compact", "compression.type": "producer",
                   "segment.bytes": str(c.offsets_topic_segment_bytes)}  # Kafka's groupMetadataTopicConfigs
        super().__init__(broker, OFFSETS_TOPIC, c.offsets_topic_num_partitions, configs)

    async def write(self, group_id: str, rows: list[tuple[bytes, bytes | None]],
                    producer: tuple[int, int] | None = None, on_append: Callable[[int], None] | None = None,
                    atomic: bool = True, epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """Append ``(key, value)`` rows for ``group_id`` (``append_rows``) and wait until they are durable
        (``durable``); a failure is the error the request answers (``coordinator_error``): NOT_COORDINATOR when
        the topic was deleted since ``epoch`` (the current one if None) or before the rows are durable
        (``InternalTopic.deleted``)."""
        epoch = self.epoch if epoch is None else epoch  # the caller's changes were made under this one
        error = await self.append_rows(group_id, rows, producer, on_append, atomic, epoch)
        if error is not None or not rows:
            return error
        return (await self.durable_for([group_id], epoch))[group_id]

    async def append_rows(self, group_id: str, rows: list[tuple[bytes, bytes | None]],
                          producer: tuple[int, int] | None = None, on_append: Callable[[int], None] | None = None,
                          atomic: bool = True, epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """Put ``(key, value)`` rows for ``group_id`` in the log, not waiting for durability: their place in the
        log is fixed when this returns (it awaits only the topic's creation); the error mapped as ``write``'s.
        A writer that began under ``epoch`` is refused once the topic was deleted since (NOT_COORDINATOR).

        ``producer`` (id, epoch) makes the batch transactional; ``on_append`` gets the offset of the first
        row as soon as the batch is in the log. An ``atomic`` write (every request's) is refused when its batch
        is over the topic's ``max.message.bytes`` less a batch header, as Kafka's coordinator runtime refuses
        it before the log (``CoordinatorRuntime``'s atomic append: the estimated batch size against the
        builder's ``maxAllowedBytes()``), so the topic's metrics do not count it.
        The offset expiry's and a deleted topic's tombstones are not atomic: they go in as many batches under
        the limit as they need, one after the other (``split_rows``); the first that fails ends the write
        (those before it stay written; a single row over the limit alone is refused), as Kafka's runtime.
        """
        if not rows:
            return None
        if epoch is not None and epoch != self.epoch:  # the topic is not made again for it
            return coordinator_error(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        await self.ready()
        now, limit = self.broker.clock(), self.broker.topics.effective_config(self.name).max_message_bytes
        index = self.partition_of(group_id)
        for run in [rows] if atomic else split_rows(rows, now, limit):
            build = records_batch(run, now, producer)
            error = self.append_now(index, build, on_append, limit - RECORD_BATCH_OVERHEAD if atomic else limit,
                                    before_log=atomic, epoch=epoch)  # fmt: skip
            if error is not None:
                return coordinator_error(error)
            on_append = None  # the first row's offset only
        return None

    async def durable_for(self, group_ids: list[str], epoch: int | None = None) -> dict[str, ErrorCode | None]:
        """Wait until all appended so far is durable; per group, the error (``coordinator_error``) if its
        partition's log is not, or if the topic appended to under ``epoch`` (the current one if None) was
        deleted meanwhile."""
        epoch = self.epoch if epoch is None else epoch
        try:
            await self.broker.wait_durable()
            failed = False
        except OSError:
            failed = True
        if epoch != self.epoch:
            return dict.fromkeys(group_ids, coordinator_error(ErrorCode.NOT_LEADER_OR_FOLLOWER))
        error = coordinator_error(ErrorCode.KAFKA_STORAGE_ERROR)
        return {g: error if failed or self.offline_for(g) else None for g in group_ids}

    async def write_marker(self, index: int, producer_id: int, producer_epoch: int, commit: bool,
                           coordinator_epoch: int) -> ErrorCode | None:  # fmt: skip
        """Append the COMMIT or ABORT marker of a transaction to partition ``index``; wait until durable."""
        marker = marker_batch(producer_id, producer_epoch, commit, coordinator_epoch, self.broker.clock())
        return await self.append_reporting(index, marker)  # unmapped, as Kafka's completeTransaction fails

    async def write_group(self, group: Any, epoch: int | None = None) -> ErrorCode | None:
        """Store a group's metadata; a failure is the error a JoinGroup or SyncGroup waiting on it answers
        (``epoch``: as ``write``'s)."""
        return await self.write(group.group_id, _group_rows(group), epoch=epoch)

    def write_group_soon(self, group: Any) -> None:
        """Store a group's metadata without anyone waiting (the group just became empty); its record is
        made when the write starts, so it shows the group as it is then."""
        trio.lowlevel.spawn_system_task(self._logged, group.group_id, lambda: _group_rows(group), "the metadata",
                                        self.epoch)  # fmt: skip

    def write_soon(self, group_id: str, rows: list[tuple[bytes, bytes | None]]) -> None:
        """Append rows for a group without anyone waiting (a record deleted as a group changes kind)."""
        trio.lowlevel.spawn_system_task(self._logged, group_id, lambda: rows, "a record", self.epoch)

    async def _logged(self, group_id: str, rows: Callable[[], list[tuple[bytes, bytes | None]]], what: str,
                      epoch: int) -> None:  # fmt: skip
        """A write nobody waits for; not made once the topic was deleted since it was asked for (the group with it)."""
        if epoch != self.epoch:
            return
        if await self.write(group_id, rows(), epoch=epoch) is not None:
            log.error("could not store %s of group %s", what, group_id)

    def load(self) -> Iterator[Loaded | Marker]:
        """Every record and marker of the topic in log order, partition by partition; unknown key versions
        (and unreadable markers) skipped."""
        if not self.exists():
            return
        for index in range(self.num_partitions):
            yield from _entries(index, self.batches(index))


def coordinator_error(error: ErrorCode | None) -> ErrorCode | None:
    """What a request answers when its ``__consumer_offsets`` write failed: Kafka's group coordinator maps
    the append's error the same way for every request (``CoordinatorOperationExceptionHelper.
    handleOperationException``; the classic ``appendGroupMetadataErrorToResponseError`` has the same table):
    the partition missing or short of replicas, or a timeout, is COORDINATOR_NOT_AVAILABLE; not being its
    leader or a storage error is NOT_COORDINATOR; a batch too large is UNKNOWN_SERVER_ERROR; the rest as is."""
    return _COORDINATOR_ERRORS.get(error, error)


_COORDINATOR_ERRORS = {
    **dict.fromkeys((ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                     ErrorCode.REQUEST_TIMED_OUT), ErrorCode.COORDINATOR_NOT_AVAILABLE),
    **dict.fromkeys((ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR), ErrorCode.NOT_COORDINATOR),
    **dict.fromkeys((ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE),
                    ErrorCode.UNKNOWN_SERVER_ERROR),
}  # fmt: skip


def _group_rows(group: Any) -> list[tuple[bytes, bytes | None]]:
    return [(r.group_key(group.group_id), r.group_value(group_value(group)))]


def _entries(index: int, batches: Iterator[tuple[Any, int]]) -> Iterator[Loaded | Marker]:
    for batch, start in batches:
        if batch.magic == 2 and batch.is_control:
            kind = marker_type(batch.buffer)
            if kind in (ABORT, COMMIT):
                yield Marker(index, batch.producer_id, kind == COMMIT)
            continue
        producer_id = batch.producer_id if batch.magic == 2 and batch.is_transactional else -1
        for record in batch.iter_records():
            key = r.parse_key(record.key) if record.key and record.offset >= start else None
            if key is not None:
                yield Loaded(index, record.offset, producer_id, key, record.value)


def group_value(group: Any) -> Any:
    protocol = group.protocol_name or ""
    members = [
        r.MemberValue(m.member_id, p.group_instance_id, p.client_id, p.client_host, p.rebalance_timeout_ms,
                      p.session_timeout_ms, m.metadata(protocol), m.assignment)  # fmt: skip
        for m, p in ((m, m.profile) for m in group.members.values())
    ]
    return r.GroupValue(group.protocol_type or "", group.generation_id, group.protocol_name, group.leader_id,
                        group.state_timestamp, members)  # fmt: skip
