"""KIP-354 under an injected clock: forced roll, must-clean selection and ordering, the delay gauges."""

from __future__ import annotations

from cleaner import CleanerConfig, LogCleaner, choose, log_to_clean
from cleaner import metrics as cleaner_metrics
from tests.cleaner.helpers import Model, compacted_log, open_manager, read_records
from tests.storage.lead_helpers import Clock

LAG = 10_000
BACKOFF = 3_000


def _gauges(cleaner) -> dict:
    out = {}
    for name, _doc, _labels, samples in cleaner_metrics.samples(cleaner):
        for values, number in samples:
            out[(name, tuple(values))] = number
    return out


def _history(tmp_path, **overrides):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, min_cleanable_dirty_ratio=0.99, **overrides)
    model = Model()
    for i in range(20):
        model.write(log_, [(b"user-%d" % (i % 4), b"pii-%d" % i, 0)])
    return clock, lm, log_, model


def test_old_values_are_gone_within_max_compaction_lag_plus_backoff(tmp_path):
    clock, lm, log_, model = _history(tmp_path, max_compaction_lag_ms=LAG)
    cleaner = LogCleaner(lm, CleanerConfig(backoff_ms=BACKOFF), clock=clock)
    start, delays, gone_at = clock.now, [], None
    while clock.now - start <= LAG + BACKOFF + 2000:
        clock.advance(500)
        lm.roll_idle_segments(clock.now)  # the broker's timer duty
        delays.append(_gauges(cleaner)[("kafka_log_logcleaner_max_compaction_delay_secs", ())])
        if (clock.now - start) % BACKOFF == 0:
            cleaner.run_once()
        if gone_at is None and len(read_records(log_)) == 4:
            gone_at = clock.now
    assert gone_at is not None and gone_at - start <= LAG + BACKOFF
    assert len(log_.segments) >= 2, "the active segment was rolled with no appends"
    assert max(delays) > 0 and delays[-1] == 0
    model.check(log_, cleaned_below=log_.log_end_offset)
    per_partition = _gauges(cleaner)[("kafka_log_logcleaner_compaction_delay_secs", ("t", "0"))]
    assert per_partition == 0


def test_without_max_compaction_lag_nothing_is_ever_cleaned(tmp_path):
    clock, lm, log_, _model = _history(tmp_path)
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    for _ in range(30):
        clock.advance(3_600_000)
        lm.roll_idle_segments(clock.now)
        cleaner.run_once()
    assert len(read_records(log_)) == 20


def test_the_gauge_is_the_seeds_formula_fresh_at_each_scrape(tmp_path):
    clock, lm, log_, _model = _history(tmp_path, max_compaction_lag_ms=LAG)
    first_ts = clock.now
    log_.roll()
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    clock.advance(LAG + 2500)
    assert _gauges(cleaner)[("kafka_log_logcleaner_max_compaction_delay_secs", ())] == 2  # 2.5 s: whole seconds
    assert _gauges(cleaner)[("kafka_log_logcleaner_compaction_delay_secs", ("t", "0"))] == 2
    clock.advance(1000)  # no selection ran, yet the value moved (Kafka's would be stale)
    assert _gauges(cleaner)[("kafka_log_logcleaner_max_compaction_delay_secs", ())] == 3
    clock.advance(40 * 86_400_000)  # past Int.MAX ms: Kafka's gauge stays at 2147483 s
    assert _gauges(cleaner)[("kafka_log_logcleaner_max_compaction_delay_secs", ())] == 2_147_483
    assert _gauges(cleaner)[("kafka_log_logcleaner_compaction_delay_secs", ("t", "0"))] == 40 * 86_400 + 3


def _two_logs(tmp_path):
    """"plain": all dirty (ratio 1.0), no max lag; "gdpr": half clean, its dirty part past max lag."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    plain = compacted_log(lm, "plain")
    gdpr = compacted_log(lm, "gdpr", max_compaction_lag_ms=LAG, min_cleanable_dirty_ratio=0.99)
    for log_ in (plain, gdpr):
        Model().write(log_, [(b"k%d" % i, b"v" * 100, 0) for i in range(10)])
        log_.roll()
    LogCleaner(lm, CleanerConfig(), clock=clock).manager.done_cleaning(gdpr, gdpr.log_end_offset)
    Model().write(gdpr, [(b"k%d" % i, b"w" * 100, 0) for i in range(3)])
    gdpr.roll()
    clock.advance(LAG + 1)
    return clock, lm, plain, gdpr


def test_must_clean_logs_are_chosen_before_dirtier_ones(tmp_path):
    clock, lm, plain, gdpr = _two_logs(tmp_path)
    offsets = lm.cleaner_offsets()
    todo = {l.topic: log_to_clean(l, offsets.get((l.topic, 0)), clock.now) for l in (plain, gdpr)}
    assert todo["plain"].dirty_ratio > todo["gdpr"].dirty_ratio
    assert todo["gdpr"].must_clean_ratio > 0 == todo["plain"].must_clean_ratio
    assert choose(todo.values()).log is gdpr
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    order = []
    while (picked := cleaner.manager.grab_filthiest(clock.now)) is not None:
        order.append(picked.log.topic)
        cleaner.manager.release(picked.log)
        cleaner.manager.done_cleaning(picked.log, picked.first_uncleanable_offset)
    assert order == ["gdpr", "plain"]


def test_a_log_below_its_dirty_ratio_is_not_cleaned_until_it_must_be(tmp_path):
    clock, lm, log_, _model = _history(tmp_path, max_compaction_lag_ms=LAG)
    log_.roll()
    cleaner = LogCleaner(lm, CleanerConfig(), clock=clock)
    cleaner.manager.done_cleaning(log_, 10)  # half of it clean: ratio ~0.5 < 0.99
    assert not cleaner.run_once()
    clock.advance(LAG + 1)
    assert cleaner.run_once()


def test_an_idle_compacted_log_rolls_in_time_across_a_restart(tmp_path):
    """The seed's rule, first record older than max.compaction.lag.ms, holds for a segment found at startup:
    the roll is not put off by another lag counted from the load."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, max_compaction_lag_ms=LAG)
    Model().write(log_, [(b"user-1", b"pii", 0)])
    first_ts = clock.now
    clock.advance(LAG - 1000)
    lm.close()
    lm = open_manager(tmp_path, clock)  # restarted 1 s before the lag is reached
    log_ = lm.get_log("t", 0)
    lm.roll_idle_segments(clock.now)
    assert len(log_.segments) == 1
    clock.advance(1001)
    assert clock.now - first_ts == LAG + 1
    lm.roll_idle_segments(clock.now)
    assert len(log_.segments) == 2 and log_.active.size == 0
