"""``log.initial.task.delay.ms``: Kafka's LogManager runs its first retention check and checkpoint write that
long after startup (30 s), then every ``log.retention.check.interval.ms`` /
``log.flush.offset.checkpoint.interval.ms``. Before, the key was one with no effect and the first check came
a whole interval (5 min) after startup: data past its retention stayed readable that long after a restart.
A delay longer than the interval waits only the interval here (never later than Kafka)."""

from __future__ import annotations

import pytest

from ._group_client import clock, groups_broker  # noqa: F401  (fixtures)

NOW = 1_700_000_000_000


def runs(broker, times: list[int]) -> list[tuple[str, int]]:
    """Tick at each of ``times`` (ms after the first tick); which duties ran when."""
    ran: list[tuple[str, int]] = []
    broker.topics.run_retention = lambda now: ran.append(("retention", now - NOW))
    for t in times:
        broker.clock.now = NOW + t
        if broker.tick():
            ran.append(("checkpoint", t))
    return ran


@pytest.mark.parametrize("group_props", [{}])
def test_the_first_retention_check_and_checkpoint_come_30_s_after_the_start(groups_broker):
    got = runs(groups_broker, [0, 29_999, 30_000, 60_000, 90_000, 329_999, 330_000])
    assert got == [("retention", 30_000), ("checkpoint", 30_000), ("checkpoint", 90_000), ("checkpoint", 329_999),
                   ("retention", 330_000)]  # then every interval: 60 s and 300 s


@pytest.mark.parametrize("group_props", [{"log.initial.task.delay.ms": "0"}])
def test_no_initial_delay_runs_them_at_the_first_tick(groups_broker):
    assert runs(groups_broker, [0, 1]) == [("retention", 0), ("checkpoint", 0)]


@pytest.mark.parametrize("group_props", [{"log.retention.check.interval.ms": "1000"}])
def test_an_interval_shorter_than_the_delay_is_not_held_back(groups_broker):
    assert [r for r in runs(groups_broker, [0, 999, 1000, 2000]) if r[0] == "retention"] == [
        ("retention", 1000), ("retention", 2000)]
