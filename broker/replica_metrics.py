"""The storage-side gauges of a one-node broker: Log, Partition, ReplicaManager, LogManager, KafkaServer.

Computed at scrape time from the ``LogManager`` (``StateCollector``), so they
agree with what the broker answers at that moment. The names are those the
JMX exporter gives Kafka's Yammer gauges under Strimzi's generic rule
``kafka.(\\w+)<type=(.+), name=(.+), k=v...><>Value`` -> ``kafka_$1_$2_$3``,
lower-cased, the MBean's tags kept as labels:

* ``kafka.log:type=Log`` (``UnifiedLog``): size, offsets, segments, per
  ``{topic, partition}`` of an online log (Kafka's ``handleLogDirFailure``
  removes an offline log with its gauges).
* ``kafka.cluster:type=Partition`` (``Partition.scala``), per
  ``{topic, partition}`` of an online log: this node leads every partition and
  is its only replica, so UnderReplicated 0, InSyncReplicasCount 1,
  ReplicasCount 1; the effective min ISR is ``min(min.insync.replicas,
  replicas)`` = 1, so UnderMinIsr 0 and AtMinIsr 1; LastStableOffsetLag is
  ``high watermark - last stable offset`` (an open transaction holds it up).
  A partition of a failed log dir has none: Kafka's ``markOffline`` clears the
  partition and removes its gauges.
* ``kafka.server:type=ReplicaManager``: PartitionCount (offline ones too, as
  Kafka keeps them in ``allPartitions``), LeaderCount, AtMinIsrPartitionCount
  and ProducerIdCount over the online partitions only (Kafka's
  ``leaderPartitionsIterator``/``onlinePartitionsIterator``),
  UnderReplicatedPartitions, UnderMinIsrPartitionCount, ReassigningPartitions
  0, OfflineReplicaCount, and PartitionsWithLateTransactionsCount (KIP-664):
  the online partitions whose oldest open transaction is late, its
  producer's last batch timestamp more than ``transaction.max.timeout.ms``
  plus 5 minutes before now (the coordinator should have aborted it by then:
  a hanging transaction, holding the last stable offset back).
* ``kafka.log:type=LogManager``: OfflineLogDirectoryCount, and
  LogDirectoryOffline per ``{logDirectory}`` (the dir's absolute path), 1 once
  the dir has failed. While the logs load at start (``recovery_samples``,
  before the broker above exists) remainingLogsToRecover ``{dir}`` and
  remainingSegmentsToRecover ``{dir, threadNum}`` (threadNum 0 to
  ``num.recovery.threads.per.data.dir`` - 1), as ``storage.load_progress``
  describes; they are gone once the load is done.
* ``kafka.server:type=KafkaServer``: ``linux-disk-read-bytes`` and
  ``-write-bytes`` (Kafka's ``LinuxIoMetricsCollector``: ``read_bytes`` and
  ``write_bytes`` of ``/proc/self/io``, bytes this process made the disk
  read or write), only where that file can be read, as Kafka registers them.
* ``kafka.controller:type=KafkaController``: ActiveControllerCount 1,
  OfflinePartitionsCount, GlobalTopicCount, GlobalPartitionCount.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

Sample = tuple[str, str, list[str], list[tuple[list[str], float]]]
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000  # past transaction.max.timeout.ms, a transaction is late (KIP-664)
_PROC_IO = "/proc/self/io"


def replica_samples(manager: Any, now_ms: int, late_after_ms: int) -> Iterable[Sample]:
    """Every gauge of the module docstring, for the storage ``LogManager`` at ``now_ms``; a transaction is
    late once its producer's last batch is more than ``late_after_ms`` old."""
    logs = list(manager.logs())
    online = [log_ for log_ in logs if not log_.offline]
    yield from _log_samples(online)
    yield from _partition_samples(online)
    offline = float(len(logs) - len(online))
    failed = manager.failures.offline
    yield ("kafka_log_logmanager_logdirectoryoffline", "1 when the log dir has failed", ["logDirectory"],
           [([os.path.abspath(root)], 1.0 if root in failed else 0.0) for root in manager.dirs])  # fmt: skip
    topics = float(len({log_.topic for log_ in logs}))
    producers = float(sum(len(log_.producer_state.producers) for log_ in online))
    late = float(sum(_has_late_transaction(log_.producer_state, now_ms, late_after_ms) for log_ in online))
    for name, doc, value in (
        ("kafka_server_replicamanager_partitioncount", "Partitions on this broker", float(len(logs))),
        ("kafka_server_replicamanager_leadercount", "Online partitions this broker leads", float(len(online))),
        ("kafka_server_replicamanager_underreplicatedpartitions", "Under-replicated partitions", 0.0),
        ("kafka_server_replicamanager_underminisrpartitioncount", "Partitions under their min ISR", 0.0),
        ("kafka_server_replicamanager_atminisrpartitioncount", "Partitions at their min ISR", float(len(online))),
        ("kafka_server_replicamanager_reassigningpartitions", "Partitions being reassigned", 0.0),
        ("kafka_server_replicamanager_produceridcount", "Producer ids held by the online partitions", producers),
        ("kafka_server_replicamanager_partitionswithlatetransactionscount",
         "Online partitions whose oldest open transaction is late", late),
        ("kafka_server_replicamanager_offlinereplicacount", "Offline replicas", offline),
        ("kafka_log_logmanager_offlinelogdirectorycount", "Log dirs offline", float(len(failed))),
        ("kafka_controller_kafkacontroller_activecontrollercount", "Active controllers on this node", 1.0),
        ("kafka_controller_kafkacontroller_offlinepartitionscount", "Partitions without a leader", offline),
        ("kafka_controller_kafkacontroller_globaltopiccount", "Topics in the cluster", topics),
        ("kafka_controller_kafkacontroller_globalpartitioncount", "Partitions in the cluster", float(len(logs))),
    ):  # fmt: skip
        yield name, doc, [], [([], value)]
    yield from _disk_io_samples()


def _has_late_transaction(state: Any, now_ms: int, late_after_ms: int) -> bool:
    """Kafka's ``ProducerStateManager.hasLateTransaction``: the partition's oldest open transaction (lowest
    first offset) is late when its producer's last timestamp is set (> 0) and over ``late_after_ms`` old."""
    ongoing = list(state.ongoing.items())  # read from the scrape's thread: a copy first
    if not ongoing:
        return False
    pid = min(ongoing, key=lambda item: item[1])[0]
    entry = state.producers.get(pid)
    last = entry.last_timestamp if entry is not None else -1
    return last > 0 and now_ms - last > late_after_ms


def recovery_samples(progress: Any) -> Iterable[Sample]:
    """Kafka's LogManager recovery gauges while the logs load (``storage.load_progress``), none after."""
    logs_left, segments_left = progress.snapshot()
    if logs_left:
        yield ("kafka_log_logmanager_remaininglogstorecover", "Logs of the dir not loaded yet", ["dir"],
               [([d], float(n)) for d, n in logs_left.items()])  # fmt: skip
    if segments_left:
        yield ("kafka_log_logmanager_remainingsegmentstorecover",
               "Segments left to recover of the log this recovery thread of the dir is on", ["dir", "threadNum"],
               [([d, str(t)], float(n)) for (d, t), n in sorted(segments_left.items())])  # fmt: skip


def _log_samples(logs: list) -> Iterable[Sample]:
    tp = ["topic", "partition"]
    for name, doc, value in (
        ("size", "Partition size in bytes", lambda l: l.size_in_bytes),
        ("logstartoffset", "log_start_offset", lambda l: l.log_start_offset),
        ("logendoffset", "log_end_offset", lambda l: l.log_end_offset),
        ("numlogsegments", "Segments", lambda l: len(l.segments)),
    ):  # fmt: skip
        yield f"kafka_log_log_{name}", doc, tp, [([l.topic, str(l.partition)], float(value(l))) for l in logs]


def _partition_samples(online: list) -> Iterable[Sample]:
    tp = ["topic", "partition"]
    keys = [[log_.topic, str(log_.partition)] for log_ in online]
    for name, doc, value in (
        ("underreplicated", "1 when the ISR is smaller than the replica set", 0.0),
        ("insyncreplicascount", "Replicas in sync (this node, the leader)", 1.0),
        ("replicascount", "Replicas of the partition", 1.0),
        ("underminisr", "1 when the ISR is below the effective min ISR", 0.0),
        ("atminisr", "1 when the ISR is at the effective min ISR (min(min.insync.replicas, replicas))", 1.0),
    ):  # fmt: skip
        yield f"kafka_cluster_partition_{name}", doc, tp, [(key, value) for key in keys]
    lags = [(key, float(log_.high_watermark - log_.last_stable_offset)) for key, log_ in zip(keys, online)]
    yield "kafka_cluster_partition_laststableoffsetlag", "High watermark minus last stable offset", tp, lags


def _disk_io_samples() -> Iterable[Sample]:
    try:
        with open(_PROC_IO) as f:
            fields = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
        read_bytes, write_bytes = float(fields["read_bytes"]), float(fields["write_bytes"])
    except (OSError, KeyError, ValueError):
        return  # not Linux, or no procfs: Kafka registers neither gauge
    yield "kafka_server_kafkaserver_linux_disk_read_bytes", "Bytes this process had the disk read", [], \
        [([], read_bytes)]
    yield "kafka_server_kafkaserver_linux_disk_write_bytes", "Bytes this process had the disk write", [], \
        [([], write_bytes)]
