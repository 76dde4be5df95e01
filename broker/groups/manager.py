"""``GroupManager``: the broker's entry point for groups and committed offsets.

It owns the ``GroupCoordinator`` (membership, ``coordinator``), the
``GroupStore`` (``__consumer_offsets``), the ``ConsumerCoordinator`` of KIP-848
consumer groups (``consumer``; both kinds of group share ``groups``, and
every operation below serves both, ``consumer_offsets`` holding the rules
that differ; ``consumer_store`` writes what changed in consumer groups) and
the operations that act on whole groups: OffsetCommit, TxnOffsetCommit and
the end of its transaction
(``complete_transaction``: the marker, then the staged offsets committed or
dropped, see ``txn_offsets``), OffsetFetch, OffsetDelete, DescribeGroups,
ListGroups, DeleteGroups, offset expiry. ``load()`` rebuilds every group
from ``__consumer_offsets`` at startup (``replay``; members restored with a
fresh session, so consumers that keep heartbeating across a broker restart
keep their generation); ``run()`` is the trio task for the coordinators'
timers and the periodic expiry check (``offsets.retention.check.interval.ms``),
which sleeps until their next deadline (``timers``). ``state_metrics`` feeds
the Prometheus gauges named after Kafka's ``GroupMetadataManager`` MBeans and
its ``group-coordinator-metrics`` group counts (``state_metrics.py``).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable

from protocol import ErrorCode

from . import consumer_offsets as co
from . import offsets as o
from . import records as r
from . import txn_offsets as txn
from .classic_members import ClassicMembers
from .consumer_coordinator import ConsumerCoordinator
from .consumer_group import CONSUMER, ConsumerGroup
from .consumer_requests import GroupError, Heartbeat, HeartbeatResult
from .consumer_store import ConsumerStore
from .coordinator import GroupCoordinator
from .group import DEAD, EMPTY, STABLE, Group
from .replay import rebuild_groups
from .results import GroupSummary, MemberSummary
from .state_metrics import CLASSIC, state_metrics
from .store import GroupStore
from .timers import GroupTimers

log = logging.getLogger("minibroker.groups")
_Keys = list[tuple[str, int]]  # (topic, partition) of offsets


class MarkerNotWritten(OSError):
    def __init__(self, message: str, error: ErrorCode) -> None:
        super().__init__(message)
        self.error = error


class GroupManager:
    def __init__(self, broker: Any) -> None:
        self.config = broker.config
        self.topics = broker.topics
        self.clock = broker.clock
        self.store = GroupStore(broker)
        self.groups: dict = {}  # classic and consumer groups by id, shared by both coordinators
        self.consumer = ConsumerCoordinator(broker.config, self.groups, broker.topics, broker.clock,
                                            lambda group_id, key: broker.group_configs.value(  # made after us
                                                group_id, f"consumer.{key}"))  # fmt: skip
        self.consumer_store = ConsumerStore(self.store, self.consumer, self.groups)
        mixed = ClassicMembers(self.consumer, self.store_consumer_groups)
        self.coordinator = GroupCoordinator(broker.config, self.store, broker.clock, self.groups, mixed)
        self.consumer.on_downgrade = self.coordinator.adopt_downgraded
        self.timers = GroupTimers(self)
        self.coordinator.timers_moved = self.timers_moved
        self.coordinator.timer_failed = self.consumer.timer_failed = self.timers.failed

    def load(self) -> None:
        self.groups.update(rebuild_groups(self.store.load(), self.clock()))
        for group in self.groups.values():
            if isinstance(group, ConsumerGroup):
                self.consumer.loaded(group)
            else:
                self.coordinator.loaded(group)
        if self.groups:
            log.info("loaded %d groups from %s", len(self.groups), "__consumer_offsets")

    # Kafka accepts the empty group id in OffsetCommit, OffsetFetch, DescribeGroups and DeleteGroups
    # ("for backwards compatibility"); the membership APIs and OffsetDelete refuse it.

    # -- consumer groups (KIP-848) ---------------------------------------------------------

    async def consumer_heartbeat(self, hb: Heartbeat, may_describe=lambda _topic: True) -> HeartbeatResult:
        """ConsumerGroupHeartbeat; answered once a changed group epoch is stored. Raises ``GroupError``."""
        self.timers_moved()  # its changes come before its first await (see ``timers``)
        with self.consumer.rollback.changing(hb.group_id) as pending:
            result = self.consumer.heartbeat(hb, may_describe)
        error = await self.store_consumer_groups(hb.group_id, pending)
        if error is not None:
            raise GroupError(error)
        return result

    async def store_consumer_groups(self, group_id: str | None = None, pending: Any = None) -> ErrorCode | None:
        """Write what the consumer coordinator queued (``consumer_store``: a change whose write failed is undone,
        ``consumer_rollback``); the error of ``pending``'s changes if given, else of ``group_id`` (of any, if
        None)."""
        return await self.consumer_store.store_groups(group_id, pending)

    def store_retry_in(self) -> float | None:
        """Seconds until a consumer group whose write failed is tried again (``ConsumerStore.retry_in``)."""
        return self.consumer_store.retry_in()

    # -- offsets -------------------------------------------------------------------------

    async def commit(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                     retention_ms: int, partitions: list[tuple],
                     missing: ErrorCode = ErrorCode.ILLEGAL_GENERATION,
                     version: int = 9) -> list[ErrorCode]:  # fmt: skip
        """One error per ``(topic, partition, offset, leader_epoch, metadata[, commit_timestamp])``, in order;
        ``missing`` for all when the group does not exist and a generation is given; ``version`` is
        OffsetCommit's. A commit timestamp (v1) other than -1 is stored instead of the clock's."""
        now = self.clock()
        errors, values = self._offset_values(partitions, now, retention_ms)
        error, group = self._commit_group(group_id, member_id, instance_id, generation, [k for k, _v in values],
                                          missing, version=version)  # fmt: skip
        if error is not None:
            return [error] * len(partitions)
        if isinstance(group, Group) and member_id in group.members:
            group.members[member_id].extend_session(now)
        rows = [(r.offset_key(group_id, t, p), r.offset_value(v)) for (t, p), v in values]
        base: list[int] = []

        def appended(offset: int) -> None:  # in the log: deletes and expiry see it from now on (``committing``)
            base.append(offset)
            txn.appended(group, [k for k, _v in values])

        failed: ErrorCode | None = ErrorCode.UNKNOWN_SERVER_ERROR  # if cancelled: not applied, no longer committing
        try:
            failed = await self.store.write(group_id, rows, on_append=appended)
        finally:
            if base:
                txn.settle(group, values, base[0], durable=failed is None)
        return [e if e is not None else failed or ErrorCode.NONE for e in errors]

    def _commit_group(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                      partitions: list[tuple[str, int]], missing: ErrorCode = ErrorCode.ILLEGAL_GENERATION,
                      version: int = 9, transactional: bool = False) -> tuple[ErrorCode | None, Any]:  # fmt: skip
        """The error of an OffsetCommit or TxnOffsetCommit committing ``partitions`` (topic, partition) that
        refuses all of it (the consumer or classic group's rule), else the group to commit to: a new empty
        classic group (Kafka's "simple" group) when there is none."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            ids = {t: getattr(self.topics.get(t), "topic_id", None) for t in {t for t, _p in partitions}}
            error = co.commit_error(group, member_id, instance_id, generation, [(ids[t], p) for t, p in partitions],
                                    version=version, transactional=transactional)  # fmt: skip
        else:
            error = o.commit_error(group, member_id, instance_id, generation, missing, transactional)
        if error is None and group is None:
            group = self.groups[group_id] = Group(group_id, state_timestamp=self.clock())
        return error, group

    def _offset_values(self, partitions: list[tuple], now: int, retention_ms: int,
                       ) -> tuple[list[ErrorCode | None], list[tuple[tuple[str, int], Any]]]:  # fmt: skip
        """Per partition its error or None, and the values to write for those without error."""
        limit = self.config.offset_metadata_max_bytes
        errors = [o.partition_error(self.topics, t, p, meta, limit) for t, p, _, _, meta, *_ in partitions]
        values = {(t, p): o.offset_value(off, epoch, meta, now, retention_ms, *stamp)
                  for (t, p, off, epoch, meta, *stamp), e in zip(partitions, errors) if e is None}  # fmt: skip
        return errors, list(values.items())

    async def txn_commit(self, group_id: str, producer: tuple[int, int], member_id: str, instance_id: str | None,
                         generation: int, partitions: list[tuple[str, int, int, int, str | None]],
                         ) -> list[ErrorCode]:  # fmt: skip
        """TxnOffsetCommit after the transaction coordinator's check: the offsets are written in a transactional
        batch of ``producer`` (id, epoch) and staged until the transaction's marker; one error per partition."""
        errors, values = self._offset_values(partitions, self.clock(), -1)
        error, group = self._commit_group(group_id, member_id, instance_id, generation, [k for k, _v in values],
                                          transactional=True)  # fmt: skip
        if error is not None:
            return [error] * len(partitions)
        rows = [(r.offset_key(group_id, t, p), r.offset_value(v)) for (t, p), v in values]
        base: list[int] = []

        def staged(offset: int) -> None:  # in the log now: staged before any marker can follow it
            base.append(offset)
            txn.stage(group, producer[0], offset, values)

        failed = await self.store.write(group_id, rows, producer, staged)
        if failed is not None and base:
            txn.unstage(group, producer[0], base[0], len(values))
        return [e if e is not None else failed or ErrorCode.NONE for e in errors]

    async def complete_transaction(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                                   group_ids: set[str], partitions: Iterable[int] = ()) -> None:  # fmt: skip
        """Write the transaction's marker into the ``__consumer_offsets`` partition of each group of ``group_ids``
        and each partition of ``partitions``, then commit or drop what the producer staged in the groups there.

        Raises ``MarkerNotWritten`` (its ``error``: the append's) when a marker could not be written (the
        coordinator retries; markers already written are harmless to write again).
        """
        targets = {self.store.partition_of(g) for g in group_ids} | set(partitions)
        for index in sorted(targets):
            error = await self.store.write_marker(index, producer_id, producer_epoch, commit, coordinator_epoch)
            if error is not None:
                raise MarkerNotWritten(f"transaction marker of producer {producer_id} not written to partition "
                                       f"{index}: {error.name}", error)  # fmt: skip
            for group in list(self.groups.values()):
                if producer_id in group.pending_txn and self.store.partition_of(group.group_id) == index:
                    applied = txn.complete(group, producer_id, commit)
                    log.debug("producer %d %s in group %s (%d offsets)", producer_id,
                              "committed" if commit else "aborted", group.group_id, applied)  # fmt: skip

    def fetch(self, group_id: str, wanted: list[tuple[str, list[int]]] | None, require_stable: bool = False,
              member_id: str | None = None, member_epoch: int = -1) -> tuple[ErrorCode, list]:  # fmt: skip
        """``member_id`` and ``member_epoch`` (OffsetFetch v9) are checked for consumer groups only, as in Kafka."""
        group = self.groups.get(group_id)
        error = co.fetch_error(group, member_id, member_epoch) if isinstance(group, ConsumerGroup) else None
        if error is not None:
            return error, []
        if group is not None and group.state == DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        return ErrorCode.NONE, o.fetch(group, wanted, require_stable)

    async def expire_offsets(self) -> None:
        """Tombstone the offsets past retention (and the empty groups they leave). Stops once
        ``__consumer_offsets`` is deleted meanwhile: its groups are gone, as Kafka's unload cancels the expiry."""
        now, epoch = self.clock(), self.store.epoch
        retention = self.config.offsets_retention_minutes * 60_000
        for group in list(self.groups.values()):
            if self.store.epoch != epoch:
                return
            consumer = isinstance(group, ConsumerGroup)
            gone = co.expired(group, now, retention) if consumer else o.expired(group, now, retention)
            drop_group = (group.state == EMPTY and not group.members and len(gone) == len(group.offsets)
                          and not group.pending_txn and not group.committing)  # fmt: skip
            if not gone and not drop_group:
                continue
            with_group = drop_group and (consumer or group.generation_id > 0)

            def still(group=group, chosen={k: group.offsets[k] for k in gone}) -> ErrorCode | None:  # joined or
                # committed meanwhile (the expired offsets too): the next check sees it (the store forgets the
                # group with its tombstones, ``ConsumerStore.delete_group``)
                kept = (group.offsets.keys() - chosen.keys() or group.pending_txn or group.committing
                        or any(group.offsets.get(k) is not v for k, v in chosen.items()))  # fmt: skip
                return None if _empty(group) and not kept else ErrorCode.NON_EMPTY_GROUP

            if await self._drop_offsets(group, gone, with_group, False, still, epoch) is not None:
                continue
            if drop_group and not with_group and _empty(group) and not (group.offsets or group.committing):
                self._forget_group(group)  # a group with no record of its own: only its offsets were written
            log.info("expired %d offsets of group %s", len(gone), group.group_id)

    # -- whole groups --------------------------------------------------------------------

    def describe(self, group_id: str) -> GroupSummary:
        """DescribeGroups: an unknown or deleted group, and a consumer group (as in Kafka no classic group), are
        ``Dead`` with GROUP_ID_NOT_FOUND and Kafka's message (which DescribeGroups sends from v6)."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return GroupSummary(ErrorCode.GROUP_ID_NOT_FOUND, group_id, DEAD,
                                error_message=f"Group {group_id} is not a classic group.")  # fmt: skip
        if group is None or group.state == DEAD:
            return GroupSummary(ErrorCode.GROUP_ID_NOT_FOUND, group_id, DEAD,
                                error_message=f"Group {group_id} not found.")  # fmt: skip
        stable = group.state == STABLE
        protocol = group.protocol_name or "" if stable else ""
        members = [
            MemberSummary(m.member_id, m.group_instance_id, m.profile.client_id, m.profile.client_host,
                          m.metadata(protocol) if stable else b"", m.assignment if stable else b"")  # fmt: skip
            for m in group.members.values()
        ]
        return GroupSummary(ErrorCode.NONE, group_id, group.state, group.protocol_type or "", protocol, members)

    def list(self, states: list[str] | None = None) -> list[tuple[str, str, str, str]]:
        """(group id, protocol type, state, group type) of each group in one of ``states`` (any, if none)."""
        wanted = {s.lower().strip() for s in states} if states else None
        return [
            (g.group_id, g.protocol_type or "", g.state, CONSUMER if isinstance(g, ConsumerGroup) else CLASSIC)
            for g in self.groups.values()
            if g.state != DEAD and (wanted is None or g.state.lower() in wanted)
        ]

    async def delete(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state == DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state != EMPTY or group.members:
            return ErrorCode.NON_EMPTY_GROUP
        def still() -> ErrorCode | None:  # a member may have joined while the delete waited for the store
            gone = self.groups.get(group_id) is not group or group.state == DEAD
            return ErrorCode.GROUP_ID_NOT_FOUND if gone else None if _empty(group) else ErrorCode.NON_EMPTY_GROUP

        def keys() -> _Keys:  # chosen in the delete's write step: those applied, staged or appended by then
            return sorted(set(group.offsets) | txn.pending_keys(group) | set(group.committing))

        return await self._drop_offsets(group, keys, with_group=True, still=still) or ErrorCode.NONE  # and forgotten

    def _forget_group(self, group: Group | ConsumerGroup) -> None:
        if isinstance(group, Group):
            group.state = DEAD
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]

    async def delete_offsets(self, group_id: str, wanted: list[tuple[str, int]]) -> tuple[ErrorCode, list[ErrorCode]]:
        """KIP-496: an empty group loses any offsets; a live consumer group those of topics nobody subscribes."""
        group = self.groups.get(group_id)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        if group is None or group.state == DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if group.state != EMPTY and group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP, []
        if isinstance(group, ConsumerGroup):
            subscribed: set[str] | None = group.subscribed_topic_names()
        else:  # unknown subscriptions of a live consumer group: every topic (Kafka's isSubscribedToTopic)
            subscribed = o.subscribed_topics(group) if group.state != EMPTY else set()
        errors = [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if self.topics.partition(t, p) is None
            else ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if subscribed is None or t in subscribed else ErrorCode.NONE
            for t, p in wanted
        ]  # fmt: skip
        held = {*group.offsets, *group.committing}  # and staged: Kafka's ``hasCommittedOffset`` on its latest state
        gone = [k for k, e in zip(wanted, errors) if e == ErrorCode.NONE and (k in held or txn.has_pending(group, k))]
        failed = await self._drop_offsets(group, gone)
        return (failed, []) if failed is not None else (ErrorCode.NONE, errors)

    async def topic_deleted(self, topic: str) -> None:
        """Drop every group's offsets of a deleted topic (tombstones), so a new topic of that name starts afresh;
        stops once ``__consumer_offsets`` is deleted meanwhile (every group gone with it)."""
        epoch = self.store.epoch
        for group in list(self.groups.values()):
            if self.store.epoch != epoch:
                return
            gone = sorted(k for k in {*group.offsets, *group.committing, *txn.pending_keys(group)} if k[0] == topic)
            if not gone:
                continue
            if await self._drop_offsets(group, gone, atomic=False, epoch=epoch) is not None:  # forgotten anyway
                log.error("could not delete the offsets of %s for group %s", topic, group.group_id)
                txn.forget(group, gone)

    async def _drop_offsets(self, group: Group, keys: _Keys | Callable[[], _Keys], with_group: bool = False,
                            atomic: bool = True, still=lambda: None,
                            epoch: int | None = None) -> ErrorCode | None:  # fmt: skip
        """Tombstone ``keys`` (and, ``with_group``, every record of the group) in ``__consumer_offsets``; forget
        them once written (``atomic``: see ``GroupStore.write``). The group's records go through the consumer
        store (``ConsumerStore.delete_group``), in the order of its writes; ``still`` checks there that the group
        may still go, and ``keys`` given as a function are chosen there, in the same step. What is forgotten is
        what records before the tombstones hold (``txn_offsets.forget``). ``epoch``: the store's when the caller
        read the group (now if None); once ``__consumer_offsets`` was deleted since, nothing is written
        (NOT_COORDINATOR)."""
        epoch = self.store.epoch if epoch is None else epoch
        chosen: _Keys = []
        base: list[int] = []

        def rows() -> list[tuple[bytes, bytes | None]]:
            chosen[:] = keys() if callable(keys) else keys
            return [(r.offset_key(group.group_id, t, p), None) for t, p in chosen]

        if with_group:
            error = await self.consumer_store.delete_group(group, rows, atomic, still, base.append, epoch)
        else:
            error = await self.store.write(group.group_id, rows(), atomic=atomic, on_append=base.append, epoch=epoch)
        if error is None:
            txn.forget(group, chosen, base[0] if base else None)
        return error

    def resign(self) -> None:
        """``__consumer_offsets`` was deleted: every group goes, as Kafka's coordinator unloads the partitions of
        a deleted topic (``onResignation``): writes in flight, parked JoinGroups and SyncGroups and heartbeats
        whose changes are not yet durable answer NOT_COORDINATOR; the next request that needs the topic makes
        it again, empty (``InternalTopic.deleted``)."""
        self.store.deleted()
        self.coordinator.unload()
        self.consumer.unload()
        self.consumer_store.unload()
        for group in self.groups.values():
            if isinstance(group, Group):
                group.state = DEAD  # a request still holding it finds it gone
        log.warning("%s was deleted: %d groups unloaded", self.store.name, len(self.groups))
        self.groups.clear()
        self.timers_moved()

    # -- metrics -------------------------------------------------------------------------

    def state_metrics(self):
        """Gauges named after Kafka's ``GroupMetadataManager`` MBeans (read from the metrics thread)."""
        return state_metrics(list(self.groups.values()))

    # -- timers --------------------------------------------------------------------------

    def timers_moved(self) -> None:
        """A request may have armed or moved a deadline: the timer task looks again (``timers``)."""
        self.timers.moved()

    async def run(self) -> None:
        """The coordinators' timers, plus the offset expiry check on its own interval (``timers``)."""
        await self.timers.run()


def _empty(group: Any) -> bool:
    return group.state == EMPTY and not group.members
