"""The authorizer's metrics, as Kafka's StandardAuthorizer registers them (Kafka 4.1+, KAFKA-18888).

StandardAuthorizer is a KIP-877 ``Monitorable`` plugin: its metrics are in
the group ``plugins`` with the tags ``config=authorizer.class.name``,
``class=StandardAuthorizer`` and ``role=broker``, so the MBean is
``kafka.server:type=plugins,config=authorizer.class.name,class=StandardAuthorizer,role=broker``
(KIP-877 renamed KIP-608's never-built ``kafka.security.authorizer.metrics``
to this). Its attributes:

* ``authorization-request-rate-per-minute``, ``authorization-allowed-rate-per-minute``
  and ``authorization-denied-rate-per-minute``: Kafka's
  ``Rate(TimeUnit.MINUTES, WindowedCount)`` of the decisions made, every
  action ``authorize`` decides counting once (cached decisions too; the ones
  behind ``authorized_operations`` and ``authorize_by_type`` as well, since
  Kafka makes those through ``authorize``). They use the broker's metric
  config, ``metrics.num.samples`` windows of ``metrics.sample.window.ms``
  (by default 2 of 30 s), and the rate is the count of the live windows over
  the time they span, at least all windows but one (``sampled_stat.Samples``):
  by default N decisions just made read 2N per minute;
* ``acls-total-count``: the ACL bindings the authorizer holds.

Exported (``metric_samples``, at scrape time) under this project's rule for
Kafka-metrics MBeans (the JMX exporter's ``kafka_server_<type>_<attribute>``,
the type's hyphens dropped, the attribute's made underscores, the tags as
labels): ``kafka_server_plugins_authorization_request_rate_per_minute{config,
class,role}`` and so on, all gauges. Registered only when an authorizer is
configured, as in Kafka.
"""

from __future__ import annotations

from typing import Callable, Iterator

from .sampled_stat import KAFKA_METRIC_WINDOWS, Samples

PER_MINUTE_MS = 60_000
PREFIX = "kafka_server_plugins_"
LABELS = ["config", "class", "role"]
TAGS = ["authorizer.class.name", "StandardAuthorizer", "broker"]
_RATES = (
    ("request", "Authorization decisions asked for, per minute"),
    ("allowed", "Authorization decisions that allowed, per minute"),
    ("denied", "Authorization decisions that denied, per minute"),
)


class AuthorizerMetrics:
    """The three sensors of decisions, on ``clock`` (milliseconds), over ``windows`` (``metric_windows``)."""

    def __init__(self, clock: Callable[[], float], windows: tuple[int, int] = KAFKA_METRIC_WINDOWS) -> None:
        self.clock = clock
        self.sensors = {outcome: Samples(*windows) for outcome, _doc in _RATES}

    def record(self, allowed: bool) -> None:
        now = self.clock()
        self.sensors["allowed" if allowed else "denied"].record(1.0, now)
        self.sensors["request"].record(1.0, now)

    def metric_samples(self, acl_count: int) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
        now = self.clock()
        for outcome, doc in _RATES:
            yield (f"{PREFIX}authorization_{outcome}_rate_per_minute", doc, LABELS,
                   [(TAGS, self.sensors[outcome].rate(now, PER_MINUTE_MS))])  # fmt: skip
        yield f"{PREFIX}acls_total_count", "ACL bindings kept by the authorizer", LABELS, [(TAGS, float(acl_count))]
