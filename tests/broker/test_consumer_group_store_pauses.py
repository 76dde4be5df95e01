"""A consumer group whose ``__consumer_offsets`` writes keep failing costs little: few retries, few log lines.

``ConsumerStore`` tries a failing group again after a pause that doubles from ``ROUND_S`` up to
``MAX_SLEEP_S`` (reset by a success), in the timer task's rounds and other groups' calls alike (its own
requests still try), and logs its failures once per ``LOG_EVERY_S`` with the count not logged. An append to
an offline log logs nothing of its own: the log dir's failure was logged once (``LogDirFailures``), as
Kafka's ``ReplicaManager`` returns a KafkaStorageException without a line. The old code retried every 50 ms
(and at every heartbeat of any group) and logged each try twice: about 400 lines in 10 s for one group.
A failed write undoes its change (``consumer_rollback``), so what keeps failing here is the timer task's fencing
of a member whose session ran out: undone, due again, tried again after the group's pause. A real broker
(``groups_broker``) with trio's mock clock; the timer task runs for the flood tests.
"""

from __future__ import annotations

import logging

import pytest
import trio

from broker.groups.timers import MAX_SLEEP_S, ROUND_S
from protocol import ErrorCode

from ._consumer_group_client import heartbeat, make_topic, ready
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)

pytestmark = pytest.mark.timeout(60)


def failing_appends(broker, group: str, times: int = 10**9) -> list[float]:
    """``append_rows`` of ``group`` answers NOT_COORDINATOR ``times`` times; when each try was made."""
    real, tries = broker.groups.store.append_rows, []

    async def append_rows(group_id, rows, *args, **kwargs):
        if group_id == group and rows:
            tries.append(trio.current_time())
            if len(tries) <= times:
                return ErrorCode.NOT_COORDINATOR
        return await real(group_id, rows, *args, **kwargs)

    broker.groups.store.append_rows = append_rows
    return tries


def error_lines(caplog) -> list[str]:
    return [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.ERROR]


def session_over(b) -> None:
    """The session (45 s) of the members that joined is over: the timer task's next tick fences them."""
    b.clock.now += 50_000
    b.groups.timers_moved()


async def test_a_lasting_failure_is_retried_with_growing_pauses_and_logged_once(groups_broker, autojump_clock,
                                                                                caplog):  # fmt: skip
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    with caplog.at_level(logging.ERROR, logger="minibroker"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(b.groups.run)
            assert (await heartbeat(b, "m-1")).error_code == 0
            tries = failing_appends(b, "cg")
            session_over(b)
            await trio.sleep(20)
            nursery.cancel_scope.cancel()
    gaps = [round(y - x, 2) for x, y in zip(tries, tries[1:])]
    assert gaps[:6] == [ROUND_S, 2 * ROUND_S, 4 * ROUND_S, 8 * ROUND_S, 16 * ROUND_S, 32 * ROUND_S], gaps
    assert max(gaps) == MAX_SLEEP_S and len(tries) < 15  # the old code: every 50 ms, 400 tries
    assert len(error_lines(caplog)) == 1, error_lines(caplog)  # the old code: one per try


async def test_a_success_ends_the_pause_and_the_count(groups_broker, autojump_clock):
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(b.groups.run)
        assert (await heartbeat(b, "m-1")).error_code == 0
        tries = failing_appends(b, "cg", times=3)
        session_over(b)
        await trio.sleep(1)
        assert len(tries) == 4  # three failures (pauses of 50, 100 ms), then the write
        assert b.groups.consumer.dirty == set() and b.groups.consumer_store.retry_in() is None
        assert "m-1" not in b.groups.groups["cg"].members
        nursery.cancel_scope.cancel()
    assert b.groups.consumer_store._failing == {}


async def test_other_groups_heartbeats_do_not_retry_a_paused_group(groups_broker, autojump_clock):
    """Group og's member heartbeats every 10 ms while cg's write (the fencing of m-1, its session over, done again
    by each tick) fails: cg is tried once per pause, not at each of og's heartbeats; cg's own heartbeat still
    tries."""
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    assert (await heartbeat(b, "m-1")).error_code == 0
    b.clock.now += 30_000
    first = await heartbeat(b, "o-1", group="og")
    b.clock.now += 20_000  # m-1's session is over, not o-1's
    tries = failing_appends(b, "cg")
    for _ in range(20):  # 200 ms: cg's pauses 50 and 100 ms
        b.groups.consumer.tick()  # as the timer task's rounds: m-1 fenced again once its fencing was undone
        await trio.sleep(0.01)
        again = await heartbeat(b, "o-1", first.member_epoch, group="og", topics=None, owned_partitions=None)
        assert again.error_code == 0
    assert len(tries) == 3  # the old code: 21
    assert (await heartbeat(b, "m-2")).error_code == ErrorCode.NOT_COORDINATOR
    assert len(tries) == 4


async def test_an_offline_log_does_not_log_each_refused_append(groups_broker, autojump_clock, caplog):
    b = groups_broker
    await ready(b)
    await make_topic(b, "t", 1)
    assert (await heartbeat(b, "m-1")).error_code == 0
    b.topics.partition("__consumer_offsets", b.groups.store.partition_of("cg")).log.offline = True
    with caplog.at_level(logging.ERROR, logger="minibroker"):
        for member in ("m-2", "m-3", "m-4"):
            assert (await heartbeat(b, member)).error_code == ErrorCode.NOT_COORDINATOR
            await trio.sleep(MAX_SLEEP_S)
    lines = error_lines(caplog)
    assert not [line for line in lines if line.startswith("append to")], lines  # the old code: one per append
    assert len(lines) == 1 and "could not store consumer group cg" in lines[0], lines
