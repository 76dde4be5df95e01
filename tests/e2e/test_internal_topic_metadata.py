"""``__consumer_offsets`` auto-created by a Metadata request, seen by a real admin client.

A client that asks Metadata for ``__consumer_offsets`` (allowing creation)
before any group coordinator needed it must get the topic the coordinator
would have made (Kafka's ``AutoTopicCreationManager.creatableTopic``):
``offsets.topic.num.partitions`` partitions and ``cleanup.policy=compact``,
so a committed offset survives time retention. confluent-kafka's
AdminClient describes the topic and fetches the group's offset after a
retention pass and a restart; ``log.retention.ms`` / ``log.roll.ms`` are
shortened only so a week passes in seconds.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from protocol import ErrorCode

from ..broker._admin_client import creatable, req, sub
from .harness import raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
OFFSETS = "__consumer_offsets"


def _metadata(port: int, name: str):
    Topic = sub(3, "MetadataRequestTopic")
    return raw_call(port, 3, 12, req(3, topics=[Topic(name=name)], allow_auto_topic_creation=True)).topics[0]


def _commit(port: int, group: str, offset: int) -> int:
    OT = sub(8, "OffsetCommitRequestTopic")
    part = OT.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset, committed_metadata="")
    body = req(8, group_id=group, generation_id_or_member_epoch=-1, member_id="",
               topics=[OT(name="data", partitions=[part])])  # fmt: skip
    return raw_call(port, 8, 8, body).topics[0].partitions[0].error_code


def _wait_for_offsets_topic(port: int):
    deadline = time.monotonic() + 30
    while (entry := _metadata(port, OFFSETS)).error_code != ErrorCode.NONE:
        assert entry.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and entry.is_internal
        assert time.monotonic() < deadline, "__consumer_offsets was never created"
        time.sleep(0.1)
    return entry


def test_offsets_topic_made_by_metadata_is_compacted_and_keeps_offsets(broker_factory):
    broker = broker_factory(log_retention_ms="2000", log_roll_ms="500", log_retention_check_interval_ms="300",
                            offsets_topic_num_partitions="3")  # fmt: skip
    port = broker.port
    assert raw_call(port, 19, 5, req(19, topics=[creatable("data")], timeout_ms=5000)).topics[0].error_code == 0
    entry = _wait_for_offsets_topic(port)
    assert entry.is_internal and len(entry.partitions) == 3
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    resource = ConfigResource(ResourceType.TOPIC, OFFSETS)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert configs["cleanup.policy"].value == "compact"
    assert _commit(port, "g", 42) == ErrorCode.NONE
    time.sleep(1.0)
    assert _commit(port, "other", 1) == ErrorCode.NONE  # rolls the segment holding g's commit
    time.sleep(4.0)  # retention passes over the rolled segments
    assert _commit(port, "other", 2) == ErrorCode.NONE
    broker.stop()
    broker.restart()
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"})
    request = ConsumerGroupTopicPartitions("g", [TopicPartition("data", 0)])
    fetched = admin.list_consumer_group_offsets([request])["g"].result(timeout=30)
    assert [tp.offset for tp in fetched.topic_partitions] == [42]
