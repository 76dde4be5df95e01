"""Scrape-time gauges of the cleaner, named as the Prometheus JMX exporter names Kafka's MBeans.

``kafka.log:type=LogCleaner,name=max-compaction-delay-secs`` becomes
``kafka_log_logcleaner_max_compaction_delay_secs`` and so on. Every figure is
computed when Prometheus scrapes:

* ``max_compaction_delay_secs``: as the KIP-354 seed defines it, the maximum
  over compacted partitions of ``max(now - earliest dirty first-batch
  timestamp - max.compaction.lag.ms, 0) / 1000`` in whole seconds (Java's
  long division, as the seed's formula and Kafka's gauge, whose milliseconds
  are first made an int, so it reads 2147483 past about 24.8 days), recomputed at each
  scrape (Kafka's keeps the value of its last successful selection); plus,
  beyond Kafka, ``kafka_log_logcleaner_compaction_delay_secs{topic,partition}``
  in the same whole seconds;
* ``max_buffer_utilization_percent`` (a real percentage, as after
  KAFKA-18597), ``cleaner_recopy_percent`` (bytes written over the bytes the
  copy pass read, map-pass reads not counted, as Kafka's),
  ``max_clean_time_secs`` from each thread's last round; ``deadthreadcount``
  (the MBean is ``name=DeadThreadCount``: camel case, so no underscores);
* the manager's ``max_dirty_percent``, ``time_since_last_run_ms``,
  ``uncleanable_partitions_count`` and ``uncleanable_bytes`` per
  ``logDirectory``, and a count of rounds that failed.

``samples(cleaner)`` yields ``(name, doc, label names, [(label values,
value)])`` tuples for ``broker.metrics.StateCollector``.
"""

from __future__ import annotations

from typing import Any, Iterator

LC = "kafka_log_logcleaner_"
LCM = "kafka_log_logcleanermanager_"
_INT_MAX = (1 << 31) - 1  # Kafka's gauge takes the delay in ms as a Java int first: past ~24.8 days it stays there


def samples(cleaner: Any) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
    now = cleaner.clock()
    delays = [(l.topic, l.partition, d) for l, d in cleaner.manager.compaction_delays(now)]
    yield (LC + "max_compaction_delay_secs", "Largest KIP-354 compaction delay over compacted partitions",
           [], [([], min(max((d for _t, _p, d in delays), default=0), _INT_MAX) // 1000)])  # fmt: skip
    yield (LC + "compaction_delay_secs", "KIP-354 compaction delay of each compacted partition",
           ["topic", "partition"], [([t, str(p)], d // 1000) for t, p, d in delays])  # fmt: skip
    yield from _thread_gauges(cleaner)
    yield from _manager_gauges(cleaner, now)


def _thread_gauges(cleaner: Any) -> Iterator[tuple]:
    stats = [s for s in cleaner.last_stats if s is not None]
    read = sum(s.bytes_read for s in stats)
    written = sum(s.bytes_written for s in stats)
    utilization = max((s.map_utilization for s in stats), default=0.0) * 100
    yield (LC + "max_buffer_utilization_percent", "Offset map use in the last round, percent", [],
           [([], utilization)])  # fmt: skip
    yield (LC + "cleaner_recopy_percent", "Copy-pass bytes written over read in the last rounds, percent", [],
           [([], float(int(100 * written / read)) if read else 0.0)])  # fmt: skip
    yield (LC + "max_clean_time_secs", "Longest last round over cleaner threads", [],
           [([], max((s.elapsed_s for s in stats), default=0.0))])  # fmt: skip
    yield LC + "deadthreadcount", "Cleaner threads that died", [], [([], float(cleaner.dead_threads))]


def _manager_gauges(cleaner: Any, now: int) -> Iterator[tuple]:
    manager = cleaner.manager
    yield (LCM + "max_dirty_percent", "Highest dirty ratio at the last selection, percent", [],
           [([], float(manager.max_dirty_percent))])  # fmt: skip
    yield (LCM + "time_since_last_run_ms", "Time since the last selection attempt", [],
           [([], float(max(0, now - manager.last_run_ms)))])  # fmt: skip
    by_dir = manager.uncleanable_by_dir()
    yield (LCM + "uncleanable_partitions_count", "Partitions set aside after a cleaning error", ["logDirectory"],
           [([d], float(c)) for d, (c, _b) in by_dir.items()])  # fmt: skip
    yield (LCM + "uncleanable_bytes", "Cleanable bytes of the uncleanable partitions", ["logDirectory"],
           [([d], float(b)) for d, (_c, b) in by_dir.items()])  # fmt: skip
    yield (LCM + "cleaning_failures", "Cleaning rounds that failed with an unexpected error", [],
           [([], float(manager.uncleanable_errors))])  # fmt: skip
