"""The group coordinator's gauges: Kafka's ``GroupMetadataManager`` MBeans (groups, offsets, classic groups
by state) and its ``group-coordinator-metrics`` counts (groups by rebalance protocol, consumer groups by
state), computed from the groups held at each scrape."""

from __future__ import annotations

from typing import Any, Iterator

from .consumer_group import ASSIGNING, CONSUMER, CONSUMER_STABLE, RECONCILING, ConsumerGroup
from .group import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, Group

CLASSIC = "classic"
_STATES = (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)
_CONSUMER_STATES = (EMPTY, ASSIGNING, RECONCILING, CONSUMER_STABLE, DEAD)


def state_metrics(groups: list[Any]) -> Iterator[tuple]:
    """(name, help, label names, samples) per gauge, for ``groups`` (classic and consumer)."""
    classic = [g for g in groups if isinstance(g, Group)]
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    yield prefix + "numgroups", "Groups this coordinator holds", [], [([], float(len(groups)))]
    yield prefix + "numoffsets", "Committed offsets held", [], [([], float(sum(len(g.offsets) for g in groups)))]
    for state in _STATES:
        count = float(sum(1 for g in classic if g.state == state))
        yield prefix + "numgroups" + state.lower(), f"Classic groups in state {state}", [], [([], count)]
    prefix = "kafka_server_group_coordinator_metrics_"
    by_protocol = [([CLASSIC], float(len(classic))), ([CONSUMER], float(len(groups) - len(classic)))]
    yield prefix + "group_count", "Groups by rebalance protocol", ["protocol"], by_protocol
    consumer = [g for g in groups if isinstance(g, ConsumerGroup)]
    by_state = [([s.lower()], float(sum(1 for g in consumer if g.state == s))) for s in _CONSUMER_STATES]
    yield prefix + "consumer_group_count", "Consumer groups (KIP-848) by state", ["state"], by_state
