"""``__consumer_offsets``: where groups and offsets are written and read back at startup.

The internal topic is created on first use (FindCoordinator or any group
request that writes), in the background one partition at a time, compacted,
with ``offsets.topic.num.partitions`` partitions and
``offsets.topic.segment.bytes`` segments; a group lives in partition
``abs(java_hash(group)) % partitions`` as in Kafka.
Writes are ordinary v2 batches appended through ``Broker.append`` (so
fetchers of the internal topic wake up and durable mode's group commit
covers them), and a write returns once ``Broker.wait_durable`` does: a
commit the coordinator acknowledged survives a broker crash.

``load`` replays every partition from its log start: the last record per key
wins, a null value deletes (the cleaner keeps the topic small because only
the latest record per key matters).
"""

from __future__ import annotations

import logging
from typing import Any, Iterator

import trio

from protocol import ErrorCode
from protocol.records.batches import iter_batches
from protocol.records.builder import RecordBatchBuilder

from ..log_validator import ValidatedRecords
from . import records as r

log = logging.getLogger("minibroker.groups")
OFFSETS_TOPIC = "__consumer_offsets"
_READ_CHUNK = 1 << 20


class GroupStore:
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.num_partitions = broker.config.offsets_topic_num_partitions
        self._ready = trio.Event()
        self._creating = False

    def ensure_topic(self) -> bool:
        """True when the topic exists; else its creation starts in the background and False is returned.

        Creating 50 partitions takes a while (each log's files are fsynced), so like Kafka the broker
        answers COORDINATOR_NOT_AVAILABLE meanwhile instead of stalling every connection.
        """
        if self._ready.is_set():
            return True
        existing = self.broker.topics.get(OFFSETS_TOPIC)
        if existing is not None and not self._creating:
            self.num_partitions = existing.num_partitions
            self._ready.set()
            return True
        if not self._creating:
            self._creating = True
            trio.lowlevel.spawn_system_task(self._create_topic)
        return False

    async def _create_topic(self) -> None:
        segment_bytes = self.broker.config.offsets_topic_segment_bytes
        configs = {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": str(segment_bytes)}
        topics = self.broker.topics
        try:
            async with topics.changes:  # the logs are made a few at a time; requests are served in between
                if topics.get(OFFSETS_TOPIC) is None:
                    await topics.create(OFFSETS_TOPIC, self.num_partitions, configs)
                self.num_partitions = topics.get(OFFSETS_TOPIC).num_partitions
        except Exception:  # retried by the next request that needs the topic
            log.exception("creating %s failed", OFFSETS_TOPIC)
        else:
            log.info("created %s with %d partitions", OFFSETS_TOPIC, self.num_partitions)
            self._ready.set()
        finally:
            self._creating = False

    async def ready(self) -> None:
        if not self.ensure_topic():
            await self._ready.wait()

    def partition_of(self, group_id: str) -> int:
        return r.partition_for(group_id, self.num_partitions)

    async def write(self, group_id: str, rows: list[tuple[bytes, bytes | None]]) -> ErrorCode | None:
        """Append ``(key, value)`` rows for ``group_id`` and wait until they are durable."""
        if not rows:
            return None
        await self.ready()
        partition = self.broker.topics.partition(OFFSETS_TOPIC, self.partition_of(group_id))
        if partition is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        now = self.broker.clock()
        builder = RecordBatchBuilder(base_offset=partition.log.log_end_offset)
        for key, value in rows:
            builder.append(key, value, timestamp=now)
        data = builder.build()
        validated = ValidatedRecords(data, builder.base_offset, builder.base_offset + len(rows) - 1, now, -1,
                                     len(rows), 0)  # fmt: skip
        error = self.broker.append(partition, validated)
        if error is not None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE  # what Kafka answers when the offsets log fails
        try:
            await self.broker.wait_durable()
        except OSError:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return None

    async def write_group(self, group: Any) -> ErrorCode | None:
        return await self.write(group.group_id, [(r.group_key(group.group_id), r.group_value(group_value(group)))])

    def write_group_soon(self, group: Any) -> None:
        """Store a group's metadata without anyone waiting (the group just became empty)."""
        trio.lowlevel.spawn_system_task(self._write_logged, group)

    async def _write_logged(self, group: Any) -> None:
        if await self.write_group(group) is not None:
            log.error("could not store the metadata of group %s", group.group_id)

    def load(self) -> Iterator[tuple[Any, bytes | None]]:
        """Every ``(parsed key, value)`` of the topic in log order; unknown key versions skipped."""
        topic = self.broker.topics.get(OFFSETS_TOPIC)
        if topic is None:
            return
        self.num_partitions = topic.num_partitions
        for index in range(topic.num_partitions):
            partition = self.broker.topics.partition(OFFSETS_TOPIC, index)
            for record in _records(partition.log):
                key = r.parse_key(record.key) if record.key else None
                if key is not None:
                    yield key, record.value


def _records(log_: Any) -> Iterator[Any]:
    offset = log_.log_start_offset
    while True:
        piece = log_.read(offset, _READ_CHUNK, min_one_message=True)
        if piece is None:
            return
        last = offset - 1
        for batch in iter_batches(piece.read_bytes()):
            last = batch.last_offset
            if batch.magic == 2 and batch.is_control:
                continue
            for record in batch.iter_records():
                if record.offset >= offset:
                    yield record
        if last < offset:
            return
        offset = last + 1


def group_value(group: Any) -> Any:
    protocol = group.protocol_name or ""
    members = [
        r.MemberValue(m.member_id, p.group_instance_id, p.client_id, p.client_host, p.rebalance_timeout_ms,
                      p.session_timeout_ms, m.metadata(protocol), m.assignment)  # fmt: skip
        for m, p in ((m, m.profile) for m in group.members.values())
    ]
    return r.GroupValue(group.protocol_type or "", group.generation_id, group.protocol_name, group.leader_id,
                        group.state_timestamp, members)  # fmt: skip
