"""Topic names, ids and partitions: the broker's view of the storage layer's topics.

``TopicRegistry`` wraps the storage ``LogManager``: it applies Kafka's rules
for topic names (1-249 characters of ``[a-zA-Z0-9._-]``, not ``.`` or
``..``), refuses duplicates with TOPIC_ALREADY_EXISTS and bad counts with
INVALID_PARTITIONS, turns a disk failure while logs are created into
KAFKA_STORAGE_ERROR (storage removes what it made), lets a failed save of
the topics (``MetadataDirFailed``: the broker stops) through unanswered,
and hands out ``Partition`` objects that bundle a log with its effective
config and the settings produce validation needs.
Failures are ``TopicError`` carrying the Kafka error code to answer with.

Creating and growing topics make their logs a few at a time
(``storage.new_logs``): between slices of ``STEP_SLICE`` seconds the event
loop serves other connections, and readers see the topic (or the new
partitions) only once every log is made. Changes to the set of topics and
partitions, and their config changes (``handlers/_alter.store_overrides``),
run one at a time under ``changes``, as Kafka's controller applies them one
after another: a handler holds it from its checks to its change. The
steps are shielded from cancellation, so a change once begun is finished
(or, on a disk failure, undone) as a whole.

No topic change fsyncs on the event loop: its saves (a line of
``__topics.journal``, the metadata quorum's state, a deletion's
checkpoints) run on a worker thread (``run_steps``), while other
connections are served. Every change, config changes too, holds ``saves``
from a save to the memory change after it, so changes save and apply one
at a time and memory follows the journal's order.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from typing import Any, Iterator, Mapping

import attrs
import trio

from protocol import ErrorCode

from .log_validator import ValidationConfig

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")  # the length is checked on its own, for Kafka's message
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
STEP_SLICE = 0.005  # seconds of log making between checkpoints


class TopicError(Exception):
    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def check_topic_name(name: str | None) -> None:
    """INVALID_TOPIC_EXCEPTION with the reason Kafka's ``Topic.validate`` gives, if ``name`` is not legal."""
    reason = _invalid_because(name or "")
    if reason is not None:
        raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")


def missing_topic_error(name: str) -> ErrorCode:
    """Kafka's error for a named topic that does not exist: INVALID_TOPIC_EXCEPTION if the name is illegal."""
    return ErrorCode.INVALID_TOPIC_EXCEPTION if _invalid_because(name or "") else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _invalid_because(name: str) -> str | None:
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > 249:
        return f"the length of '{name}' is longer than the max allowed length 249"
    if not _LEGAL.match(name):
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


@attrs.define(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    internal: bool


@attrs.define(eq=False)
class Partition:
    """One partition's log, effective config and produce-validation settings."""

    topic: str
    index: int
    log: Any
    config: Any
    validation_config: ValidationConfig


# KIP-390: the config holding the level of a topic's own codec (gzip's -1 is zlib's default level)
_LEVEL_OF = {"gzip": "compression_gzip_level", "lz4": "compression_lz4_level", "zstd": "compression_zstd_level"}


def validation_config(config: Any) -> ValidationConfig:
    """The settings ``log_validator`` needs, from an effective topic config."""
    level = _LEVEL_OF.get(config.compression_type)
    return ValidationConfig(
        compression_type=config.compression_type,
        compression_level=getattr(config, level) if level else None,
        compacted="compact" in config.cleanup_policy,
        log_append_time=config.message_timestamp_type == "LogAppendTime",
        timestamp_before_max_ms=config.message_timestamp_before_max_ms,
        timestamp_after_max_ms=config.message_timestamp_after_max_ms,
        max_message_bytes=config.max_message_bytes,
        segment_bytes=config.segment_bytes,
        tombstone_header=config.tombstone_header,
    )


class TopicRegistry:
    """Topics and partitions over the storage ``LogManager``; see the module docstring."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self._partitions: dict[tuple[str, int], Partition] = {}
        self.changes = trio.Lock()  # held by whoever creates, grows, deletes or reconfigures a topic
        self.saves = trio.Lock()  # held by a change from a save to its next partition step or its end

    @classmethod
    def open(cls, config: Any, clock: Any) -> "TopicRegistry":
        return cls(cls.open_manager(config, clock))

    @staticmethod
    def open_manager(config: Any, clock: Any, progress: Any = None) -> Any:
        """The storage ``LogManager`` with every log loaded (no trio: a worker thread may run it);
        ``progress`` (``storage.load_progress.LoadProgress``) follows the loading."""
        from storage import ConfigError as StorageConfigError
        from storage import LogManager

        from .config import ConfigError

        try:
            return LogManager.open(config.log_dir_list(), config.log_props, clock, progress)
        except StorageConfigError as exc:
            raise ConfigError(str(exc)) from None

    @property
    def cluster_id(self) -> str:
        return self.manager.cluster_id

    @property
    def durable(self) -> bool:
        return self.manager.durable

    def names(self) -> list[str]:
        return list(self.manager.topics())

    def get(self, name: str) -> Topic | None:
        meta = self.manager.topic(name)
        if meta is None:
            return None
        return Topic(meta.name, meta.topic_id, meta.num_partitions, name in INTERNAL_TOPICS)

    def snapshot(self) -> dict[str, Topic]:
        """Every topic by name, read at once (for requests that look at many topics)."""
        return {name: Topic(meta.name, meta.topic_id, meta.num_partitions, name in INTERNAL_TOPICS)
                for name, meta in self.manager.topics().items()}  # fmt: skip

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self.manager.name_for_id(topic_id)

    def names_by_id(self) -> Mapping[uuid.UUID, str]:
        """Every topic's name by its id (for requests that name many topics by id): read-only, built once
        after a topic came or went, not per request."""
        return self.manager.names_by_id()

    async def create(self, name: str, num_partitions: int, configs: dict[str, str],
                     validate_only: bool = False) -> Topic:  # fmt: skip
        """Create ``name`` (the caller holds ``changes``)."""
        from storage import ConfigError as StorageConfigError

        check_topic_name(name)
        if self.manager.topic(name) is not None:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if num_partitions < 1:
            raise TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        with _disk_failures_answered():  # nothing of the topic is left
            try:
                steps = self.manager.create_topic_steps(name, num_partitions, configs, validate_only=validate_only)
                await run_steps(steps, self.saves)
            except StorageConfigError as exc:
                raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        meta = steps.meta
        return Topic(meta.name, meta.topic_id, meta.num_partitions, name in INTERNAL_TOPICS)

    async def add_partitions(self, name: str, new_total: int) -> None:
        """Grow ``name`` to ``new_total`` partitions, all or none; a disk failure is KAFKA_STORAGE_ERROR
        (the caller holds ``changes``)."""
        try:
            with _disk_failures_answered():
                await run_steps(self.manager.add_partitions_steps(name, new_total), self.saves)
        finally:
            self.invalidate(name)

    async def delete(self, name: str) -> None:
        """Delete ``name``; if that cannot be saved, KAFKA_STORAGE_ERROR and the topic stays (the caller
        holds ``changes``)."""
        if self.manager.topic(name) is None:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        try:
            with _disk_failures_answered():
                await run_steps(self.manager.deletion_steps(name), self.saves)
        finally:  # after the change: a Produce or Fetch served while it saved may have cached a partition
            self.invalidate(name)

    async def set_overrides(self, name: str, overrides: dict[str, str]) -> None:
        """Make ``overrides`` the topic's (``storage.ConfigError``, ``StorageError`` as the storage raises
        them; UNKNOWN_TOPIC_OR_PARTITION if it was deleted while this waited for its turn); saved first,
        then applied."""
        try:
            await run_steps(self.manager.overrides_steps(name, overrides), self.saves)
        except KeyError:
            raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.") from None
        self.invalidate(name)

    def invalidate(self, name: str | None) -> None:
        """Forget cached partitions of ``name`` (after a config change, deletion or growth); None: of
        every topic (new broker-level defaults)."""
        for key in [k for k in self._partitions if name is None or k[0] == name]:
            del self._partitions[key]

    def offline_partitions(self, name: str) -> set[int]:
        """The partitions of ``name`` in a failed log dir (none while every dir is online)."""
        manager = self.manager
        if not manager.failures.offline:
            return set()
        return {log_.partition for log_ in manager.logs() if log_.topic == name and log_.offline}

    def partition(self, topic: str, index: int) -> Partition | None:
        cached = self._partitions.get((topic, index))
        if cached is not None and not cached.log.deleted:
            return cached
        if cached is not None:  # a deletion still saving closed its log: gone now (Kafka's stopPartitions)
            del self._partitions[(topic, index)]
        log = self.manager.get_log(topic, index)
        if log is None:
            return None
        config = self.manager.effective_config(topic)
        partition = Partition(topic, index, log, config, validation_config(config))
        self._partitions[(topic, index)] = partition
        return partition

    def __getattr__(self, name: str) -> Any:
        # Storage duties and group commit pass straight through to the LogManager.
        if name in _PASS_THROUGH:
            return getattr(self.manager, name)
        raise AttributeError(name)


_PASS_THROUGH = frozenset(
    {
        "roll_idle_segments", "run_retention", "write_checkpoints", "delete_expired_files", "flush_generation",
        "flushed_generation", "partition_states", "close", "describe_config", "effective_config",
        "topics", "remove_expired_producers",
    }
)  # fmt: skip


@contextlib.contextmanager
def _disk_failures_answered() -> Iterator[None]:
    """A topic change's disk failure (``StorageError``) as KAFKA_STORAGE_ERROR; a failed save of the topics
    (``MetadataDirFailed``, not a ``StorageError``) goes on unanswered: the broker stops (dispatch closes the
    connection)."""
    from storage import StorageError

    try:
        yield
    except StorageError as exc:
        raise TopicError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None


async def run_steps(steps: Any, saves: trio.Lock) -> None:
    """Run a topic change's steps (``storage.steps``), shielded: a change once begun is finished or undone
    whole. Its saves (fsyncs) run on a worker thread; ``saves`` is held from the start to the end but for
    the pauses between log-making steps, every ``STEP_SLICE`` seconds, that let other tasks in: so one
    change at a time saves and applies what it saved, and memory follows the journal's order."""
    with trio.CancelScope(shield=True):
        await saves.acquire()
        try:
            await _drive(steps, saves)
        finally:
            saves.release()


async def _drive(steps: Any, saves: trio.Lock) -> None:
    from storage.steps import Save

    failure: BaseException | None = None
    started = time.perf_counter()
    while True:
        try:
            step = steps.send(failure)
        except StopIteration:
            return
        failure = None
        if isinstance(step, Save):
            try:
                await trio.to_thread.run_sync(step)
            except Exception as exc:  # the change undoes what it did, then raises
                failure = exc
        elif time.perf_counter() - started > STEP_SLICE:
            saves.release()
            await trio.sleep(0)
            await saves.acquire()
            started = time.perf_counter()
