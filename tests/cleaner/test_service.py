"""The cleaner service: threads, failures, retention of compact,delete logs, live producers, the throttle."""

from __future__ import annotations

import threading
import time

import pytest

from cleaner import CleanerConfig, LogCleaner, Throttler
from cleaner import metrics as cleaner_metrics
from cleaner.recopy import BatchFilter
from protocol.records import iter_batches
from tests.cleaner.helpers import Model, compacted_log, open_manager, read_batches, read_records
from tests.storage.lead_helpers import Clock


def _dirty(lm, name: str, **overrides):
    log_ = compacted_log(lm, name, **overrides)
    for i in range(6):
        Model().write(log_, [(b"k", b"v%d" % i, 0)])
    log_.roll()
    return log_


def test_an_error_on_one_partition_marks_it_uncleanable_and_the_others_go_on(tmp_path, monkeypatch):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    bad, good = _dirty(lm, "bad"), _dirty(lm, "good")
    real = BatchFilter.filter

    def failing(self, entry):
        if self.map.latest_offset >= 0 and bad.dir.name in str(entry_owner[0]):
            raise ValueError("boom")
        return real(self, entry)

    entry_owner = [""]
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    monkeypatch.setattr(BatchFilter, "filter", failing)
    orig_clean = cleaner.cleaners[0].clean

    def clean(todo, on_done):
        entry_owner[0] = todo.log.dir
        return orig_clean(todo, on_done)

    cleaner.cleaners[0].clean = clean
    while cleaner.run_once():
        pass
    assert set(cleaner.manager.uncleanable) == {("bad", 0)}
    assert len(read_records(good)) == 1 and len(read_records(bad)) == 6
    gauges = {name: samples for name, _d, _l, samples in cleaner_metrics.samples(cleaner)}
    assert gauges["kafka_log_logcleanermanager_uncleanable_partitions_count"] == [([str(tmp_path)], 1.0)]
    assert gauges["kafka_log_logcleanermanager_uncleanable_bytes"][0][1] == bad.size_in_bytes - bad.active.size
    assert gauges["kafka_log_logcleanermanager_cleaning_failures"] == [([], 1.0)]


def test_a_thread_that_dies_is_counted(tmp_path, monkeypatch):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    cleaner = LogCleaner(lm, CleanerConfig(backoff_ms=10), clock=clock)
    monkeypatch.setattr(cleaner.manager, "grab_filthiest", lambda now: 1 / 0)
    cleaner.start()
    deadline = time.monotonic() + 10
    while cleaner.dead_threads == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    cleaner.stop()
    assert cleaner.dead_threads == 1
    assert dict((n, s) for n, _d, _l, s in cleaner_metrics.samples(cleaner))[
        "kafka_log_logcleaner_deadthreadcount"] == [([], 1.0)]


def test_threads_clean_in_the_background_and_stop(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    logs = [_dirty(lm, f"t{i}") for i in range(4)]
    cleaner = LogCleaner(lm, CleanerConfig(threads=2, backoff_ms=10), clock=clock)
    cleaner.start()
    deadline = time.monotonic() + 20
    while any(len(read_records(l)) != 1 for l in logs) and time.monotonic() < deadline:
        time.sleep(0.02)
    cleaner.stop()
    assert [len(read_records(l)) for l in logs] == [1, 1, 1, 1]
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("kafka-log-cleaner"))


def test_reconfigure_restarts_the_threads_with_the_new_tuning(tmp_path):
    """Kafka's LogCleaner.reconfigure (dynamic broker configs): old threads stop, the new count starts."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    cleaner = LogCleaner(lm, CleanerConfig(threads=1, backoff_ms=10), clock=clock)
    cleaner.start()
    first = [t for t in threading.enumerate() if t.name.startswith("kafka-log-cleaner")]
    cleaner.reconfigure(CleanerConfig(threads=2, backoff_ms=10, io_max_bytes_per_second=1e6))
    try:
        assert len(cleaner.cleaners) == 2 and cleaner.throttler.rate == 1e6
        assert not any(t.is_alive() for t in first)
        assert sum(t.is_alive() for t in threading.enumerate() if t.name.startswith("kafka-log-cleaner")) == 2
        logs = [_dirty(lm, f"r{i}") for i in range(2)]
        deadline = time.monotonic() + 20
        while any(len(read_records(l)) != 1 for l in logs) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert [len(read_records(l)) for l in logs] == [1, 1]
    finally:
        cleaner.stop()
    assert not any(t.is_alive() for t in threading.enumerate() if t.name.startswith("kafka-log-cleaner"))
    stopped = LogCleaner(lm, CleanerConfig(), clock=clock)  # never started: stays stopped, takes the tuning
    stopped.reconfigure(CleanerConfig(threads=2))
    assert len(stopped.cleaners) == 2 and not stopped._threads


def test_compact_delete_logs_get_retention_after_cleaning(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = _dirty(lm, "cd", cleanup_policy="compact,delete", retention_ms=1000)
    clock.advance(5000)
    Model().write(log_, [(b"new", b"1", 0)])  # in the active segment, so not merged with the old ones
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    assert [r.key for r in read_records(log_)] == [b"new"]
    assert log_.log_start_offset == 6


def test_every_round_applies_retention_to_the_compacted_logs_even_with_nothing_to_clean(tmp_path):
    """Kafka's cleanFilthiestLog ends each attempt with deleteOldSegments on every compacted log neither in
    progress nor uncleanable (deletableLogs); delete-only logs are the LogManager's."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    logs = {}
    for name, policy in (("cd", "compact,delete"), ("bad", "compact,delete"), ("d", "delete")):
        logs[name] = compacted_log(lm, name, cleanup_policy=policy, retention_ms=1000,
                                   min_cleanable_dirty_ratio=0.99)  # fmt: skip
        Model().write(logs[name], [(b"k", b"v", 0)])
    clock.advance(5000)
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    cleaner.manager.mark_uncleanable(logs["bad"])
    assert cleaner.run_once() is False  # nothing cleanable: the active segments only
    assert [logs[n].log_start_offset for n in ("cd", "bad", "d")] == [1, 0, 0]
    assert read_records(logs["cd"]) == [] and not cleaner.manager.in_progress


def test_the_last_batch_of_a_live_producer_is_kept_empty(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, min_cleanable_dirty_ratio=0.01)
    Model().write(log_, [(b"k", b"1", 0)], producer_id=7, base_sequence=0)  # offset 0: the producer's last
    Model().write(log_, [(b"k", b"2", 0)])
    Model().write(log_, [(b"k", b"3", 0)])
    log_.roll()
    assert log_.producer_state.last_offsets(clock.now) == {7: 0}  # filled by the appends themselves
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    batches = read_batches(log_)
    assert [(b.base_offset, b.records_count, b.producer_id) for b in batches] == [(0, 0, 7), (2, 1, -1)]
    assert batches[0].base_sequence == 0 and batches[0].is_valid()
    clock.advance(86_400_001)  # once the producer has expired its batch may go
    Model().write(log_, [(b"k", b"4", 0)])
    log_.roll()
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    assert [b.base_offset for b in read_batches(log_)] == [3]


def test_the_round_s_last_batch_is_kept_even_when_emptied(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, delete_retention_ms=0)
    Model().write(log_, [(b"k", b"1", 0)])
    Model().write(log_, [(b"k", None, 0)])
    log_.roll()
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    cleaner.run_once()
    Model().write(log_, [(b"z", b"1", 0)])
    log_.roll()
    clock.advance(1)
    cleaner.run_once()
    assert [(b.base_offset, b.records_count) for b in read_batches(log_)] == [(2, 1)]


def test_a_fetch_slice_taken_before_the_swap_stays_readable(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = _dirty(lm, "s", file_delete_delay_ms=0)
    piece = log_.read(0, 1 << 20, min_one_message=True)
    LogCleaner(lm, CleanerConfig(), clock=clock).run_once()
    lm.delete_expired_files(clock.now)
    records = [r for b in iter_batches(memoryview(piece.read_bytes())) for r in b]
    assert [r.value for r in records] == [b"v%d" % i for i in range(6)]


def test_the_throttle_sleeps_to_the_configured_rate():
    now = [0.0]
    slept = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds * 1000

    throttler = Throttler(1_000_000, clock=lambda: now[0], sleep=sleep, check_interval_ms=300)
    for _ in range(10):
        now[0] += 100
        throttler.maybe_throttle(500_000)  # 5 MB/s offered, 1 MB/s allowed
    assert slept and sum(slept) * 1000 + 1000 == pytest.approx(now[0] - 0, rel=0.35)
    assert Throttler(float("inf")).maybe_throttle(10**9) is None


def test_a_segment_deleted_by_retention_during_a_round_abandons_it_quietly(tmp_path, monkeypatch):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = _dirty(lm, "r")
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    real = cleaner.cleaners[0]._write_group

    def retention_meanwhile(log_arg, group, filt):
        for seg in group:
            seg.rename_to_deleted()  # what retention does to a segment's files
        return real(log_arg, group, filt)

    monkeypatch.setattr(cleaner.cleaners[0], "_write_group", retention_meanwhile)
    assert cleaner.run_once()
    assert not cleaner.manager.uncleanable and cleaner.manager.uncleanable_errors == 0


def test_broker_keys_reach_the_cleaner():
    from storage.config import ConfigModel

    model = ConfigModel.from_broker_props({
        "log.cleaner.enable": "false", "log.cleaner.threads": "3", "log.cleaner.backoff.ms": "250",
        "log.cleaner.dedupe.buffer.size": str(24 * 150_000), "log.cleaner.io.buffer.load.factor": "0.5",
        "log.cleaner.io.buffer.size": "1048576", "log.cleaner.io.max.bytes.per.second": "1000000"})  # fmt: skip
    config = CleanerConfig.from_props(model.other)
    assert config == CleanerConfig(enable=False, threads=3, backoff_ms=250, dedupe_buffer_size=3_600_000,
                                   io_buffer_size=1 << 20, io_buffer_load_factor=0.5,
                                   io_max_bytes_per_second=1e6)  # fmt: skip
    cleaner = LogCleaner(None, config, clock=Clock())
    assert len(cleaner.cleaners) == 3 and cleaner.throttler.rate == 1e6
    assert cleaner.cleaners[0].map.capacity == 25_000  # 3,600,000 / 3 threads / 24 bytes x 0.5


def test_a_log_being_moved_is_not_cleaned_and_a_round_under_way_is_given_up(tmp_path):
    """Kafka's abortAndPauseCleaning for a move to another log dir, resumed once the move ends."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = _dirty(lm, "moving")
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    move = lm.moves.start(log_, tmp_path)
    assert not cleaner.run_once() and len(read_records(log_)) == 6
    lm.moves.end(move)
    real = cleaner.cleaners[0]._write_group

    def move_meanwhile(log_arg, group, filt):
        moves.append(lm.moves.start(log_arg, tmp_path))  # the move starts while the round is under way
        return real(log_arg, group, filt)

    moves: list = []
    cleaner.cleaners[0]._write_group = move_meanwhile
    assert cleaner.run_once() and len(read_records(log_)) == 6 and not cleaner.manager.uncleanable
    assert not list(tmp_path.rglob("*.cleaned")) and not list(tmp_path.rglob("*.swap"))
    lm.moves.end(moves[0])
    cleaner.cleaners[0]._write_group = real
    assert cleaner.run_once() and len(read_records(log_)) == 1


def _recopy_percent(cleaner) -> float:
    return {name: vals for name, _d, _l, vals in cleaner_metrics.samples(cleaner)}[
        "kafka_log_logcleaner_cleaner_recopy_percent"][0][1]


def test_recopy_percent_divides_by_the_copy_pass_reads_only(tmp_path, caplog):
    """Kafka's cleaner-recopy-percent is bytesWritten / bytesRead of the copy pass; the map pass's
    reads are counted apart (mapBytesRead), and the stats log's start size is the copy pass's."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, min_cleanable_dirty_ratio=0.01)
    for i in range(20):
        Model().write(log_, [(b"k%d" % i, b"x" * 100, 0)])  # distinct keys: nothing to remove
    log_.roll()
    size = log_.size_in_bytes
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    with caplog.at_level("INFO", logger="minibroker.cleaner"):
        assert cleaner.run_once()
    stats = cleaner.last_stats[0]
    assert stats.bytes_read == stats.bytes_written == stats.map_bytes_read == size
    assert _recopy_percent(cleaner) == 100.0
    assert f"indexed {size} bytes; 20 of 20 records kept, {size} -> {size} bytes" in caplog.text
    for i in range(20):
        Model().write(log_, [(b"k%d" % i, b"y" * 100, 0)])  # every key updated: the old half goes
    log_.roll()
    assert cleaner.run_once()
    stats = cleaner.last_stats[0]
    # the map pass reads the dirty section only; the copy pass the clean prefix too
    assert (stats.map_bytes_read, stats.bytes_read, stats.bytes_written) == (size, 2 * size, size)
    assert _recopy_percent(cleaner) == 50.0
