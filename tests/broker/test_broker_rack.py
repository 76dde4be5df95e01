"""``broker.rack``: the rack Metadata (v1+) and DescribeCluster report for this node, null without it; a Fetch
that names the client's rack (v11+ ``rack_id``) is still read from the leader (``preferred_read_replica`` -1)."""

from __future__ import annotations

import pytest

from ._admin_client import NODE, call, create_ok, open_broker, req
from .test_fetch_rules import by_partition, fetch_body, produce_big


@pytest.mark.parametrize("rack", [None, "rack-a"])
async def test_metadata_and_describe_cluster_report_broker_rack(tmp_path, rack):
    broker = open_broker(tmp_path, **({"broker_rack": rack} if rack else {}))
    try:
        for version in (1, 9, 12):
            metadata = await call(broker, 3, version, req(3, topics=[], allow_auto_topic_creation=False))
            assert [(b.node_id, b.rack) for b in metadata.brokers] == [(NODE, rack)]
        for version in (0, 2):
            cluster = await call(broker, 60, version, req(60, include_cluster_authorized_operations=False))
            assert [(b.broker_id, b.rack) for b in cluster.brokers] == [(NODE, rack)]
    finally:
        broker.close()


async def test_a_fetch_from_another_rack_reads_the_leader(tmp_path):
    broker = open_broker(tmp_path, broker_rack="rack-a")
    try:
        await create_ok(broker, "racked", partitions=1)
        await produce_big(broker, "racked", 0)
        body = fetch_body({"racked": {0: 0}})
        body.rack_id = "rack-b"
        for version in (11, 12):  # by name (from v13 topics go by id)
            part = by_partition(await call(broker, 1, version, body))[("racked", 0)]
            assert (part.error_code, part.preferred_read_replica, part.high_watermark) == (0, -1, 1)
    finally:
        broker.close()
