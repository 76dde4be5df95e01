"""The transaction coordinator of a single broker (KIP-98, Kafka's transaction protocol v1).

Every ``transactional.id`` has a ``TxnMetadata`` (``state.py``). Each request
works on a copy under that id's lock, writes the copy to
``__transaction_state`` (``InternalTopic``, waiting for durability) and only
then makes it current, so a failed write changes nothing and a crash replays
the last decision (``load``):

* ``init_producer_id``: a new id gets a fresh producer id (``producer_ids``,
  ``producer_ids.py``, which the idempotent producers' InitProducerId uses
  too) and epoch 0; a known one gets its epoch bumped (a new producer id once
  the epoch is exhausted). An open transaction is first aborted with a fenced (bumped)
  epoch, which Kafka does in two round trips (CONCURRENT_TRANSACTIONS, then a
  retry) and we do in one. With KIP-360's expected id and epoch, a stale
  caller is PRODUCER_FENCED and a retry of the last bump gets the same answer.
* ``add_partitions`` / ``add_offsets``: the transaction becomes Ongoing and
  holds the partitions (for offsets, the group's ``__consumer_offsets``
  partition, as Kafka records it).
* ``end``: PrepareCommit/PrepareAbort is written, then ``markers.write`` puts
  a marker on every partition, then Complete* is written. A marker that cannot
  be written leaves the transaction prepared; ``run`` retries it, as after a
  restart.
* ``verify_produce`` / ``check_offsets_allowed`` (KIP-890 part 1): a
  transactional write is refused unless its partition is in the open
  transaction of that producer id and epoch.
* ``run`` aborts transactions older than their timeout (fencing the producer,
  as Kafka does) every ``transaction.abort.timed.out.transaction.cleanup.interval.ms``
  and forgets ids idle past ``transactional.id.expiration.ms``.

Errors follow Kafka's TransactionCoordinator: unknown id or another producer
id -> INVALID_PRODUCER_ID_MAPPING, another epoch -> PRODUCER_FENCED (the
handlers turn it into INVALID_PRODUCER_EPOCH for old request versions), EndTxn
in the wrong state -> INVALID_TXN_STATE, a prepared transaction ->
CONCURRENT_TRANSACTIONS. A failed ``__transaction_state`` write answers as
Kafka's TransactionStateManager maps it (``errors.txn_log_error``: a log dir gone
offline is NOT_COORDINATOR); a record over the topic's ``max.message.bytes``
is refused, as the log's append refuses it (UNKNOWN_SERVER_ERROR).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict
from typing import Any, AsyncIterator

import attrs
import trio

from protocol import ErrorCode
from storage import ProducerIdsUnavailable

from ..groups.store import OFFSETS_TOPIC
from ..internal_topic import InternalTopic, records_batch
from . import markers
from .errors import producer_error, txn_log_error, valid_expected, writer_error
from .producer_ids import ProducerIdManager
from .state import EPOCH_MAX, TxnMetadata, TxnState, key_bytes, parse_key, parse_value, value_bytes

log = logging.getLogger("minibroker.transactions")
TXN_TOPIC = "__transaction_state"
READY_WAIT_S = 5.0
Result = tuple[ErrorCode, int, int]


class TransactionCoordinator:
    def __init__(self, broker: Any) -> None:
        self.broker = broker
        c = broker.config
        self.topic = InternalTopic(broker, TXN_TOPIC, c.transaction_state_log_num_partitions, _topic_configs(c))
        self.txns: dict[str, TxnMetadata] = {}
        self.groups: dict[str, set[str]] = defaultdict(set)  # groups added by AddOffsetsToTxn, per id
        self._locks: dict[str, trio.Lock] = defaultdict(trio.Lock)
        self.producer_ids = ProducerIdManager(broker.topics.manager.producer_ids)  # both kinds of InitProducerId

    # -- startup -------------------------------------------------------------------

    def load(self) -> None:
        """Replay ``__transaction_state``: the last record per id wins, a null value forgets the id."""
        if not self.topic.exists():
            return
        for index in range(self.topic.num_partitions):
            for batch, start in self.topic.batches(index):
                if batch.magic == 2 and batch.is_control:
                    continue
                for record in batch.iter_records():
                    if record.offset >= start:
                        self._replay(record.key, record.value)
        if self.txns:
            log.info("loaded %d transactional ids from %s", len(self.txns), TXN_TOPIC)

    def _replay(self, key: bytes | None, value: bytes | None) -> None:
        txn_id = parse_key(key) if key else None
        if txn_id is None:
            return
        if value is None:
            self.txns.pop(txn_id, None)
        else:
            self.txns[txn_id] = parse_value(txn_id, value)

    async def ready(self) -> ErrorCode | None:
        """None once ``__transaction_state`` exists (created on first use); COORDINATOR_NOT_AVAILABLE meanwhile."""
        with trio.move_on_after(READY_WAIT_S):
            await self.topic.ready()
        return None if self.topic.ensure_topic() else ErrorCode.COORDINATOR_NOT_AVAILABLE

    # -- InitProducerId ----------------------------------------------------------------

    async def init_producer_id(self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> Result:
        """``(error, producer id, epoch)`` for a transactional producer; ``expected`` is KIP-360's (id, epoch)."""
        if txn_id == "":
            return ErrorCode.INVALID_REQUEST, -1, -1
        if not 0 < timeout_ms <= self.broker.config.transaction_max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        error = await self.ready()
        if error is not None:
            return error, -1, -1
        async with self._locked(txn_id):
            try:
                return await self._init_locked(txn_id, timeout_ms, expected)
            except ProducerIdsUnavailable:  # Kafka: no block yet, CoordinatorLoadInProgressException; retried
                return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, -1

    async def _init_locked(self, txn_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> Result:
        meta, epoch = self.txns.get(txn_id), self.topic.epoch
        if meta is None:
            fresh = TxnMetadata(txn_id, await self.producer_ids.allocate(), 0, timeout_ms,
                                last_update_ms=self.broker.clock())  # fmt: skip
            return await self._answer(fresh, epoch)
        if expected is not None and not valid_expected(meta, expected):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if meta.state.is_prepare:
            meta = await self._complete(meta, epoch)
        if meta.state == TxnState.ONGOING:
            meta, error = await self._end_locked(meta, False, epoch, fence=True)
            if error is not None:  # Kafka answers the failed fence's error, not CONCURRENT_TRANSACTIONS
                return error, -1, -1
        if meta.state.is_prepare or meta.state == TxnState.ONGOING:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        bumped = await self._bump(meta, timeout_ms, None if expected is None else expected[1])
        if isinstance(bumped, ErrorCode):
            return bumped, -1, -1
        if bumped is meta:  # a retry of the bump it already got
            return ErrorCode.NONE, meta.producer_id, meta.producer_epoch
        return await self._answer(bumped, epoch)

    async def _bump(self, meta: TxnMetadata, timeout_ms: int,
                    expected_epoch: int | None) -> TxnMetadata | ErrorCode:  # fmt: skip
        """Kafka's prepareIncrementProducerEpoch / prepareProducerIdRotation (its new id allocated first)."""
        now = self.broker.clock()
        base = attrs.evolve(meta, state=TxnState.EMPTY, partitions=set(), timeout_ms=timeout_ms, last_update_ms=now,
                            start_ms=-1)  # fmt: skip
        # A fresh instance (no expected epoch) leaves no last epoch, also on rotation: a zombie's retry is fenced.
        last_epoch = -1 if expected_epoch is None else meta.producer_epoch
        if meta.epoch_exhausted and expected_epoch in (None, meta.producer_epoch):
            return attrs.evolve(base, producer_id=await self.producer_ids.allocate(), producer_epoch=0,
                                previous_producer_id=meta.producer_id, last_producer_epoch=last_epoch)  # fmt: skip
        if expected_epoch is None or expected_epoch == meta.producer_epoch:
            return attrs.evolve(base, producer_epoch=meta.producer_epoch + 1, last_producer_epoch=last_epoch)
        if expected_epoch == meta.last_producer_epoch:
            return meta
        return ErrorCode.PRODUCER_FENCED

    async def _answer(self, meta: TxnMetadata, epoch: int) -> Result:
        error = await self._persist(meta, epoch)
        if error is not None:
            return error, -1, -1
        return ErrorCode.NONE, meta.producer_id, meta.producer_epoch

    # -- AddPartitionsToTxn / AddOffsetsToTxn ------------------------------------------

    async def add_partitions(self, txn_id: str, producer_id: int, epoch: int,
                             partitions: set[tuple[str, int]]) -> ErrorCode:  # fmt: skip
        if txn_id == "":
            return ErrorCode.INVALID_REQUEST
        error = await self.ready()
        if error is not None:
            return error
        async with self._locked(txn_id):
            meta, topic_epoch = self.txns.get(txn_id), self.topic.epoch
            error = writer_error(meta, producer_id, epoch)
            if error is not None:
                return error
            if meta.state == TxnState.ONGOING and partitions <= meta.partitions:
                return ErrorCode.NONE
            now = self.broker.clock()
            start = meta.start_ms if meta.state == TxnState.ONGOING else now
            added = attrs.evolve(meta, state=TxnState.ONGOING, partitions=meta.partitions | partitions,
                                 last_update_ms=now, start_ms=start)  # fmt: skip
            return await self._persist(added, topic_epoch) or ErrorCode.NONE

    async def add_offsets(self, txn_id: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode:
        """AddOffsetsToTxn: the group's ``__consumer_offsets`` partition joins the transaction."""
        store = self.broker.groups.store
        with trio.move_on_after(READY_WAIT_S):
            await store.ready()
        if not store.ensure_topic():
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = await self.add_partitions(txn_id, producer_id, epoch, {self._offsets_partition(group_id)})
        if error == ErrorCode.NONE:
            self.groups[txn_id].add(group_id)
        return error

    def _offsets_partition(self, group_id: str) -> tuple[str, int]:
        return OFFSETS_TOPIC, self.broker.groups.store.partition_of(group_id)

    # -- checks of transactional writes (KIP-890 part 1) --------------------------------

    def verify_produce(self, txn_id: str | None, producer_id: int, epoch: int, topic: str,
                       index: int) -> ErrorCode | None:  # fmt: skip
        """None when a transactional batch of ``producer_id``/``epoch`` may go to ``topic``-``index``."""
        if txn_id is None:
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if not self.broker.config.transaction_partition_verification_enable:
            return None
        return self._in_transaction(txn_id, producer_id, epoch, (topic, index))

    def check_offsets_allowed(self, txn_id: str, producer_id: int, epoch: int, group_id: str) -> ErrorCode | None:
        """None when TxnOffsetCommit may write the group's offsets in this producer's open transaction."""
        if not self.broker.config.transaction_partition_verification_enable:
            return None
        return self._in_transaction(txn_id, producer_id, epoch, self._offsets_partition(group_id))

    def _in_transaction(self, txn_id: str, producer_id: int, epoch: int, tp: tuple[str, int]) -> ErrorCode | None:
        meta = self.txns.get(txn_id)
        error = writer_error(meta, producer_id, epoch)
        if error is not None:
            return error
        if meta.state != TxnState.ONGOING or tp not in meta.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return None

    # -- EndTxn ----------------------------------------------------------------------

    async def end(self, txn_id: str, producer_id: int, epoch: int, commit: bool) -> ErrorCode:
        if txn_id == "":
            return ErrorCode.INVALID_REQUEST
        async with self._locked(txn_id):
            meta, topic_epoch = self.txns.get(txn_id), self.topic.epoch
            error = producer_error(meta, producer_id, epoch)
            if error is not None:
                return error
            wanted = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
            if meta.state == TxnState.ONGOING:
                _done, error = await self._end_locked(meta, commit, topic_epoch)
                return error or ErrorCode.NONE
            if meta.state == wanted:  # a retry of the EndTxn that completed it
                return ErrorCode.NONE
            if meta.state == (TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT):
                return ErrorCode.CONCURRENT_TRANSACTIONS
            log.info("EndTxn(%s) of %s in state %s refused", "commit" if commit else "abort", txn_id, meta.state.name)
            return ErrorCode.INVALID_TXN_STATE

    async def _end_locked(self, meta: TxnMetadata, commit: bool, epoch: int,
                          fence: bool = False) -> tuple[TxnMetadata, ErrorCode | None]:  # fmt: skip
        """Prepare, write the markers, complete; returns the metadata as it stands after (unchanged on failure)
        and the error of writing the prepared state (what EndTxn answers; markers are retried). ``epoch``: the
        topic's when ``meta`` was read (``_persist``)."""
        prepared = attrs.evolve(meta, state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                                last_update_ms=self.broker.clock(), partitions=set(meta.partitions))  # fmt: skip
        if fence:  # Kafka's prepareFenceProducerEpoch: the markers carry a higher epoch than the zombie's
            prepared.producer_epoch = min(meta.producer_epoch + 1, EPOCH_MAX)
            prepared.last_producer_epoch = -1
        error = await self._persist(prepared, epoch)
        if error is not None:
            return meta, error
        return await self._complete(prepared, epoch), None

    async def _complete(self, meta: TxnMetadata, epoch: int) -> TxnMetadata:
        """Write the markers of a prepared transaction, then its Complete* state; nothing once the topic
        ``meta`` was read from is deleted (Kafka's ``removeMarkersForTxnTopicPartition`` drops them)."""
        commit = meta.state == TxnState.PREPARE_COMMIT
        groups = self.groups.get(meta.transactional_id, set())
        if epoch != self.topic.epoch or not await markers.write(self.broker, meta, commit, groups):
            return meta
        state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        done = attrs.evolve(meta, state=state, partitions=set(), last_update_ms=self.broker.clock())
        if await self._persist(done, epoch) is not None:
            return meta
        self.groups.pop(meta.transactional_id, None)
        return done

    # -- persistence and timers ----------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _locked(self, txn_id: str) -> AsyncIterator[None]:
        """Hold ``txn_id``'s lock; a lock nobody waits for is dropped once the id is unknown, so requests
        naming made-up ids leave nothing behind."""
        lock = self._locks[txn_id]
        try:
            async with lock:
                yield
        finally:
            if txn_id not in self.txns and not lock.statistics().tasks_waiting and not lock.locked():
                self._locks.pop(txn_id, None)

    async def _persist(self, meta: TxnMetadata, epoch: int, *, forget: bool = False) -> ErrorCode | None:
        """Write ``meta`` (or forget its id) and make it current once durable. ``epoch`` is the topic's when the
        request read ``meta``: once the topic was deleted since (``resign``), nothing is written and the answer
        is NOT_COORDINATOR, as Kafka's ``appendTransactionToLog`` answers when the coordinator epoch changed."""
        if epoch != self.topic.epoch:
            return ErrorCode.NOT_COORDINATOR
        key, value = key_bytes(meta.transactional_id), None if forget else value_bytes(meta)
        index = self.topic.partition_of(meta.transactional_id)
        await self.topic.ready()  # made again if it was deleted before ``epoch`` was read
        limit = self.broker.topics.effective_config(TXN_TOPIC).max_message_bytes  # as the log's append checks
        build = records_batch([(key, value)], self.broker.clock())
        error = txn_log_error(await self.topic.append_reporting(index, build, max_bytes=limit, epoch=epoch))
        if error is None:
            if forget:
                self.txns.pop(meta.transactional_id, None)
            else:
                self.txns[meta.transactional_id] = meta
        return error

    async def run(self) -> None:
        """Finish what a restart left prepared, then abort timed-out transactions and forget idle ids."""
        c = self.broker.config
        last_expiry = self.broker.clock()
        await self.retry_prepared()
        while True:
            await trio.sleep(c.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000)
            try:
                await self.retry_prepared()
                await self.abort_timed_out()
                if self.broker.clock() - last_expiry >= c.transaction_remove_expired_transaction_cleanup_interval_ms:
                    last_expiry = self.broker.clock()
                    await self.expire_ids()
            except Exception:  # the timers must outlive one failure
                log.exception("transaction coordinator duties failed")

    async def retry_prepared(self) -> None:
        for txn_id in [t for t, m in self.txns.items() if m.state.is_prepare]:
            async with self._locked(txn_id):
                meta, epoch = self.txns.get(txn_id), self.topic.epoch
                if meta is not None and meta.state.is_prepare:
                    await self._complete(meta, epoch)

    async def abort_timed_out(self) -> None:
        """Abort (and fence) every Ongoing transaction open longer than its ``transaction.timeout.ms``."""
        now = self.broker.clock()
        for txn_id in [t for t, m in self.txns.items() if m.state == TxnState.ONGOING]:
            async with self._locked(txn_id):
                meta, epoch = self.txns.get(txn_id), self.topic.epoch
                if meta is not None and meta.state == TxnState.ONGOING and meta.start_ms + meta.timeout_ms < now:
                    log.info("aborting transaction of %s: open longer than %d ms", txn_id, meta.timeout_ms)
                    await self._end_locked(meta, False, epoch, fence=True)

    async def expire_ids(self) -> None:
        """Forget ids with no open transaction and no change for ``transactional.id.expiration.ms``."""
        horizon = self.broker.clock() - self.broker.config.transactional_id_expiration_ms
        for txn_id in [t for t, m in self.txns.items() if m.state.is_complete and m.last_update_ms < horizon]:
            async with self._locked(txn_id):
                meta, epoch = self.txns.get(txn_id), self.topic.epoch
                if meta is not None and meta.state.is_complete and meta.last_update_ms < horizon:
                    await self._persist(meta, epoch, forget=True)

    def resign(self) -> None:
        """``__transaction_state`` was deleted: every transactional id is forgotten, as Kafka's coordinator drops
        the state of a partition it resigns (``removeTransactionsForTxnTopicPartition``); its writes in flight
        answer NOT_COORDINATOR and the next request that needs the topic makes it again, empty."""
        self.topic.deleted()
        log.warning("%s was deleted: %d transactional ids unloaded", TXN_TOPIC, len(self.txns))
        self.txns.clear()
        self.groups.clear()

    def open_transactions(self) -> int:
        return sum(1 for m in self.txns.values() if m.state == TxnState.ONGOING)


def _topic_configs(c: Any) -> dict[str, str]:
    """``__transaction_state``'s configs, as Kafka's ``TransactionStateManager.transactionTopicConfigs``."""
    return {"unclean.leader.election.enable": "false", "compression.type": "uncompressed",
            "cleanup.policy": "compact", "min.insync.replicas": str(c.transaction_state_log_min_isr),
            "segment.bytes": str(c.transaction_state_log_segment_bytes)}  # fmt: skip
