"""kafka-python 3.0.x against a real broker process: produce with every codec, consume, admin.

Every record's key, value, headers, timestamp and offset must come back
exactly. The consumer uses ``assign`` (no group), as the issue asks.
"""

from __future__ import annotations

import os
import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from .clients import kp_consume

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]

BASE_TS = 1_750_000_000_000


def produce(bootstrap: str, topic: str, records: list[tuple], **config) -> list:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    futures = [
        producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts, partition=0) for k, v, h, ts in records
    ]
    producer.flush(30)
    metadata = [f.get(timeout=30) for f in futures]
    producer.close(5)
    return metadata


def _records(n: int, tag: str) -> list[tuple]:
    return [
        (f"key-{tag}-{i}".encode(), f"value-{tag}-{i}".encode() * (i % 4 + 1), [("h", str(i).encode())], BASE_TS + i)
        for i in range(n)
    ] + [(b"tomb", None, [], BASE_TS + n), (None, b"keyless", [("x", b"")], BASE_TS + n + 1)]


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_codec(broker, codec):
    topic = f"kp-{codec or 'none'}"
    records = _records(50, str(codec))
    meta = produce(broker.bootstrap, topic, records, compression_type=codec)
    assert [m.offset for m in meta] == list(range(len(records)))
    got = kp_consume(broker.bootstrap, topic, len(records))
    assert [(m.offset, m.key, m.value, list(m.headers), m.timestamp) for m in got] == [
        (i, k, v, [(hk, hv) for hk, hv in h], ts) for i, (k, v, h, ts) in enumerate(records)
    ]


def test_admin_creates_topic_with_configs_and_describes_it(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("configured", 3, 1, topic_configs={"cleanup.policy": "compact",
                                                                    "segment.bytes": "1048576"})])  # fmt: skip
    assert "configured" in admin.list_topics()
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "configured")], config_filter="all")
    (by_name,) = described.values()
    entries = by_name["configured"]
    assert entries["cleanup.policy"]["value"] == "compact"
    assert entries["segment.bytes"]["value"] == "1048576"
    assert entries["retention.ms"]["value"] == "604800000"  # a default, reported too with filter=all
    admin.close()


def test_admin_describes_log_dirs_with_partition_sizes(broker):
    """``describe_log_dirs`` (DescribeLogDirs at the newest version both know), as kafka-log-dirs.sh and
    web UIs use it for topic sizes."""
    records = _records(20, "dirs")
    produce(broker.bootstrap, "sized", records)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    (answer,) = admin.describe_log_dirs()
    admin.close()
    (log_dir,) = answer["log_dirs"]
    assert log_dir["error_code"] == 0 and log_dir["log_dir"] == os.path.abspath(broker.data_dir)
    sizes = {(t["name"], p["partition_index"]): p["partition_size"] for t in log_dir["topics"] for p in t["partitions"]}
    on_disk = (broker.data_dir / "sized-0" / "00000000000000000000.log").stat().st_size
    assert sizes[("sized", 0)] == on_disk > sum(len(v or b"") for _, v, _, _ in records)
    assert 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]


def test_admin_acl_requests_report_that_acls_are_disabled(broker):
    """No authorizer: kafka-python's ACL calls get Kafka's SECURITY_DISABLED answers."""
    from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                             ResourcePattern, ResourcePatternFilter, ResourceType)  # fmt: skip
    from kafka.errors import SecurityDisabledError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    topics = ResourcePatternFilter(ResourceType.TOPIC, None, ACLResourcePatternType.ANY)
    any_acl = ACLFilter(None, "*", ACLOperation.ANY, ACLPermissionType.ANY, topics)
    with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the broker"):
        admin.describe_acls(any_acl)
    read = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW, ResourcePattern(ResourceType.TOPIC, "t"))
    assert admin.create_acls([read]) == {"succeeded": [], "failed": [SecurityDisabledError]}
    ((_, matched, error),) = admin.delete_acls([any_acl])
    assert (matched, error) == ([], SecurityDisabledError)
    admin.close()


def test_backfilled_old_timestamps_stay_in_one_segment(broker):
    """Records stamped a week ago, sent a batch a second: Kafka rolls on append only (record time vs the
    segment's first record time), so they share one segment; the broker's 1 s timer must not roll them."""
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("backfill", 1, 1, topic_configs={"retention.ms": "-1"})])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    old = int(time.time() * 1000) - 8 * 86_400_000
    for i in range(4):
        producer.send("backfill", key=b"k", value=b"v%d" % i, partition=0, timestamp_ms=old + i).get(timeout=30)
        time.sleep(1.2)  # past the broker's timer tick
    producer.close(5)
    assert len(list((broker.data_dir / "backfill-0").glob("*.log"))) == 1
    got = kp_consume(broker.bootstrap, "backfill", 4)
    assert [(m.offset, m.timestamp) for m in got] == [(i, old + i) for i in range(4)]
