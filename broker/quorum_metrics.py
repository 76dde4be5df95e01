"""The KRaft metrics of a one-node combined (broker,controller) Kafka 4, from ``broker.quorum``.

Computed at scrape time from the same ``MetadataQuorum`` DescribeQuorum
answers from (``metadata_quorum.py``), so the leader, epoch and offsets agree
with it at every moment. The node leads a quorum of itself: it is the leader
and its own vote, the only voter (no unknown voter connections), and a record
is committed as soon as it is written (high watermark = log end offset). The
last record is at ``end offset - 1``; its time is the wall time (the broker's
clock) of the last metadata change, or of this start's leader-change record.
The lags are ``now - that time``, computed at each scrape as Kafka's gauges
compute them.

Names, by the rule of Strimzi's JMX exporter config that gives them (the
exporter lower-cases the name and makes ``-`` an ``_``):

* ``kafka.server:type=raft-metrics`` (``KafkaRaftMetrics``, a Kafka-metrics
  group): the rule ``kafka.server<type=raft-metrics><>(.+):`` ->
  ``kafka_server_raftmetrics_$1`` (GAUGE) gives ``current_leader``,
  ``current_epoch``, ``current_vote``, ``high_watermark``,
  ``log_end_offset``, ``log_end_epoch`` (the leader's epoch: the last record
  was written in it), ``number_unknown_voter_connections`` (0),
  ``append_records_rate`` (records appended per second: Kafka's
  ``Rate(SECONDS)`` over the broker's metric windows, ``sampled_stat.Samples``; the start's
  leader-change record counts one, each metadata change its records) and
  ``fetch_records_rate`` (0: a leader with no follower fetches nothing). The
  string gauge ``current-state`` goes through the rule
  ``<>(current-state): (.+)`` -> ``kafka_server_raftmetrics_$1`` with label
  ``$1: "$2"`` and value 1, UNTYPED: ``kafka_server_raftmetrics_current_state
  {current_state="leader"} 1``. Not exported: ``current-vote-directory-id``
  (a string no rule turns into a number: the exporter drops it),
  ``election-latency-avg/max``, ``commit-latency-avg/max`` and
  ``poll-idle-ratio-avg`` (this broker has no election, no raft commit and no
  raft IO thread to time: no true value to give).
* ``kafka.controller:type=KafkaController,name=X`` (Yammer gauges of
  ``ControllerMetadataMetrics`` and ``QuorumControllerMetrics``): the rule
  ``kafka.(\\w+)<type=(.+), name=(.+)><>Value`` -> ``kafka_$1_$2_$3`` gives
  ``kafka_controller_kafkacontroller_activebrokercount`` (1),
  ``..._fencedbrokercount`` (0), ``..._migratingzkbrokercount`` (0),
  ``..._preferredreplicaimbalancecount`` (0: one replica, always the
  preferred leader), ``..._metadataerrorcount`` (0),
  ``..._timedoutbrokerheartbeatcount`` (0), ``..._lastappliedrecordoffset``,
  ``..._lastcommittedrecordoffset``, ``..._lastappliedrecordtimestamp`` and
  ``..._lastappliedrecordlagms``. ActiveControllerCount, GlobalTopicCount,
  GlobalPartitionCount and OfflinePartitionsCount are in ``core.py``.
* ``kafka.server:type=broker-metadata-metrics`` (``BrokerServerMetrics``):
  the rule ``kafka.server<type=broker-metadata-metrics><>(.+):`` ->
  ``kafka_server_brokermetadatametrics_$1`` gives
  ``last_applied_record_offset``, ``last_applied_record_timestamp``,
  ``last_applied_record_lag_ms``, ``metadata_load_error_count`` (0) and
  ``metadata_apply_error_count`` (0).
"""

from __future__ import annotations

from typing import Iterator

from prometheus_client.core import Metric, UnknownMetricFamily
from prometheus_client.registry import Collector

from .metadata_quorum import MetadataQuorum

RAFT, CONTROLLER, BROKER_METADATA = (
    "kafka_server_raftmetrics_", "kafka_controller_kafkacontroller_", "kafka_server_brokermetadatametrics_")
Sample = tuple[str, str, list[str], list[tuple[list[str], float]]]


class CurrentState(Collector):
    """raft-metrics' string gauge ``current-state``, as Strimzi's rule gives it: an untyped 1 labelled with the
    state (the only family here that is not a gauge, so not a ``metrics.StateCollector`` one)."""

    def collect(self) -> Iterator[Metric]:
        state = UnknownMetricFamily(RAFT + "current_state", "This node's role in the quorum (always leader)",
                                    labels=["current_state"])  # fmt: skip
        state.add_metric(["leader"], 1.0)
        yield state


def quorum_samples(quorum: MetadataQuorum, node_id: int) -> Iterator[Sample]:
    """The raft, controller and broker-metadata gauges of ``node_id`` leading ``quorum``, for
    ``BrokerMetrics.add_state_collector``."""
    q, now = quorum, quorum.clock()
    last_offset, last_ms = q.last_offset, q.last_append_ms
    families = ((RAFT, (
        ("current_leader", "Node id of the quorum's leader (-1: none known)", node_id),
        ("current_vote", "Node id this node voted for in this epoch (-1: no vote)", node_id),
        ("current_epoch", "Leader epoch of the quorum", q.leader_epoch),
        ("high_watermark", "Committed end of the metadata log (-1: unknown)", q.high_watermark),
        ("log_end_offset", "End offset of the metadata log", q.end_offset),
        ("log_end_epoch", "Epoch of the last record of the metadata log", q.leader_epoch),
        ("number_unknown_voter_connections", "Voters with no known address (none: one voter)", 0),
        ("append_records_rate", "Metadata records appended per second as leader",
         q.append_records.rate(now)),
        ("fetch_records_rate", "Metadata records fetched from the leader per second (none: no follower)", 0.0),
    )), (CONTROLLER, (
        ("activebrokercount", "Unfenced brokers", 1), ("fencedbrokercount", "Fenced brokers", 0),
        ("migratingzkbrokercount", "ZooKeeper brokers migrating", 0),
        ("preferredreplicaimbalancecount", "Partitions not led by their preferred replica", 0),
        ("metadataerrorcount", "Errors applying metadata records", 0),
        ("timedoutbrokerheartbeatcount", "Broker heartbeats that timed out", 0),
        ("lastappliedrecordoffset", "Offset of the last metadata record applied", last_offset),
        ("lastcommittedrecordoffset", "Offset of the last metadata record committed", q.high_watermark - 1),
        ("lastappliedrecordtimestamp", "Append time of the last metadata record applied", last_ms),
        ("lastappliedrecordlagms", "Now minus the append time of the last record applied", now - last_ms),
    )), (BROKER_METADATA, (
        ("last_applied_record_offset", "Offset of the last metadata record this broker applied", last_offset),
        ("last_applied_record_timestamp", "Append time (ms) of the last metadata record applied", last_ms),
        ("last_applied_record_lag_ms", "Milliseconds since the append time of the last record applied",
         now - last_ms),
        ("metadata_load_error_count", "Errors loading metadata records (none: they are files here)", 0),
        ("metadata_apply_error_count", "Errors applying loaded metadata", 0),
    )))  # fmt: skip
    for prefix, gauges in families:
        for name, doc, value in gauges:
            yield prefix + name, doc, [], [([], float(value))]
