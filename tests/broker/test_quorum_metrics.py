"""The raft, controller and broker-metadata gauges of a one-node KRaft Kafka, read from the metrics registry.

A broker on a clock the tests move: each value right after the start, after
metadata changes (the offsets move by exactly what DescribeQuorum's high
watermark moves by, the last-applied time is the clock's at the change, the
lag is now minus it), what reads and refused changes leave alone, the append
rate as Kafka's ``Rate(SECONDS)`` over 2 windows of 30 s, the epoch after a
restart, and the same leader, epoch and offsets as DescribeQuorum answers at
the same moment. The /metrics text carries ``current_state`` as the JMX
exporter's untyped ``{current_state="leader"} 1``.
"""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from broker.config import BrokerConfig
from broker.core import Broker
from broker.dispatch import REGISTRY
from broker.topics import TopicRegistry

from ._admin_client import NODE, call, create_ok, req
from .test_describe_quorum import BROKER, TOPIC, _alter, _describe

T0 = 1_700_000_000_000
RAFT, CONTROLLER, META = "kafka_server_raftmetrics_", "kafka_controller_kafkacontroller_", \
    "kafka_server_brokermetadatametrics_"  # fmt: skip


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _open(tmp_path, clock: Clock) -> Broker:
    config = BrokerConfig.from_props({"node.id": str(NODE), "log.dirs": str(tmp_path / "data"),
                                      "prometheus.port": "0"})  # fmt: skip
    return Broker(config, TopicRegistry.open(config, clock), clock=clock)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def broker(tmp_path, clock):
    b = _open(tmp_path, clock)
    yield b
    b.close()


def value(broker, name: str, labels: dict | None = None) -> float | None:
    return broker.metrics.registry.get_sample_value(name, labels or {})


def quorum_view(broker) -> dict[str, float | None]:
    """What the metrics say of the leader, epochs and offsets."""
    names = [RAFT + n for n in ("current_leader", "current_vote", "current_epoch", "log_end_epoch", "high_watermark",
                                "log_end_offset")]  # fmt: skip
    names += [CONTROLLER + "lastappliedrecordoffset", CONTROLLER + "lastcommittedrecordoffset",
              META + "last_applied_record_offset"]  # fmt: skip
    return {name: value(broker, name) for name in names}


async def described(broker) -> dict[str, float]:
    """The same, from DescribeQuorum's answer."""
    p = (await _describe(broker)).topics[0].partitions[0]
    return {RAFT + "current_leader": p.leader_id, RAFT + "current_vote": p.leader_id,
            RAFT + "current_epoch": p.leader_epoch, RAFT + "log_end_epoch": p.leader_epoch,
            RAFT + "high_watermark": p.high_watermark, RAFT + "log_end_offset": p.current_voters[0].log_end_offset,
            CONTROLLER + "lastappliedrecordoffset": p.high_watermark - 1,
            CONTROLLER + "lastcommittedrecordoffset": p.high_watermark - 1,
            META + "last_applied_record_offset": p.high_watermark - 1}  # fmt: skip


def times(broker) -> tuple:
    """(last-applied timestamp, lag) of the controller and of the broker's metadata metrics."""
    names = (CONTROLLER + "lastappliedrecordtimestamp", CONTROLLER + "lastappliedrecordlagms",
             META + "last_applied_record_timestamp", META + "last_applied_record_lag_ms")
    return tuple(value(broker, name) for name in names)


def kafka_rate(records: float, elapsed_ms: int) -> float:
    """Kafka's Rate(SECONDS) over 2 samples of 30 s, ``elapsed_ms`` after the oldest sample began (< 30 s)."""
    return records / ((elapsed_ms + 30_000) / 1000)


async def test_right_after_the_start(broker, clock):
    view = quorum_view(broker)
    assert view == await described(broker)
    assert view == {RAFT + "current_leader": NODE, RAFT + "current_vote": NODE, RAFT + "current_epoch": 1,
                    RAFT + "log_end_epoch": 1, RAFT + "high_watermark": 1, RAFT + "log_end_offset": 1,
                    CONTROLLER + "lastappliedrecordoffset": 0, CONTROLLER + "lastcommittedrecordoffset": 0,
                    META + "last_applied_record_offset": 0}  # fmt: skip  (the leader-change record, at offset 0)
    assert value(broker, RAFT + "current_state", {"current_state": "leader"}) == 1
    assert value(broker, RAFT + "number_unknown_voter_connections") == 0
    assert value(broker, RAFT + "fetch_records_rate") == 0
    assert value(broker, RAFT + "append_records_rate") == kafka_rate(1, 0)  # the leader-change record
    assert times(broker) == (T0, 0, T0, 0)
    fixed = {"activebrokercount": 1, "fencedbrokercount": 0, "migratingzkbrokercount": 0,
             "preferredreplicaimbalancecount": 0, "metadataerrorcount": 0, "timedoutbrokerheartbeatcount": 0}
    assert {name: value(broker, CONTROLLER + name) for name in fixed} == fixed
    assert value(broker, META + "metadata_load_error_count") == value(broker, META + "metadata_apply_error_count") == 0
    clock.now += 1234  # the lag grows with the clock, the time of the record stays
    assert times(broker) == (T0, 1234, T0, 1234)


async def test_metadata_changes_move_the_offsets_as_describe_quorum_and_stamp_the_clock(broker, clock):
    hw = value(broker, RAFT + "high_watermark")
    clock.now = T0 + 5_000
    await create_ok(broker, "t", 2)
    assert quorum_view(broker) == await described(broker)
    assert value(broker, RAFT + "high_watermark") == value(broker, RAFT + "log_end_offset") == hw + 1
    assert value(broker, CONTROLLER + "lastappliedrecordoffset") == hw
    assert times(broker) == (T0 + 5_000, 0, T0 + 5_000, 0)
    clock.now = T0 + 9_000
    key, body = _alter(TOPIC, "t", "retention.ms", "1000")
    assert (await call(broker, key, REGISTRY[key].max_version, body)).responses[0].error_code == 0
    key, body = _alter(BROKER, str(NODE), "log.cleaner.threads", "2")
    assert (await call(broker, key, REGISTRY[key].max_version, body)).responses[0].error_code == 0
    assert quorum_view(broker) == await described(broker)
    assert value(broker, RAFT + "high_watermark") == hw + 3
    assert value(broker, META + "last_applied_record_offset") == hw + 2
    assert value(broker, RAFT + "current_epoch") == 1
    clock.now = T0 + 10_000
    assert times(broker) == (T0 + 9_000, 1_000, T0 + 9_000, 1_000)
    assert value(broker, RAFT + "append_records_rate") == kafka_rate(4, 10_000)  # leader change + 3 changes


async def test_reads_and_refused_changes_move_nothing(broker, clock):
    await create_ok(broker, "keep")
    before = quorum_view(broker), times(broker)
    clock.now += 2_000
    for key, body in (_alter(TOPIC, "keep", "retention.ms", "1000", validate_only=True),
                      _alter(TOPIC, "keep", "retention.ms", "soon"),
                      (19, req(19, topics=[], timeout_ms=1))):  # fmt: skip
        await call(broker, key, REGISTRY[key].max_version, body)
    clock.now -= 2_000
    assert (quorum_view(broker), times(broker)) == before


async def test_the_append_rate_is_kafkas_two_windows_of_30_seconds(broker, clock):
    clock.now = T0 + 40_000  # a second window: the first still counts
    await create_ok(broker, "a")
    assert value(broker, RAFT + "append_records_rate") == 2 / 40  # 40 s elapsed, one full window
    clock.now = T0 + 75_000  # the start's window has expired
    assert value(broker, RAFT + "append_records_rate") == 1 / 35  # 35 s since the second window began
    clock.now = T0 + 200_000  # nothing recent: 0, as Kafka's measure of an idle sensor
    assert value(broker, RAFT + "append_records_rate") == 0
    assert times(broker)[:2] == (T0 + 40_000, 160_000)


async def test_a_restart_is_an_election_one_epoch_and_one_record_on(tmp_path, clock):
    b = _open(tmp_path, clock)
    try:
        await create_ok(b, "t")
        end = value(b, RAFT + "log_end_offset")
    finally:
        b.close()
    clock.now = T0 + 60_000
    b = _open(tmp_path, clock)
    try:
        assert quorum_view(b) == await described(b)
        assert (value(b, RAFT + "current_epoch"), value(b, RAFT + "log_end_epoch")) == (2, 2)
        assert value(b, RAFT + "log_end_offset") == end + 1  # the new leader-change record
        assert value(b, CONTROLLER + "lastappliedrecordoffset") == end
        assert times(b) == (T0 + 60_000, 0, T0 + 60_000, 0)
        assert value(b, RAFT + "append_records_rate") == kafka_rate(1, 0)  # counted since this start
    finally:
        b.close()


def test_the_metrics_text_has_kafkas_jmx_exporter_names(broker):
    text = generate_latest(broker.metrics.registry).decode()
    assert "# TYPE kafka_server_raftmetrics_current_state untyped\n" in text
    assert 'kafka_server_raftmetrics_current_state{current_state="leader"} 1.0\n' in text
    for line in ("kafka_server_raftmetrics_current_epoch 1.0", "kafka_controller_kafkacontroller_activebrokercount 1.0",
                 "kafka_server_brokermetadatametrics_last_applied_record_timestamp 1.7e+12"):
        assert line + "\n" in text
    for absent in ("commit_latency", "election_latency", "poll_idle_ratio", "current_vote_directory_id"):
        assert f"kafka_server_raftmetrics_{absent}" not in text  # no true value to give, or a string
