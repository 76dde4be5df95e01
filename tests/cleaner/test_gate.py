"""RequestGate: cleaners pause while the broker's loop is busy, never for ever, and steps stay small."""

from __future__ import annotations

import threading
import time

import pytest

from cleaner import Cleaner, OffsetMap, RequestGate, log_to_clean
from protocol.records.skim import SLICE
from tests.cleaner.helpers import compacted_log, open_manager, read_records, write
from tests.storage.lead_helpers import Clock

pytestmark = pytest.mark.timeout(30)


def _pause_in_thread(gate: RequestGate) -> threading.Thread:
    thread = threading.Thread(target=gate.pause, daemon=True)
    thread.start()
    return thread


def test_pause_returns_at_once_while_the_broker_is_idle():
    gate = RequestGate(max_wait_s=5)
    gate.mark_busy()
    gate.mark_idle()
    started = time.monotonic()
    gate.pause()
    assert time.monotonic() - started < 0.5 and gate.paused_s == 0


def test_pause_blocks_while_busy_and_ends_when_the_loop_goes_idle():
    gate = RequestGate(max_wait_s=5)
    gate.mark_busy()
    thread = _pause_in_thread(gate)
    thread.join(0.2)
    assert thread.is_alive()  # still waiting: the broker is busy
    gate.mark_idle()
    thread.join(2)
    assert not thread.is_alive()
    assert 0.2 <= gate.paused_s < 2.5


def test_no_wake_up_is_lost_when_idle_races_the_pause():
    """With a 5 s max wait, a lost wake-up would leave the thread waiting past the 2 s join."""
    gate = RequestGate(max_wait_s=5)
    for _ in range(200):
        gate.mark_busy()
        thread = _pause_in_thread(gate)
        gate.mark_idle()
        thread.join(2)
        assert not thread.is_alive()


def test_a_broker_that_stays_busy_gets_max_wait_then_the_cleaner_runs_a_quantum():
    now = [100.0]
    gate = RequestGate(max_wait_s=0.05, quantum_s=1.0, clock=lambda: now[0])
    gate.mark_busy()
    started = time.monotonic()
    gate.pause()  # times out: the loop never went idle
    assert time.monotonic() - started >= 0.05
    now[0] += 0.5
    started = time.monotonic()
    gate.pause()  # inside the quantum: no wait at all
    assert time.monotonic() - started < 0.04
    now[0] += 0.6  # the quantum is over: the next pause waits again
    started = time.monotonic()
    gate.pause()
    assert time.monotonic() - started >= 0.05


class _CountingGate(RequestGate):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def pause(self) -> None:
        self.calls += 1
        super().pause()


def test_a_round_pauses_within_big_batches_not_only_between_them(tmp_path):
    """One batch of 3,000 records and one of 3,000 updates: pass 1 alone pauses after every slice."""
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, "big")
    for value in (b"a", b"b"):
        records = [(b"key-%05d" % i, value, 0) for i in range(3000)]
        write(log_, records)
    log_.roll()
    gate = _CountingGate()
    Cleaner(OffsetMap(1 << 20), clock=clock, gate=gate).clean(log_to_clean(log_, None, clock()), lambda _end: None)
    assert gate.calls >= 2 * (3000 // SLICE)
    assert {r.value for r in read_records(log_)} == {b"b"} and len(read_records(log_)) == 3000


def test_a_cleaner_facing_a_busy_broker_still_finishes_its_round(tmp_path):
    clock = Clock()
    lm = open_manager(tmp_path, clock)
    log_ = compacted_log(lm, "busy")
    for value in (b"a", b"b"):
        write(log_, [(b"k%d" % i, value, 0) for i in range(600)])
    log_.roll()
    gate = RequestGate(max_wait_s=0.02, quantum_s=0.0)
    gate.mark_busy()  # and never idle
    Cleaner(OffsetMap(1 << 20), clock=clock, gate=gate).clean(log_to_clean(log_, None, clock()), lambda _end: None)
    assert len(read_records(log_)) == 600 and gate.paused_s >= 0.02

