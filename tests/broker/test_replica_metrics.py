"""The storage-side gauges a stock Kafka dashboard queries (``broker/replica_metrics.py``, ``fixed_metrics.py``).

A real broker (``open_broker``/``groups_broker``: real storage) is scraped as
the endpoint serves it (``generate_latest``, read back with prometheus-client's
parser). What each test pins, from Kafka's ``LogManager``, ``Partition`` and
``ReplicaManager``:

* ``LogDirectoryOffline{logDirectory}`` is 0 per dir until that dir fails,
  then 1, the other dir staying 0; the failed dir's partitions lose their
  ``kafka.cluster:type=Partition`` gauges (``markOffline`` removes them) and
  their ``kafka.log:type=Log`` ones (``removeLogAndMetrics``), and
  leave LeaderCount and AtMinIsrPartitionCount, not PartitionCount;
* a partition of one replica is at its effective min ISR whatever
  ``min.insync.replicas`` says (``min(minIsr, replicas)``), never under it;
* LastStableOffsetLag is the records of an open transaction until its commit,
  and ProducerIdCount counts the producer; PartitionsWithLateTransactionsCount
  counts its partition once its last batch is older than
  ``transaction.max.timeout.ms`` plus 5 minutes, and not after its abort;
* the series a single node fixes (ISR changes, unclean elections, queue
  sizes, raft channel) are there at 0, and the Linux disk byte gauges follow
  ``/proc/self/io``.
"""

from __future__ import annotations

import errno
import os

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from storage import fileops

from ._admin_client import create_ok, open_broker
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_log_dir_failure import _fail, _produce
from .test_transactions import TS, end, open_txn


def scrape(b) -> dict[tuple[str, tuple], float]:
    text = generate_latest(b.metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip


def one(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def partition_gauges(samples: dict, topic: str) -> dict[str, float]:
    prefix = "kafka_cluster_partition_"
    return {name[len(prefix):]: value for (name, labels), value in samples.items()
            if name.startswith(prefix) and dict(labels) == {"topic": topic, "partition": "0"}}  # fmt: skip


async def test_a_failed_dir_reads_offline_and_its_partitions_lose_their_gauges(tmp_path, monkeypatch):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    b = open_broker(tmp_path, log_dirs=f"{d1},{d2}", min_insync_replicas="2")
    try:
        await create_ok(b, "t", 1)
        await create_ok(b, "u", 1)
        failed = b.topics.partition("t", 0).log.dir.parent
        other = b.topics.partition("u", 0).log.dir.parent
        assert failed != other
        before = scrape(b)
        offline = "kafka_log_logmanager_logdirectoryoffline"
        assert [one(before, offline, logDirectory=os.path.abspath(d)) for d in (failed, other)] == [0, 0]
        ones = {"underreplicated": 0, "insyncreplicascount": 1, "replicascount": 1, "underminisr": 0,
                "atminisr": 1, "laststableoffsetlag": 0}  # min.insync.replicas=2, one replica: at, not under
        assert partition_gauges(before, "t") == ones and partition_gauges(before, "u") == ones
        counts = ("partitioncount", "leadercount", "atminisrpartitioncount", "underminisrpartitioncount")
        rm = "kafka_server_replicamanager_"
        assert [one(before, rm + name) for name in counts] == [2, 2, 2, 0]

        real = fileops.pwrite
        _fail(monkeypatch, "pwrite", errno.EIO)
        await _produce(b)  # to "t": its dir fails
        monkeypatch.setattr(fileops, "pwrite", real)
        after = scrape(b)
        assert [one(after, offline, logDirectory=os.path.abspath(d)) for d in (failed, other)] == [1, 0]
        assert partition_gauges(after, "t") == {} and partition_gauges(after, "u") == ones
        assert [one(after, rm + name) for name in counts] == [2, 1, 1, 0]
        # the Log gauges go too: Kafka's handleLogDirFailure removes the log with its metrics (removeLogAndMetrics)
        assert one(after, "kafka_log_log_size", topic="t", partition="0") is None
    finally:
        b.close()


async def test_an_open_transaction_is_the_last_stable_offset_lag(groups_broker):
    lag = "kafka_cluster_partition_laststableoffsetlag"
    pid, epoch = await open_txn(groups_broker, values=(b"a", b"b", b"c"))
    samples = scrape(groups_broker)
    assert one(samples, lag, topic="t", partition="0") == 3
    assert one(samples, "kafka_server_replicamanager_produceridcount") >= 1
    assert await end(groups_broker, pid, epoch, True) == 0
    assert one(scrape(groups_broker), lag, topic="t", partition="0") == 0


async def test_a_transaction_open_past_the_max_timeout_and_5_minutes_is_late(groups_broker, clock):
    """KIP-664: late once its producer's last batch (timestamp TS + 1, the batch's max) is more than
    ``transaction.max.timeout.ms`` (15 minutes by default) plus 5 minutes old; not late once it ends."""
    late = "kafka_server_replicamanager_partitionswithlatetransactionscount"
    assert one(scrape(groups_broker), late) == 0
    pid, epoch = await open_txn(groups_broker)
    last = TS + 1
    clock.now = last + 900_000 + 300_000
    assert one(scrape(groups_broker), late) == 0  # exactly at the limit: not yet
    clock.now += 1
    assert one(scrape(groups_broker), late) == 1
    assert await end(groups_broker, pid, epoch, False) == 0
    assert one(scrape(groups_broker), late) == 0


async def test_the_series_a_single_node_fixes_and_the_disk_bytes(tmp_path):
    b = open_broker(tmp_path)
    try:
        samples = scrape(b)
        fixed = ["kafka_server_replicamanager_isrexpands_total", "kafka_server_replicamanager_isrshrinks_total",
                 "kafka_server_replicamanager_failedisrupdates_total",
                 "kafka_controller_controllerstats_uncleanleaderelections_total",
                 "kafka_network_requestchannel_requestqueuesize", "kafka_network_requestchannel_responsequeuesize",
                 "kafka_server_raftchannelmetrics_incoming_byte_total",
                 "kafka_server_raftchannelmetrics_outgoing_byte_total",
                 "kafka_server_raftchannelmetrics_request_total", "kafka_server_raftchannelmetrics_response_total",
                 "kafka_server_replicamanager_reassigningpartitions"]  # fmt: skip
        assert [one(samples, name) for name in fixed] == [0.0] * len(fixed)
        with open("/proc/self/io") as f:
            io = dict(line.split(": ") for line in f.read().splitlines())
        written = one(samples, "kafka_server_kafkaserver_linux_disk_write_bytes")
        assert 0 <= written <= int(io["write_bytes"])  # read before: the file only grows
        assert one(samples, "kafka_server_kafkaserver_linux_disk_read_bytes") is not None
    finally:
        b.close()
