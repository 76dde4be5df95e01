"""Series a one-node broker exports at a value that cannot move, so dashboards find them.

Kafka registers these whatever the cluster does; on a single combined
(broker,controller) node with no queues their true value is fixed, and a
dashboard that queries them (Strimzi's ``strimzi-kafka.json`` and
``strimzi-kraft.json``, its alert rules) should read that value, not "no data".
Names as the JMX exporter's Strimzi rules give them:

* ``kafka.server:type=ReplicaManager`` meters ``IsrExpandsPerSec``,
  ``IsrShrinksPerSec``, ``FailedIsrUpdatesPerSec`` (rule ``(.+)PerSec\\w*><>Count``
  -> ``kafka_server_replicamanager_isrexpands_total``...): 0, the ISR of a
  partition whose only replica is its leader never changes.
* ``kafka.controller:type=ControllerStats,name=UncleanLeaderElectionsPerSec``
  (the KRaft controller's ``ControllerMetadataMetrics``): 0, a partition here
  never needs a new leader.
* ``kafka.network:type=RequestChannel`` gauges ``RequestQueueSize`` and
  ``ResponseQueueSize``: 0, as no request or response waits in a queue here
  (each connection's task handles its request and writes the answer itself;
  ``RequestQueueTimeMs`` and ``ResponseQueueTimeMs`` are 0 for that reason).
* ``kafka.server:type=raft-channel-metrics`` (the network client the KRaft
  client talks to other voters with), the four totals Strimzi's rule keeps:
  ``incoming_byte_total``, ``outgoing_byte_total``, ``request_total``,
  ``response_total``: 0, the only voter has no one to send to.
"""

from __future__ import annotations

from typing import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

_COUNTERS = (
    ("kafka_server_replicamanager_isrexpands", "ISR expansions"),
    ("kafka_server_replicamanager_isrshrinks", "ISR shrinks"),
    ("kafka_server_replicamanager_failedisrupdates", "ISR updates the controller refused"),
    ("kafka_controller_controllerstats_uncleanleaderelections", "Unclean leader elections"),
    ("kafka_server_raftchannelmetrics_incoming_byte", "Bytes received from other voters"),
    ("kafka_server_raftchannelmetrics_outgoing_byte", "Bytes sent to other voters"),
    ("kafka_server_raftchannelmetrics_request", "Requests sent to other voters"),
    ("kafka_server_raftchannelmetrics_response", "Responses received from other voters"),
)
_GAUGES = (
    ("kafka_network_requestchannel_requestqueuesize", "Requests waiting for a handler (no queue here)"),
    ("kafka_network_requestchannel_responsequeuesize", "Responses waiting to be sent (no queue here)"),
)


class FixedSeries(Collector):
    """The counters and gauges of the module docstring, each at 0."""

    def collect(self) -> Iterable[Metric]:
        for name, doc in _COUNTERS:
            counter = CounterMetricFamily(name, doc)
            counter.add_metric([], 0.0)
            yield counter
        for name, doc in _GAUGES:
            yield GaugeMetricFamily(name, doc, value=0.0)
