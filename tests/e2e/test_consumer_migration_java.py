"""KIP-848 with the Java client 4.3 (``tests/e2e/java/ConsumerMigrationCheck.java``), one broker per check.

* online migration, a rolling upgrade and rollback: two ``group.protocol=classic``
  consumers (CooperativeStickyAssignor; and RangeAssignor, eager) of a
  4-partition topic are replaced one at a time by ``group.protocol=consumer``
  ones, then back. After each step records are produced to every partition:
  each is read exactly once (``commitSync`` after every poll), no partition
  is owned by two consumers at once (``ConsumerRebalanceListener``
  callbacks, in the order they ran), and ``describeConsumerGroups`` shows
  the group type and each member's ``upgraded()``;
* static membership (``group.instance.id``) with the consumer protocol: a
  member closed and restarted within the session timeout gets its
  partitions back, the other member sees no rebalance and the group epoch
  does not move;
* ``subscribe(SubscriptionPattern)``: a matching topic created later is
  assigned and read;
* the admin API on a consumer group, non-empty (Kafka's errors) and then
  empty: ``listGroups``/``listConsumerGroups`` with type filters,
  ``describeConsumerGroups``, ``alterConsumerGroupOffsets``,
  ``deleteConsumerGroupOffsets``, ``deleteConsumerGroups``.

The program prints one ``check`` line per claim; each test asserts that
every one of its checks passed. Heartbeats are 500 ms (consumer protocol)
and 300 ms (classic) so that a rebalance takes about a second.
"""

from __future__ import annotations

import subprocess

import pytest

from .groups import create_topic
from ..java_jars import compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
FAST = {"group_consumer_min_heartbeat_interval_ms": "500", "group_consumer_heartbeat_interval_ms": "500",
        "group_consumer_min_session_timeout_ms": "6000", "group_consumer_session_timeout_ms": "15000"}  # fmt: skip


@pytest.fixture(scope="module")
def classpath() -> str:
    return compile_java("ConsumerMigrationCheck.java")


def _run(classpath: str, broker, *args: str) -> dict[str, tuple[str, str]]:
    """Runs the program; returns {check: (ok or FAIL, detail)}."""
    result = subprocess.run(["java", "-cp", classpath, "ConsumerMigrationCheck", args[0], broker.bootstrap, *args[1:]],
                            capture_output=True, text=True, timeout=80)  # fmt: skip
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert rows and rows[-1][0] == "done", result.stdout[-3000:]
    return {r[1]: (r[2], r[3]) for r in rows if r[0] == "check"}


def _all_ok(checks: dict[str, tuple[str, str]], expected: int) -> None:
    failed = {name: detail for name, (status, detail) in checks.items() if status != "ok"}
    assert not failed, failed
    assert len(checks) == expected, sorted(checks)


@pytest.mark.parametrize("assignor", ["cooperative", "range"])
def test_java_rolling_upgrade_and_rollback(broker_factory, classpath, assignor):
    broker = broker_factory(**FAST)
    create_topic(broker.bootstrap, "migrate-java", 4)
    checks = _run(classpath, broker, "upgrade", "migrate-java", f"migrate-java-{assignor}", assignor)
    _all_ok(checks, 5 * 4)


def test_java_static_member_restarts_without_a_rebalance(broker_factory, classpath):
    broker = broker_factory(**FAST)
    create_topic(broker.bootstrap, "static-java", 4)
    _all_ok(_run(classpath, broker, "static", "static-java", "static-java-group"), 2 * 3 + 3)


def test_java_regex_subscription_picks_up_a_new_topic(broker_factory, classpath):
    broker = broker_factory(**FAST)
    _all_ok(_run(classpath, broker, "regex", "rx", "rx-group"), 3)


def test_java_admin_on_a_consumer_group(broker_factory, classpath):
    broker = broker_factory(**FAST)
    _all_ok(_run(classpath, broker, "admin", "adm-java", "adm-java-group"), 3 + 13)
