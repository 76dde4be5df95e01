"""The broker's shared state: storage, topics, append wake-ups, metrics, duties.

One ``Broker`` per server. Handlers reach everything through it:

* ``topics`` (``TopicRegistry``) for names, ids and ``Partition`` objects;
* ``append(partition, validated)`` writes validated records to the log, maps
  storage failures to KAFKA_STORAGE_ERROR and wakes every waiting Fetch;
  ``append_own`` does so for the broker's own records (coordinators',
  markers), counted in the topic's metrics as Kafka counts them;
* ``wait_for_append()`` parks a long-polling Fetch until the next append;
* ``wait_durable()`` returns once everything appended so far is fsynced when
  the durable flush mode is on (one group commit serves all waiters); in that
  mode the high watermark is the fsynced offset, so every append also starts
  a background round and fetches are woken when it ends;
* the flush policy (``flush.messages``, ``flush.ms``) rides the same group
  commit in any mode: an append after which ``flush.messages`` wants a flush
  notes it and starts a round; a Produce waits for it (``wait_flushed``)
  before it answers; the ``flush.ms`` timer (``tick``) notes and starts
  rounds, which nobody waits for (Kafka's scheduler);
* ``tick()`` runs the timed duties (retention, idle rolls, producer-id expiry, checkpoints);
* ``groups`` (``GroupManager``) coordinates consumer groups and keeps their
  offsets in ``__consumer_offsets``;
* ``transactions`` (``TransactionCoordinator``) serves transactional
  producers and keeps their state in ``__transaction_state``. When either
  internal topic is deleted, ``internal_topic_deleted`` makes its
  coordinator resign: its state dropped, the topic made again on next use.
* ``scram`` (``ScramStore``) holds the users' SCRAM credentials, read from
  the first log dir at start (once its logs opened: the dir is validated and
  locked; ``serve --add-scram``'s users are added then) and rewritten there
  on every change.
* ``dynamic_config`` (``DynamicBrokerConfig``) holds the dynamic broker
  configs, applied at start and changed by AlterConfigs on a BROKER resource.
* ``group_configs`` (``GroupConfigs``) holds the group configs (GROUP
  resources), read at start and changed by AlterConfigs on a GROUP resource.
* ``quotas`` (``ClientQuotas``) holds the client quotas and measures the
  clients' byte rates against them.
* ``log_dir_moves`` (``LogDirMoves``) runs the moves of partitions between
  log dirs (AlterReplicaLogDirs) in the background.
* ``authorizer`` (``Authorizer``, or None without ``authorizer.class.name``)
  decides what each principal may do, from the ACLs kept in the first log dir;
  its metrics (decision rates, ACL count) are on the metrics endpoint.
* ``quorum`` (``MetadataQuorum``) is the KRaft quorum a one-node Kafka would
  be (DescribeQuorum): its leader epoch grows at each start, its end offset
  with each metadata change, which every store of metadata reports through
  its ``on_metadata_change`` hook. Its raft, controller and broker-metadata
  gauges are on the metrics endpoint (``quorum_metrics.py``).
* ``loop_idle`` (``LoopIdle``) times the trio loop's I/O waits for Kafka's
  network-processor and request-handler idle-percent gauges.
* the Log, Partition, ReplicaManager and LogManager gauges are read from
  storage at each scrape (``replica_metrics.py``); the series whose value a
  single node fixes (ISR changes, queue sizes) are in ``fixed_metrics.py``.
  ``open_serving`` (the server's start) brings the metrics endpoint up before
  the logs load, in a worker thread, with Kafka's recovery gauges meanwhile.

All of this runs in the trio thread; storage calls are short and synchronous,
except fsync, which goes to a worker thread (group-commit rounds, checkpoints).
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from protocol import ErrorCode
from storage.load_progress import LoadProgress

from .dynamic_config import DynamicBrokerConfig
from .fetch_sessions import FetchSessionCache
from .authorizer import Authorizer
from .clock import wall_clock_ms
from .group_configs import GroupConfigs
from .groups.manager import GroupManager
from .groups.store import OFFSETS_TOPIC
from .listeners import advertised_endpoints
from .log_dir_moves import LogDirMoves
from .log_validator import ValidatedRecords
from .loop_idle import LoopIdle
from .metadata_quorum import MetadataQuorum
from .fixed_metrics import FixedSeries
from .metrics import BrokerMetrics
from .quorum_metrics import CurrentState, quorum_samples
from .replica_metrics import LATE_TRANSACTION_BUFFER_MS, recovery_samples, replica_samples
from .quotas import ClientQuotas
from .request_time import TaskTime
from .sampled_stat import metric_windows
from .scram_store import add_scram
from .store_saves import StoreSaves
from .topics import INTERNAL_TOPICS, Partition, TopicRegistry
from .transactions import TXN_TOPIC, TransactionCoordinator

log = logging.getLogger("minibroker")


class Broker:
    tick_interval_s = 1.0

    def __init__(self, config: Any, topics: TopicRegistry, clock=wall_clock_ms,
                 metrics: BrokerMetrics | None = None) -> None:  # fmt: skip
        self.config = config
        self.topics = topics
        self.clock = clock
        windows = metric_windows(config)  # metrics.num.samples, metrics.sample.window.ms
        self.metrics = metrics or BrokerMetrics(windows)
        self.bound: list[tuple[str, int]] = []
        self.bound_listeners: list[tuple[str, str, int]] = []  # (listener name, host, port) of each socket
        self.advertised: tuple[str, int] = ("localhost", 0)  # the first listener's
        self.advertised_by_listener: dict[str, tuple[str, int]] = {}
        self.tls_contexts: dict[str, Any] = {}  # a listener's TLS context since a keystore reload
        self.cluster_id = topics.cluster_id
        self.quorum = MetadataQuorum.start(config.log_dir_list()[0], clock, windows)
        self._append_lot = trio.lowlevel.ParkingLot()
        self._durable = topics.durable
        self._commit_pending = False
        self._last_duties: dict[str, int] = {}
        self._storage_metrics()
        self.groups = GroupManager(self)
        self.stopping = False  # the server stops (``stop_waits``): long polls answer at once
        self.metrics.add_state_collector(self.groups.state_metrics)
        self.transactions = TransactionCoordinator(self)
        self.scram = add_scram(config.log_dir_list()[0], config.add_scram)  # the dir is locked by now
        self.dynamic_config = DynamicBrokerConfig.load(self)
        self.group_configs = GroupConfigs.load(config)
        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        self.metrics.add_state_collector(self.fetch_sessions.metric_samples)
        self.metrics.add_state_collector(lambda: self.metrics.logins.metric_samples(self.clock()))
        self.quotas = ClientQuotas.load(config.log_dir_list()[0], config.quota_window_num,
                                        config.quota_window_size_seconds, windows)
        self.metrics.add_state_collector(lambda: self.quotas.metric_samples(self.clock()))
        self.request_time = TaskTime()  # installed while a request_percentage quota is set
        self.loop_idle = LoopIdle(windows)  # installed by the server: Kafka's idle-percent gauges
        self.metrics.add_state_collector(self.loop_idle.metric_samples)
        self.log_dir_moves = LogDirMoves(topics.manager)
        topics.manager.moves.set_rate(config.replica_alter_log_dirs_io_max_bytes_per_second)
        self.authorizer = self._load_authorizer(windows)
        self._count_metadata_changes()

    def internal_topic_deleted(self, name: str) -> None:
        """A deleted topic that was ``__consumer_offsets`` or ``__transaction_state``: its coordinator resigns
        (Kafka's ``BrokerMetadataPublisher.updateCoordinator`` for a deleted topic)."""
        if name == OFFSETS_TOPIC:
            self.groups.resign()
        elif name == TXN_TOPIC:
            self.transactions.resign()

    def _storage_metrics(self) -> None:
        """The Log, Partition, ReplicaManager, LogManager and quorum gauges, read at each scrape."""
        config, manager = self.config, self.topics.manager
        late_after_ms = config.transaction_max_timeout_ms + LATE_TRANSACTION_BUFFER_MS
        self.metrics.add_state_collector(lambda: replica_samples(manager, self.clock(), late_after_ms))
        self.metrics.registry.register(FixedSeries())
        self.metrics.add_state_collector(lambda: quorum_samples(self.quorum, config.node_id))
        self.metrics.registry.register(CurrentState())

    def _load_authorizer(self, windows: tuple[int, int]) -> Authorizer | None:
        """The ACL authorizer when ``authorizer.class.name`` is set, its metrics on the endpoint."""
        config = self.config
        if not config.authorizer_class_name:
            return None
        authorizer = Authorizer.load(config.log_dir_list()[0], config.super_users,
                                     config.allow_everyone_if_no_acl_found, self.clock, windows)
        self.metrics.add_state_collector(authorizer.metric_samples)
        return authorizer

    def _count_metadata_changes(self) -> None:
        """Point every store of metadata at the quorum's end offset, and a save in doubt
        (``store_saves.py``) at the failure of the metadata log dir, the first."""
        stores = (self.topics.manager, self.scram, self.dynamic_config, self.group_configs, self.quotas,
                  self.authorizer, self.transactions.producer_ids)  # fmt: skip
        manager = self.topics.manager
        for store in stores:
            if store is not None:
                store.on_metadata_change = self.quorum.append
            if isinstance(getattr(store, "saves", None), StoreSaves):
                store.saves.on_in_doubt = lambda why: manager.failures.fail_dir(manager.dirs[0], why)
                store.saves.offline = lambda: manager.failures.metadata_offline

    @classmethod
    def open(cls, config: Any) -> "Broker":
        return cls._built(config, TopicRegistry.open(config, wall_clock_ms))

    @classmethod
    def _built(cls, config: Any, topics: TopicRegistry, metrics: BrokerMetrics | None = None) -> "Broker":
        """The broker over loaded logs; if it cannot be made (a corrupt credentials file, say) the logs are
        closed again, as Kafka's shutdown after a failed start closes its LogManager: their clean-shutdown
        marker is written back, so the next start does not recover them."""
        try:
            return cls(config, topics, metrics=metrics)
        except BaseException:
            topics.close()
            raise

    @classmethod
    async def open_serving(cls, config: Any) -> "Broker":
        """``open``, with the metrics endpoint up before the logs load, as a Kafka process's JMX is.

        The logs load in a worker thread; meanwhile the endpoint serves the counters (all 0) and Kafka's
        recovery gauges (``recovery_samples``), which go once loading ends. The gauges that read the
        broker's state are registered by ``__init__``, after the load, so none reads a half-built broker;
        but the groups and transactions are loaded from their logs by ``serve_broker`` after this returns,
        so until then their gauges count none. No listener is open before this returns."""
        metrics = BrokerMetrics(metric_windows(config))
        if config.prometheus_port:
            metrics.serve_http(config.prometheus_host, config.prometheus_port)
        progress = LoadProgress()
        recovery = metrics.add_state_collector(lambda: recovery_samples(progress))
        try:
            manager = await trio.to_thread.run_sync(TopicRegistry.open_manager, config, wall_clock_ms, progress)
            metrics.registry.unregister(recovery)
            return cls._built(config, TopicRegistry(manager), metrics)
        except BaseException:
            metrics.stop_http()
            raise

    def set_bound(self, bound: list[tuple[str, str, int]]) -> None:
        """Record the bound sockets, ``(listener name, host, port)`` each, and what each listener advertises."""
        self.bound = [(host, port) for _name, host, port in bound]
        self.bound_listeners = list(bound)
        self.advertised_by_listener = advertised_endpoints(self.config, bound)
        self.advertised = next(iter(self.advertised_by_listener.values()))

    def advertised_for(self, listener: str | None) -> tuple[str, int]:
        """What Metadata tells a client that connected to ``listener``."""
        return self.advertised_by_listener.get(listener or "", self.advertised)

    def start_metrics(self) -> None:
        """Start the metrics endpoint unless it is already up (``open_serving`` starts it before the load)."""
        if self.config.prometheus_port and self.metrics.http_server is None:
            self.metrics.serve_http(self.config.prometheus_host, self.config.prometheus_port)

    # -- partitions -----------------------------------------------------------

    def partition_for_produce(self, topic: str, index: int) -> Partition | ErrorCode:
        if topic in INTERNAL_TOPICS:
            return ErrorCode.INVALID_TOPIC_EXCEPTION
        return self.partition_for_fetch(topic, index)

    def partition_for_fetch(self, topic: str, index: int) -> Partition | ErrorCode:
        """The partition; KAFKA_STORAGE_ERROR once its log dir is offline (Kafka's getPartitionOrException)."""
        partition = self.topics.partition(topic, index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.KAFKA_STORAGE_ERROR if partition.log.offline else partition

    def partition_error(self, topic: str, index: int, appended: Partition | None = None) -> ErrorCode | None:
        """What Kafka's purgatory finds for a partition an acks=-1 append waited on (``DelayedProduce.tryComplete``,
        ``ReplicaManager.getPartitionOrError``): ``partition_for_fetch``'s error, None while it is there and
        online. ``appended``, the partition the append went to: one of that name whose log is another (its topic
        deleted and created again during the wait) does not hold the append, UNKNOWN_TOPIC_OR_PARTITION, as
        Kafka completes the waiting append with that error when it removes the partition. The log, not the
        Partition, is compared: a config change or added partitions make a new cached Partition of the same
        log (``TopicRegistry.invalidate``), and a move to another log dir keeps the log."""
        found = self.partition_for_fetch(topic, index)
        if isinstance(found, ErrorCode):
            return found
        return None if appended is None or found.log is appended.log else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    async def not_durable(self, appended: list[tuple[tuple[str, int], Partition | None]],
                          what: str) -> list[ErrorCode | None]:  # fmt: skip
        """Wait (durable mode) until the appends just made (``appended``: each (topic, index) and the partition
        it went to, taken right after the append) are on disk; the error of each, in order, as Kafka answers an
        acks=-1 append: all KAFKA_STORAGE_ERROR when the round failed whole (``what`` appended, for the log),
        else what its purgatory finds for each (``partition_error``), None for one that is durable."""
        try:
            await self.wait_durable()
        except OSError as exc:
            log.error("the fsync of %s failed: %s", what, exc)
            return [ErrorCode.KAFKA_STORAGE_ERROR] * len(appended)
        return [self.partition_error(*tp, partition) for tp, partition in appended]

    def append(self, partition: Partition, validated: ValidatedRecords,
               flushes: list[int] | None = None) -> ErrorCode | None:  # fmt: skip
        """Append to the partition's log (None, or KAFKA_STORAGE_ERROR). When ``flush.messages`` messages are
        then unflushed, the flush is noted for a group-commit round on a worker thread: ``flushes`` gets the
        generation whose round the producer must wait for (``wait_flushed``) before it answers, as Kafka answers
        a Produce after the flush in its append; without ``flushes`` (nobody waits) a round starts in the
        background. ``flush.ms`` is the timer's (``tick``), as in Kafka: it delays no append."""
        try:
            partition.log.append(
                validated.data, validated.first_offset, validated.last_offset, validated.max_timestamp
            )
        except OSError as exc:
            if not partition.log.offline:  # offline: its dir's failure is logged once (``LogDirFailures``)
                log.error("append to %s-%d failed: %s", partition.topic, partition.index, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        self._append_lot.unpark_all()
        due = partition.log.flush_messages_due
        if due:
            generation = self.topics.manager.note_flush_due(partition.log)
            if flushes is not None:  # the producer waits for (and so runs) the round
                flushes.append(generation)
                return None
        if due or self._durable:  # in durable mode the high watermark moves at the next fsync round
            self._commit_in_background()
        return None

    def _commit_in_background(self) -> None:
        """Start a group-commit round for what nobody waits for (unless one is about to start)."""
        if not self._commit_pending:
            self._commit_pending = True
            trio.lowlevel.spawn_system_task(self._commit_soon)

    def append_own(self, partition: Partition, validated: ValidatedRecords) -> ErrorCode | None:
        """Append records the broker writes itself (coordinator records, transaction markers). Kafka's
        coordinators write them through ``ReplicaManager.appendRecords`` like a producer's, so they count
        in that topic's BrokerTopicMetrics: a produce request, and messages and bytes in once appended."""
        metrics, topic = self.metrics, partition.topic
        metrics.total_produce.labels(topic).inc()
        error = self.append(partition, validated)
        if error is None:
            metrics.messages_in.labels(topic).inc(validated.last_offset - validated.first_offset + 1)
            metrics.bytes_in.labels(topic).inc(len(validated.data))
        return error

    async def _commit_soon(self) -> None:
        """Run a group-commit round for appends nobody waits for: durable mode's acks 0 and 1, the flushes
        the flush policy wants after the broker's own appends or on the ``flush.ms`` timer."""
        try:
            self._commit_pending = False
            await self.wait_flushed()
        except OSError as exc:  # the round failed whole (a failed fsync took its dir offline, logged there)
            log.warning("background group commit failed: %s", exc)
        except Exception:
            log.exception("background group commit failed")

    async def wait_for_append(self) -> None:
        await self._append_lot.park()

    def stop_waits(self) -> None:
        """The server stops: a long-polling Fetch answers now with what there is (``stopping``), a parked
        JoinGroup or SyncGroup NOT_COORDINATOR, so no client's wait holds the stop's grace."""
        self.stopping = True
        self.wake_fetches()
        self.groups.coordinator.unload()

    def wake_fetches(self) -> None:
        """Wake every long-polling Fetch to read again (a log dir failed: its partitions answer at once)."""
        self._append_lot.unpark_all()

    async def wait_durable(self) -> None:
        """In durable mode, return once a round covered all appends so far (``wait_flushed``).

        ``LogManager.sync_to`` is the group commit: waiters queue on one lock in
        worker threads and one fsync round covers everybody appended before it.
        """
        if self._durable:
            await self.wait_flushed()

    async def wait_flushed(self, generation: int | None = None) -> None:
        """Return once the group commit's rounds covered ``generation`` (all appends so far if None; in a
        worker thread, off the loop): every log of it fsynced or offline, which the caller checks for its own
        logs (``Log.offline``), as Kafka answers an append for its own log. ``StorageError`` if the round
        that covered it failed whole, however late the caller asks (``LogManager.waiting``)."""
        manager = self.topics.manager
        with manager.waiting() as now:
            generation = now if generation is None else generation
            if not manager.settled(generation):
                await trio.to_thread.run_sync(manager.sync_to, generation)
                self._append_lot.unpark_all()  # in durable mode the high watermark moved: wake long-polling fetches

    # -- duties ------------------------------------------------------------------

    def tick(self) -> bool:
        """Run the quick timed duties; True when a checkpoint write (which may fsync) is due."""
        now = self.clock()
        if self.topics.roll_idle_segments(now):  # flush.ms flushes are due: a round on a worker thread
            self._commit_in_background()
        if self._due("retention", now, self.config.log_retention_check_interval_ms, first=True):
            self.topics.run_retention(now)
        self.topics.delete_expired_files(now)
        if self._due("producer expiration", now, self.config.producer_id_expiration_check_interval_ms):
            self.topics.remove_expired_producers(now)
        return self._due("checkpoint", now, self.config.log_flush_offset_checkpoint_interval_ms, first=True)

    def _due(self, name: str, now: int, interval_ms: int, first: bool = False) -> bool:
        """Whether duty ``name`` runs now: every ``interval_ms``, counted from the first tick; with ``first``,
        its first run comes ``log.initial.task.delay.ms`` after the start, sooner or later than the interval
        (Kafka's ``LogManager.startupWithConfigOverrides`` schedules retention and checkpoints with that
        initial delay, then every interval)."""
        early = interval_ms - self.config.log_initial_task_delay_ms if first else 0  # < 0: a delay beyond it
        last = self._last_duties.setdefault(name, now - early)
        if now - last >= interval_ms:
            self._last_duties[name] = now
            return True
        return False

    def close(self) -> None:
        self.metrics.stop_http()
        self.topics.close()

