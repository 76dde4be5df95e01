"""A Metadata request that auto-creates an internal topic makes it as its coordinator would.

Kafka's ``AutoTopicCreationManager.creatableTopic`` gives ``__consumer_offsets``
``offsets.topic.num.partitions`` partitions and the group coordinator's
compacted configs, and ``__transaction_state`` its own count and configs; a
KRaft broker answers UNKNOWN_TOPIC_OR_PARTITION (``is_internal`` set) while the
creation is under way. An ordinary topic would get ``num.partitions`` and the
delete policy, and committed offsets would expire with retention.
"""

from __future__ import annotations

import logging

import pytest
import trio

from protocol import ErrorCode

from ._admin_client import call, create_ok, describe, open_broker, req, sub

Topic = sub(3, "MetadataRequestTopic")
OFFSETS, TXNS = "__consumer_offsets", "__transaction_state"


@pytest.fixture
def broker(tmp_path):
    b = open_broker(tmp_path, offsets_topic_num_partitions="4", transaction_state_log_num_partitions="2")
    yield b
    b.close()


async def _metadata(broker, name: str, version: int = 12):
    resp = await call(broker, 3, version, req(3, topics=[Topic(name=name)], allow_auto_topic_creation=True))
    assert len(resp.topics) == 1
    return resp.topics[0]


async def _wait_created(broker, name: str) -> None:
    with trio.fail_after(10):
        while broker.topics.get(name) is None:
            await trio.sleep(0.01)


@pytest.mark.parametrize("name, partitions", [(OFFSETS, 4), (TXNS, 2)])
async def test_metadata_creates_an_internal_topic_as_its_coordinator_does(broker, name, partitions):
    first = await _metadata(broker, name)
    assert (first.error_code, first.name, first.is_internal) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, True)
    assert first.partitions == []
    await _wait_created(broker, name)
    second = await _metadata(broker, name)
    assert (second.error_code, second.is_internal, len(second.partitions)) == (ErrorCode.NONE, True, partitions)
    rows = {c.name: c.value for c in (await describe(broker, name)).configs}
    assert rows["cleanup.policy"] == "compact"
    assert broker.topics.effective_config(name).cleanup_policy == ("compact",)


async def test_an_internal_topic_being_created_stays_unknown_to_metadata(broker):
    """Every Metadata answer before the creation ends is UNKNOWN_TOPIC_OR_PARTITION; nothing is created twice."""
    answers = [(await _metadata(broker, OFFSETS, version)).error_code for version in (4, 9)]
    assert answers == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2
    await _wait_created(broker, OFFSETS)
    await broker.groups.store.ready()
    assert broker.topics.get(OFFSETS).num_partitions == 4


async def test_an_ordinary_topic_is_still_created_at_once_with_num_partitions(broker):
    entry = await _metadata(broker, "plain")
    assert (entry.error_code, entry.is_internal, len(entry.partitions)) == (ErrorCode.NONE, False, 3)
    assert broker.topics.effective_config("plain").cleanup_policy == ("delete",)


async def test_an_existing_uncompacted_internal_topic_is_left_as_it_is_with_a_warning(broker, caplog):
    """As Kafka, the broker does not repair an internal topic made with other configs; it warns once."""
    await create_ok(broker, OFFSETS, partitions=1)
    with caplog.at_level(logging.WARNING, logger="minibroker"):
        assert broker.groups.store.ensure_topic()
        assert broker.groups.store.ensure_topic()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"{OFFSETS} has cleanup.policy=delete, not compact: its records expire by retention; "
                        "set cleanup.policy=compact on it to keep them"]  # fmt: skip
    assert broker.topics.effective_config(OFFSETS).cleanup_policy == ("delete",)
    assert broker.groups.store.num_partitions == 1
    entry = await _metadata(broker, OFFSETS)
    assert (entry.error_code, len(entry.partitions)) == (ErrorCode.NONE, 1)


@pytest.mark.parametrize("name, wanted", [
    (OFFSETS, {"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}),
    (TXNS, {"cleanup.policy": "compact", "compression.type": "uncompressed", "segment.bytes": "104857600",
            "unclean.leader.election.enable": "false", "min.insync.replicas": "2"}),
])  # fmt: skip
async def test_each_internal_topic_is_made_with_its_coordinators_configs(broker, name, wanted):
    """Kafka's ``groupMetadataTopicConfigs`` and ``TransactionStateManager.transactionTopicConfigs`` (the
    latter stores its records uncompressed and sets ``min.insync.replicas`` from
    ``transaction.state.log.min.isr``), each set on the topic itself."""
    await _metadata(broker, name)
    await _wait_created(broker, name)
    rows = {c.name: (c.value, c.config_source) for c in (await describe(broker, name)).configs}
    assert {k: rows[k] for k in wanted} == {k: (v, 1) for k, v in wanted.items()}  # 1: DYNAMIC_TOPIC_CONFIG
