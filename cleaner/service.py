"""``LogCleaner``: ``log.cleaner.threads`` background threads running cleaning rounds.

Each thread owns a ``Cleaner`` (its own offset map, sized
``log.cleaner.dedupe.buffer.size / threads``) and loops: ask the shared
``CleanerManager`` for the filthiest log, clean it, record the round's
statistics, then apply retention to every compacted log not in progress
(``deletable_logs``: Kafka's LogManager leaves those logs to the cleaner, so
with the cleaner off they get none); when nothing was cleanable, sleep
``log.cleaner.backoff.ms`` (woken early by ``stop``). All
threads share one ``Throttler`` (``log.cleaner.io.max.bytes.per.second``).

Failures: a log whose round raises an unexpected error is marked
uncleanable (logged and counted) and the thread goes on with other logs; a
round abandoned because the log changed (deleted, segments removed by
retention or DeleteRecords, so a file it was reading is gone; or it began a
move to another log dir, which pauses its cleaning as in Kafka) or the cleaner
is stopping is only logged at INFO; a thread killed by an error outside a round
is counted in ``dead_threads``. ``reconfigure`` restarts the threads with new
tuning (dynamic broker configs). ``owner`` runs the short steps that touch a
log's segment list (swap, checkpoint, retention) on the thread that owns the
logs: in the broker, the trio thread, via ``trio.from_thread.run_sync``
(see ``broker.cleaning``). ``run_once`` is the loop's body, which tests call
directly under an injected clock.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

import attrs

from .cleaner import Cleaner, CleanerStats, CleaningAborted, run_here
from .gate import RequestGate
from .manager import CleanerManager
from .offset_map import OffsetMap
from storage.throttle import Throttler

log = logging.getLogger("minibroker.cleaner")


@attrs.frozen
class CleanerConfig:
    enable: bool = True
    threads: int = 1
    backoff_ms: int = 15_000
    dedupe_buffer_size: int = 128 << 20
    io_buffer_size: int = 512 << 10
    io_buffer_load_factor: float = 0.9
    io_max_bytes_per_second: float = float("inf")

    @classmethod
    def from_props(cls, other: dict[str, Any]) -> "CleanerConfig":
        names = {"enable": "log.cleaner.enable", "threads": "log.cleaner.threads",
                 "backoff_ms": "log.cleaner.backoff.ms", "dedupe_buffer_size": "log.cleaner.dedupe.buffer.size",
                 "io_buffer_size": "log.cleaner.io.buffer.size",
                 "io_buffer_load_factor": "log.cleaner.io.buffer.load.factor",
                 "io_max_bytes_per_second": "log.cleaner.io.max.bytes.per.second"}  # fmt: skip
        return cls(**{attr: other[key] for attr, key in names.items() if key in other})


class LogCleaner:
    def __init__(self, log_manager: Any, config: CleanerConfig, *, clock: Callable[[], int],
                 owner: Callable[[Callable[[], Any]], Any] = run_here,
                 gate: RequestGate | None = None) -> None:  # fmt: skip
        self.config = config
        self.gate = gate or RequestGate()
        self.clock = clock
        self.owner = owner
        self.manager = CleanerManager(log_manager, clock)
        self.throttler = Throttler(config.io_max_bytes_per_second)
        self._stop = threading.Event()
        self.cleaners = [self._new_cleaner() for _ in range(max(1, config.threads))]
        self.last_stats: list[CleanerStats | None] = [None] * len(self.cleaners)
        self._threads: list[threading.Thread] = []
        self.dead_threads = 0

    def _new_cleaner(self) -> Cleaner:
        c, stop = self.config, self._stop  # a cleaner of an earlier generation (see reconfigure) keeps its own
        offset_map = OffsetMap.for_threads(c.dedupe_buffer_size, c.threads, c.io_buffer_load_factor)
        return Cleaner(offset_map, clock=self.clock, throttler=self.throttler,
                       io_buffer_size=c.io_buffer_size // max(1, c.threads), owner=self.owner,
                       should_abort=lambda log_: stop.is_set() or not self._cleanable(log_),
                       gate=self.gate)  # fmt: skip

    def _should_abort(self, log_: Any) -> bool:
        return self._stop.is_set() or not self._cleanable(log_)

    def _cleanable(self, log_: Any) -> bool:
        return self.manager.is_current(log_) and not self.manager.paused(log_)

    # -- threads -----------------------------------------------------------------------

    def start(self) -> None:
        for i in range(len(self.cleaners)):
            thread = threading.Thread(target=self._run, args=(i, self._stop), name=f"kafka-log-cleaner-thread-{i}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float | None = 30) -> None:
        """Ask every thread to stop (a round in flight is abandoned) and wait for them."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def reconfigure(self, config: CleanerConfig) -> None:
        """New tuning at runtime (Kafka's LogCleaner.reconfigure, for dynamic broker configs): running
        threads stop (a round in flight is abandoned, its log left dirty for the next), the throttler takes
        the new rate, and ``config.threads`` threads start again with offset maps of the new size."""
        running = bool(self._threads)
        self.stop()
        self._threads, self._stop = [], threading.Event()
        self.config = config
        self.throttler.rate = config.io_max_bytes_per_second
        self.cleaners = [self._new_cleaner() for _ in range(max(1, config.threads))]
        self.last_stats = [None] * len(self.cleaners)
        if running and config.enable:
            self.start()

    def _run(self, index: int, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                if not self.run_once(index):
                    stop.wait(self.config.backoff_ms / 1000)
        except Exception:
            self.dead_threads += 1
            log.exception("log cleaner thread %d died", index)

    # -- one round ---------------------------------------------------------------------

    def run_once(self, index: int = 0) -> bool:
        """Clean the filthiest log, if one is cleanable, then apply retention to every compacted log (Kafka's
        ``cleanFilthiestLog``); True when a log was picked."""
        todo = self.manager.grab_filthiest(self.clock())
        if todo is not None:
            self._clean(index, todo)
        self._delete_old_segments()
        return todo is not None

    def _clean(self, index: int, todo: Any) -> None:
        log_ = todo.log
        try:
            stats = self.cleaners[index].clean(todo, lambda end: self.manager.done_cleaning(log_, end))
            self.last_stats[index] = stats
            log.info("%s: cleaned up to offset %d: indexed %d bytes; %d of %d records kept, %d -> %d bytes "
                     "in %.3f s", log_.name, stats.end_offset, stats.map_bytes_read, stats.records_kept,
                     stats.records_read, stats.bytes_read, stats.bytes_written, stats.elapsed_s)  # fmt: skip
        except (CleaningAborted, FileNotFoundError) as exc:  # the log changed under the round (e.g. retention)
            log.info("%s: cleaning abandoned (%s)", log_.name, exc)
        except Exception as exc:
            if self._should_abort(log_):
                log.info("%s: cleaning abandoned (%s)", log_.name, exc)
            else:
                self.manager.mark_uncleanable(log_)
                log.exception("%s: cleaning failed; the partition is marked uncleanable", log_.name)
        finally:
            self.manager.release(log_)

    def _delete_old_segments(self) -> None:
        """Retention of the compacted logs (``compact,delete``: retention.ms/bytes; any: segments below the
        log start offset), on the owner thread; a log whose retention fails is marked uncleanable, as Kafka
        does."""
        logs = self.manager.deletable_logs()
        if not logs:
            return

        def run() -> list:
            failed = []
            for log_ in logs:
                try:
                    if self.manager.is_current(log_):
                        log_.run_retention(self.clock())
                except Exception as exc:
                    failed.append((log_, exc))
            return failed

        try:
            failed = self.owner(run)
        finally:
            for log_ in logs:
                self.manager.release(log_)
        for log_, exc in failed:
            self.manager.mark_uncleanable(log_)
            log.error("%s: deleting old segments failed (%s); the partition is marked uncleanable", log_.name, exc)
