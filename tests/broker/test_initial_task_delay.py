"""``log.initial.task.delay.ms``: Kafka's LogManager runs its first retention check and checkpoint write that
long after startup (30 s), then every ``log.retention.check.interval.ms`` /
``log.flush.offset.checkpoint.interval.ms``. Before, the key was one with no effect and the first check came
a whole interval (5 min) after startup: data past its retention stayed readable that long after a restart.
A delay longer than the interval holds the first run back that long too, as Kafka's scheduler does
(``LogManager.startupWithConfigOverrides``: initial delay, then the period)."""

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
def test_an_interval_shorter_than_the_delay_waits_for_the_delay(groups_broker):
    got = runs(groups_broker, [0, 1000, 2000, 29_999, 30_000, 30_999, 31_000, 32_000])
    assert [r for r in got if r[0] == "retention"] == [("retention", 30_000), ("retention", 31_000),
                                                       ("retention", 32_000)]  # fmt: skip


@pytest.mark.parametrize("group_props", [{"log.initial.task.delay.ms": "400000", "log.retention.check.interval.ms":
                                          "300000", "log.flush.offset.checkpoint.interval.ms": "60000"}])
def test_a_delay_beyond_both_intervals_holds_both_duties_back(groups_broker):
    got = runs(groups_broker, [0, 300_000, 399_999, 400_000, 460_000, 700_000])
    assert got == [("retention", 400_000), ("checkpoint", 400_000), ("checkpoint", 460_000),
                   ("retention", 700_000), ("checkpoint", 700_000)]  # fmt: skip
