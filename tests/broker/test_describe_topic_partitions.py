"""DescribeTopicPartitions (KIP-966) as Kafka's handler and KRaftMetadataCache answer it, no authorizer.

Frames go through ``dispatch`` (``_admin_client.call``). Covered: the topic
entries and partition fields, all topics in name order, paging across calls
with a small limit (cut inside a topic, a limit used up exactly, a
``next_cursor`` on a topic that does not exist), the limit's clamping by
``max.request.partition.size.limit``, the cursor's edge cases (a topic not
named, a negative or too-large partition, a topic deleted since, Java's int
overflow), unknown and illegal names, the whole-request errors and their log
line, and ApiVersions.
"""

from __future__ import annotations

import logging
import uuid

import pytest

from broker.acl_model import SUPPORTED_OPERATIONS, ResourceType
from broker.config import BrokerConfig, ConfigError
from broker.core import Broker
from broker.handlers._admin import NO_OPERATIONS
from protocol import ErrorCode

from ._admin_client import BROKER, NODE, broker, call, create_ok, describe, req  # noqa: F401  (broker: a fixture)
from ._dtp_client import dtp, page, walk

ALL_TOPIC_OPS = sum(1 << op for op in SUPPORTED_OPERATIONS[ResourceType.TOPIC])
ZERO = uuid.UUID(int=0)
UNKNOWN, INVALID_TOPIC = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_TOPIC_EXCEPTION
INVALID, UNKNOWN_SERVER = ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_SERVER_ERROR
IRE = "org.apache.kafka.common.errors.InvalidRequestException: "
HANDLER_LOG = "broker.handlers.describe_topic_partitions"


@pytest.fixture
def capped_broker(tmp_path):
    props = {"node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "prometheus.port": "0",
             "max.request.partition.size.limit": "2"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    yield b
    b.close()


async def abc(broker) -> dict:
    """Topics a (3 partitions), b (2) and c (4); their ids."""
    return {name: (await create_ok(broker, name, n)).topic_id for name, n in (("a", 3), ("b", 2), ("c", 4))}


async def test_api_versions_advertises_v0(broker):
    resp = await call(broker, 18, 3, req(18, client_software_name="t", client_software_version="1"))
    assert [(k.min_version, k.max_version) for k in resp.api_keys if k.api_key == 75] == [(0, 0)]


async def test_a_topic_is_described_with_its_partitions_id_and_operations(broker):
    ids = await abc(broker)
    resp = await dtp(broker, ["a"])
    assert resp.next_cursor is None and resp.throttle_time_ms == 0
    [topic] = resp.topics
    assert (topic.error_code, topic.name, topic.topic_id, topic.is_internal) == (0, "a", ids["a"], False)
    assert topic.topic_authorized_operations == ALL_TOPIC_OPS
    assert [(p.error_code, p.partition_index, p.leader_id, p.leader_epoch, p.replica_nodes, p.isr_nodes,
             p.eligible_leader_replicas, p.last_known_elr, p.offline_replicas) for p in topic.partitions] == [
        (0, i, NODE, 0, [NODE], [NODE], [], [], []) for i in range(3)]  # fmt: skip  (ELR lists: [], never null)


async def test_no_names_means_every_topic_in_name_order_internal_ones_marked(broker):
    await abc(broker)
    await create_ok(broker, "B", 1)
    async with broker.topics.changes:
        await broker.topics.create("__consumer_offsets", 2, {})
    resp = await dtp(broker)
    assert [(t.name, t.is_internal, len(t.partitions)) for t in resp.topics] == [
        ("B", False, 1), ("__consumer_offsets", True, 2), ("a", False, 3), ("b", False, 2), ("c", False, 4)]
    assert resp.next_cursor is None


async def test_named_topics_come_once_each_in_name_order(broker):
    await abc(broker)
    assert page(await dtp(broker, ["c", "a", "c"])) == ([("a", 0, [0, 1, 2]), ("c", 0, [0, 1, 2, 3])], None)


async def test_paging_all_topics_with_a_small_limit_cuts_inside_topics(broker):
    await abc(broker)
    assert await walk(broker, limit=2) == [
        ([("a", 0, [0, 1])], ("a", 2)),
        ([("a", 0, [2]), ("b", 0, [0])], ("b", 1)),
        ([("b", 0, [1]), ("c", 0, [0])], ("c", 1)),
        ([("c", 0, [1, 2])], ("c", 3)),
        ([("c", 0, [3])], None),
    ]


async def test_a_limit_used_up_exactly_points_the_cursor_at_the_next_topic(broker):
    await abc(broker)
    assert await walk(broker, ["c", "a"], limit=3) == [
        ([("a", 0, [0, 1, 2])], ("c", 0)),
        ([("c", 0, [0, 1, 2])], ("c", 3)),
        ([("c", 0, [3])], None),
    ]


async def test_the_next_cursor_may_name_a_topic_that_does_not_exist(broker):
    await abc(broker)
    assert await walk(broker, ["a", "zz"], limit=3) == [
        ([("a", 0, [0, 1, 2])], ("zz", 0)),
        ([("zz", UNKNOWN, [])], None),
    ]


@pytest.mark.parametrize("limit", [0, -5, 1])
async def test_a_limit_below_one_counts_as_one(broker, limit):
    await abc(broker)
    assert page(await dtp(broker, ["a"], limit=limit)) == ([("a", 0, [0])], ("a", 1))


async def test_max_request_partition_size_limit_caps_what_the_client_asks(capped_broker):
    await abc(capped_broker)
    assert page(await dtp(capped_broker, ["b", "c"], limit=2000)) == ([("b", 0, [0, 1])], ("c", 0))


def test_max_request_partition_size_limit_is_kafkas_key_default_2000_at_least_1():
    assert BrokerConfig.from_props({}).max_request_partition_size_limit == 2000
    assert BrokerConfig.from_props({"max.request.partition.size.limit": "7"}).max_request_partition_size_limit == 7
    for bad in ("0", "-1", "many"):
        with pytest.raises(ConfigError, match="max.request.partition.size.limit"):
            BrokerConfig.from_props({"max.request.partition.size.limit": bad})


async def test_describe_configs_shows_the_key_read_only(broker):
    [entry] = (await describe(broker, str(NODE), keys=["max.request.partition.size.limit"], rtype=BROKER)).configs
    assert (entry.value, entry.read_only, entry.config_source) == ("2000", True, 5)


async def test_a_cursor_past_the_last_partition_gives_the_topic_without_partitions(broker):
    await abc(broker)
    assert page(await dtp(broker, limit=5, cursor=("a", 7))) == (
        [("a", 0, []), ("b", 0, [0, 1]), ("c", 0, [0, 1, 2])], ("c", 3))


async def test_topics_named_before_the_cursor_topic_are_left_out(broker):
    await abc(broker)
    assert page(await dtp(broker, ["a", "c", "b"], cursor=("b", 1))) == ([("b", 0, [1]), ("c", 0, [0, 1, 2, 3])], None)


async def _delete(broker, name: str) -> None:
    resp = await call(broker, 20, 5, req(20, topic_names=[name], timeout_ms=1000))
    assert [r.error_code for r in resp.responses] == [ErrorCode.NONE]


async def test_a_cursor_on_a_topic_deleted_since(broker):
    """Named: the topic is UNKNOWN_TOPIC_OR_PARTITION and the next one starts at 0; all topics: it is skipped."""
    await abc(broker)
    assert page(await dtp(broker, ["a", "b", "c"], limit=2)) == ([("a", 0, [0, 1])], ("a", 2))
    await _delete(broker, "a")
    assert page(await dtp(broker, ["a", "b", "c"], limit=2, cursor=("a", 2))) == (
        [("a", UNKNOWN, []), ("b", 0, [0, 1])], ("c", 0))
    assert page(await dtp(broker, limit=2, cursor=("a", 2))) == ([("b", 0, [0, 1])], ("c", 0))


async def test_java_int_overflow_of_a_huge_cursor_partition_is_kept(broker):
    """Kafka computes ``start + limit`` as a Java int: it wraps, no partitions come, the cursor goes negative."""
    await abc(broker)
    assert page(await dtp(broker, ["a"], cursor=("a", 2_147_483_000))) == ([("a", 0, [])], ("a", -2_147_482_296))


async def test_unknown_and_illegal_names_are_answered_in_java_string_order(broker):
    await abc(broker)
    resp = await dtp(broker, ["nope", "bad name!", "a", "\uffff", "\U00010000"])
    assert page(resp) == ([("a", 0, [0, 1, 2]), ("bad name!", INVALID_TOPIC, []), ("nope", UNKNOWN, []),
                           ("\U00010000", INVALID_TOPIC, []), ("\uffff", INVALID_TOPIC, [])], None)  # fmt: skip
    assert {(t.topic_id, t.topic_authorized_operations) for t in resp.topics[1:]} == {(ZERO, ALL_TOPIC_OPS)}
    assert [t.is_internal for t in (await dtp(broker, ["__transaction_state"])).topics] == [True]


@pytest.fixture
def errors(caplog):
    """The handler's ERROR log lines, whatever level an earlier test left the ``broker`` loggers at."""
    with caplog.at_level(logging.ERROR, logger=HANDLER_LOG):
        yield caplog


def _error_log(caplog) -> list[str]:
    return [r.getMessage().partition("): ")[2] for r in caplog.records
            if r.name == HANDLER_LOG and r.levelno == logging.ERROR]  # fmt: skip


async def test_a_cursor_topic_not_named_is_invalid_request_for_every_topic_asked(broker, errors):
    await abc(broker)
    resp = await dtp(broker, ["b", "a", "b"], cursor=("c", 0))
    assert page(resp) == ([("b", INVALID, []), ("a", INVALID, []), ("b", INVALID, [])], None)
    assert {(t.topic_id, t.is_internal, t.topic_authorized_operations) for t in resp.topics} == {
        (ZERO, False, NO_OPERATIONS)}
    assert _error_log(errors) == [IRE + "DescribeTopicPartitionsRequest topic list should contain the cursor topic: c"]


async def test_the_cursor_topic_check_comes_before_the_partition_check(broker, errors):
    await abc(broker)
    assert page(await dtp(broker, ["a"], cursor=("b", -1))) == ([("a", INVALID, [])], None)
    assert _error_log(errors) == [IRE + "DescribeTopicPartitionsRequest topic list should contain the cursor topic: b"]


@pytest.mark.parametrize("names", [["a"], []])
async def test_a_negative_cursor_partition_is_invalid_request(broker, errors, names):
    await abc(broker)
    assert page(await dtp(broker, names, cursor=("a", -1))) == ([(n, INVALID, []) for n in names], None)
    assert _error_log(errors) == [
        IRE + "DescribeTopicPartitionsRequest cursor partition must be valid: Cursor(topicName='a', partitionIndex=-1)"]


async def test_an_empty_name_without_a_cursor_fails_as_kafkas_null_pointer(broker, errors):
    """Kafka reads the missing cursor's partition for the topic "" (the cursor name it assumes): an NPE."""
    await abc(broker)
    assert page(await dtp(broker, ["a", ""])) == ([("a", UNKNOWN_SERVER, []), ("", UNKNOWN_SERVER, [])], None)
    assert _error_log(errors) == ["java.lang.NullPointerException"]
    assert page(await dtp(broker, ["a", ""], cursor=("", 0))) == ([("", INVALID_TOPIC, []), ("a", 0, [0, 1, 2])], None)
