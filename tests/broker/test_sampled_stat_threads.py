"""Sampled stats recorded from worker threads and read by the metrics endpoint's threads (``sampled_stat.py``).

The metadata log's records-appended rate is recorded by the worker thread
that saved each change and read by each scrape on a thread of its own; a
``Samples`` records and measures under one lock, as Kafka's sensor lock
guards ``Sensor.record`` and ``KafkaMetric.metricValue``. Before, a scrape
that came while a record was starting the ring's next sample read that sample
before it was there (IndexError: the scrape failed).

The first test holds a record half way through starting a sample (the ring's
append waits) and reads meanwhile: deterministic, it fails on the old code. The
stress test (threads appending to the quorum while others scrape its gauges)
checks the invariants under real interleavings; it need not fail on the old
code every run.
"""

from __future__ import annotations

import threading

from broker.metadata_quorum import MetadataQuorum
from broker.quorum_metrics import quorum_samples
from broker.sampled_stat import Samples

WAIT_S = 5.0


class HeldAppend(list):
    """The ring of a ``Samples``, whose next ``append`` (a new sample started) waits until ``release``."""

    def __init__(self, items) -> None:
        super().__init__(items)
        self.entered, self._go = threading.Event(), threading.Event()

    def append(self, item) -> None:
        self.entered.set()
        self._go.wait(WAIT_S)
        super().append(item)

    def release(self) -> None:
        self._go.set()


def test_a_read_waits_for_a_record_that_is_starting_a_sample():
    samples = Samples(2, 1000)
    samples.record(1.0, 0)
    samples.samples = ring = HeldAppend(samples.samples)
    recorder = threading.Thread(target=samples.record, args=(1.0, 1000))  # a window later: the next sample
    read: dict = {}

    def reader() -> None:
        try:
            read["rate"] = samples.rate(1000)
        except Exception as exc:  # the old code: the ring's index is past its end
            read["error"] = exc
        read["after the record"] = ring._go.is_set()

    recorder.start()
    assert ring.entered.wait(WAIT_S)
    scrape = threading.Thread(target=reader)
    scrape.start()
    scrape.join(0.5)  # held by the record's lock: not done yet
    ring.release()
    recorder.join(WAIT_S)
    scrape.join(WAIT_S)
    assert read == {"rate": 2.0, "after the record": True}  # both records, over one whole window (1 s)


def test_appends_from_threads_and_scrapes_from_threads_keep_the_invariants(tmp_path, monkeypatch):
    """Appends roll the samples every millisecond (a 1 ms window) while scrapes read them; no scrape fails,
    and no record is lost: the end offset counts every append, and with a window longer than the test every
    append is in the rate."""
    for windows, check_rate in (((2, 1), False), ((2, 600_000), True)):
        quorum = MetadataQuorum(tmp_path / "q.json", 1, 0, metric_windows=windows)
        monkeypatch.setattr(quorum, "_save", lambda: None)  # no fsync: as many interleavings as can be
        writers, each, errors, done = 4, 3000, [], threading.Event()

        def append() -> None:
            for _ in range(each):
                quorum.append()

        def scrape() -> None:
            while not done.is_set():
                try:
                    list(quorum_samples(quorum, 1))  # every gauge read, the rate too
                except Exception as exc:
                    errors.append(exc)
                    return

        threads = [threading.Thread(target=append) for _ in range(writers)]
        scrapers = [threading.Thread(target=scrape) for _ in range(2)]
        for thread in scrapers + threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        done.set()
        for thread in scrapers:
            thread.join(60)
        assert errors == [] and quorum.end_offset == writers * each
        if check_rate:  # every append in the samples: the rate over the window counts them all
            now = quorum.clock()
            records = quorum.append_records
            assert round(records.rate(now) * records.window_ms(now) / 1000) == writers * each
