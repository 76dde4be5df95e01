"""DescribeQuorum: this node as the leader and only voter of a one-node KRaft quorum, as Kafka answers.

Every version field by field; the leader epoch (one more at each start) and
the high watermark (one more per metadata change, never less, kept across
restarts) in ``__quorum_state.json``; v2's ``nodes`` from the controller
settings; the partition checks and the CLUSTER authorization, each with
Kafka's codes and messages.
"""

from __future__ import annotations

import json
import logging
import socket
import uuid

import pytest

from broker.acl_model import AclOperation
from broker.config import BrokerConfig
from broker.core import Broker
from broker.dispatch import REGISTRY
from broker.metadata_quorum import FILE_NAME
from protocol import ErrorCode
from storage import StorageError

from ._admin_client import NODE, broker, call, create_ok, creatable, now_ms, req, sub  # noqa: F401
from ._authz import Res, authz_broker, grant, user  # noqa: F401  (broker, authz_broker are fixtures)

Topic = sub(55, "TopicData")
ZERO_UUID = uuid.UUID(int=0)
NOT_HOSTED = "This server does not host this topic-partition."
TOPIC, BROKER, GROUP, SET = 2, 4, 32, 0


def _topic(name: str, *partitions: int):
    return Topic(topic_name=name, partitions=[Topic.PartitionData(partition_index=p) for p in partitions])


async def _describe(broker, version: int = 2, topics=None, connection=None):  # noqa: F811
    topics = [_topic("__cluster_metadata", 0)] if topics is None else topics
    return await call(broker, 55, version, req(55, topics=topics), connection=connection)


async def _epoch_and_hw(broker, connection=None) -> tuple[int, int]:  # noqa: F811
    resp = await _describe(broker, connection=connection)
    assert resp.error_code == ErrorCode.NONE
    partition = resp.topics[0].partitions[0]
    assert partition.current_voters[0].log_end_offset == partition.high_watermark
    return partition.leader_epoch, partition.high_watermark


def _open(tmp_path, **props: str) -> Broker:
    base = {"node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "prometheus.port": "0"}
    return Broker.open(BrokerConfig.from_props({**base, **props}))


@pytest.mark.parametrize("version", range(3))
async def test_the_node_leads_a_quorum_of_itself_field_by_field(broker, version):  # noqa: F811
    before = now_ms()
    resp = await _describe(broker, version)
    after = now_ms()
    assert (resp.error_code, resp.error_message) == (ErrorCode.NONE, "")  # Kafka's default: "", not null
    (topic,) = resp.topics
    (partition,) = topic.partitions
    assert (topic.topic_name, partition.partition_index, partition.error_code) == ("__cluster_metadata", 0, 0)
    assert partition.error_message == ""
    assert (partition.leader_id, partition.leader_epoch) == (NODE, 1)  # a new log dir: the first election
    assert partition.high_watermark == broker.quorum.high_watermark >= 1
    assert partition.observers == []
    (voter,) = partition.current_voters
    assert (voter.replica_id, voter.log_end_offset) == (NODE, partition.high_watermark)
    assert voter.replica_directory_id == ZERO_UUID  # also in v2: a static quorum's voters have none
    if version >= 1:  # the leader reports itself fetched and caught up now
        assert before <= voter.last_fetch_timestamp == voter.last_caught_up_timestamp <= after
    else:  # not on the wire
        assert voter.last_fetch_timestamp == voter.last_caught_up_timestamp == -1
    if version >= 2:  # no controller.listener.names: the node, with no listener
        assert [(n.node_id, n.listeners) for n in resp.nodes] == [(NODE, [])]
    else:
        assert resp.nodes == []


async def test_answers_agree_from_call_to_call(broker):  # noqa: F811
    first, second = await _describe(broker), await _describe(broker)
    for resp in (first, second):
        for voter in resp.topics[0].partitions[0].current_voters:
            voter.last_fetch_timestamp = voter.last_caught_up_timestamp = 0
    assert first == second


@pytest.mark.parametrize(
    ("props", "endpoints"),
    [
        ({"controller.quorum.voters": f"{NODE}@ctl.example:29093"}, [("CONTROLLER", "ctl.example", 29093)]),
        ({"controller.quorum.voters": f"1@other:1,{NODE}@[::1]:29093"}, [("CONTROLLER", "::1", 29093)]),
        ({"controller.quorum.voters": "1@other:29093"}, [("CONTROLLER", "ctl.listener", 9093)]),
        ({}, [("CONTROLLER", "ctl.listener", 9093)]),
    ],
    ids=["static-voter", "ipv6-among-others", "no-entry-for-this-node", "no-voters"],
)
async def test_v2_nodes_list_the_controller_endpoints(tmp_path, props, endpoints):
    listeners = {"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://ctl.listener:9093",
                 "controller.listener.names": "CONTROLLER",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}  # fmt: skip
    b = _open(tmp_path, **listeners, **props)
    try:
        (node,) = (await _describe(b)).nodes
        assert node.node_id == NODE
        assert [(lst.name, lst.host, lst.port) for lst in node.listeners] == endpoints
    finally:
        b.close()


async def test_a_wildcard_controller_listener_is_reported_under_the_host_name(tmp_path):
    b = _open(tmp_path, listeners="PLAINTEXT://127.0.0.1:0,CONTROLLER://:9093", **{
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"})  # fmt: skip
    try:
        (node,) = (await _describe(b)).nodes
        assert [(lst.name, lst.host, lst.port) for lst in node.listeners] == [("CONTROLLER", socket.getfqdn(), 9093)]
    finally:
        b.close()


# -- the high watermark: one record per metadata change -------------------------------------------------


def _alter(rtype: int, name: str, key: str, value: str, validate_only: bool = False):
    Resource = sub(44, "AlterConfigsResource")
    op = Resource.AlterableConfig(name=key, config_operation=SET, value=value)
    return 44, req(44, resources=[Resource(resource_type=rtype, resource_name=name, configs=[op])],
                   validate_only=validate_only)  # fmt: skip


def _grow(name: str, count: int):
    topic = sub(37, "CreatePartitionsTopic")(name=name, count=count, assignments=None)
    return 37, req(37, topics=[topic], timeout_ms=1000)


def _quota():
    Entry = sub(49, "EntryData")
    entry = Entry(entity=[Entry.EntityData(entity_type="user", entity_name="alice")],
                  ops=[Entry.OpData(key="producer_byte_rate", value=1024.0, remove=False)])  # fmt: skip
    return 49, req(49, entries=[entry], validate_only=False)


def _scram():
    Up = sub(51, "ScramCredentialUpsertion")
    return 51, req(51, deletions=[], upsertions=[Up(name="amy", mechanism=1, iterations=4096, salt=b"s",
                                                    salted_password=b"p" * 32)])  # fmt: skip


CHANGES = [  # each stored: one record more
    ("CreateTopics", lambda: (19, req(19, topics=[creatable("t", 1)], timeout_ms=1000))),
    ("CreatePartitions", lambda: _grow("t", 3)),
    ("topic config", lambda: _alter(TOPIC, "t", "retention.ms", "1000")),
    ("broker config", lambda: _alter(BROKER, str(NODE), "log.cleaner.threads", "2")),
    ("cluster default config", lambda: _alter(BROKER, "", "log.retention.ms", "7200000")),
    ("group config", lambda: _alter(GROUP, "g", "consumer.session.timeout.ms", "50000")),
    ("client quota", _quota),
    ("SCRAM credential", _scram),
    ("DeleteTopics", lambda: (20, req(20, topics=[sub(20, "DeleteTopicState")(name="t")], timeout_ms=1000))),
]
READS = [  # nothing stored: the same high watermark
    ("validate-only CreateTopics", lambda: (19, req(19, topics=[creatable("v", 1)], timeout_ms=1, validate_only=True))),
    ("CreateTopics of a topic that exists", lambda: (19, req(19, topics=[creatable("keep", 1)], timeout_ms=1))),
    ("validate-only config", lambda: _alter(TOPIC, "keep", "retention.ms", "1000", validate_only=True)),
    ("refused config", lambda: _alter(TOPIC, "keep", "retention.ms", "soon")),
    ("Metadata", lambda: (3, req(3, topics=None))),
]


async def test_each_metadata_change_appends_one_record_and_reads_none(broker):  # noqa: F811
    await create_ok(broker, "keep")
    _epoch, hw = await _epoch_and_hw(broker)
    for name, make in CHANGES:
        await _send(broker, make)
        assert await _epoch_and_hw(broker) == (1, hw + 1), name
        hw += 1
    assert broker.topics.get("t") is None and broker.scram.users() == ["amy"]  # every change was made
    assert broker.group_configs.current("g") and broker.quotas.quotas and broker.dynamic_config.levels[str(NODE)]
    for name, make in READS:
        await _send(broker, make)
        assert await _epoch_and_hw(broker) == (1, hw), name


async def _send(broker, make) -> None:  # noqa: F811
    key, body = make()
    await call(broker, key, REGISTRY[key].max_version, body)


async def test_the_high_watermark_never_drops_and_the_epoch_grows_at_each_start(tmp_path):
    b = _open(tmp_path)
    try:
        assert await _epoch_and_hw(b) == (1, 1)
        await create_ok(b, "a", 2)
        epoch, hw = await _epoch_and_hw(b)
        assert (epoch, hw) == (1, 2)
    finally:
        b.close()
    b = _open(tmp_path)
    try:  # an election: the epoch and its leader-change record
        assert await _epoch_and_hw(b) == (2, 3)
        assert json.loads((tmp_path / "data" / FILE_NAME).read_text()) == {
            "version": 0, "leader_epoch": 2, "end_offset": 3}  # fmt: skip
    finally:
        b.close()


@pytest.mark.parametrize("text", ["{", "[]", '{"leader_epoch": 1}', '{"leader_epoch": -1, "end_offset": 4}',
                                  '{"leader_epoch": "1", "end_offset": 4}', '{"leader_epoch": 1, "end_offset": true}'])
def test_a_damaged_state_file_stops_the_start(tmp_path, text):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / FILE_NAME).write_text(text)
    with pytest.raises(StorageError, match=f"{FILE_NAME} is damaged"):
        _open(tmp_path)


async def test_a_state_file_that_cannot_be_written_is_logged_and_the_count_goes_on(broker, caplog):  # noqa: F811
    _epoch, hw = await _epoch_and_hw(broker)
    blocker = broker.quorum.path.with_name(FILE_NAME + ".tmp")  # the atomic write's temporary file
    blocker.mkdir()
    with caplog.at_level(logging.ERROR, "broker.metadata_quorum"):
        await create_ok(broker, "t")
    assert "could not save the metadata quorum state" in caplog.text
    assert await _epoch_and_hw(broker) == (1, hw + 1)
    blocker.rmdir()
    await create_ok(broker, "u")
    assert json.loads(broker.quorum.path.read_text())["end_offset"] == hw + 2


# -- errors -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "topics",
    [
        [_topic("t", 0)],
        [_topic("__cluster_metadata", 1)],
        [_topic("__cluster_metadata", -1)],
        [_topic("__cluster_metadata", 0, 0)],
        [_topic("__cluster_metadata", 0, 1)],
        [_topic("__cluster_metadata")],
        [_topic("__cluster_metadata", 0), _topic("__cluster_metadata", 0)],
        [_topic("__cluster_metadata", 0), _topic("x", 2, 5)],
        [],
    ],
    ids=["other-topic", "partition-1", "partition-minus-1", "partition-0-twice", "two-partitions", "no-partition",
         "topic-twice", "two-topics", "no-topic"],
)
@pytest.mark.parametrize("version", range(3))
async def test_anything_but_the_one_metadata_partition_is_not_hosted(broker, version, topics):  # noqa: F811
    resp = await _describe(broker, version, topics)
    assert (resp.error_code, resp.error_message, resp.nodes) == (ErrorCode.NONE, "", [])
    message = NOT_HOSTED if version >= 2 else ""  # v0-1 have no message
    expected = [(t.topic_name, [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, message, 0, 0, 0, [], [])
                                for p in t.partitions]) for t in topics]  # fmt: skip
    got = [(t.topic_name, [(p.partition_index, p.error_code, p.error_message, p.leader_id, p.leader_epoch,
                            p.high_watermark, p.current_voters, p.observers) for p in t.partitions])
           for t in resp.topics]  # fmt: skip
    assert got == expected


@pytest.mark.parametrize("version", range(3))
async def test_describe_on_the_cluster_is_required_before_the_partition_is_checked(authz_broker, version):  # noqa: F811
    for topics in (None, [_topic("t", 0)]):
        resp = await _describe(authz_broker, version, topics, connection=user("bob"))
        assert (resp.error_code, resp.topics, resp.nodes) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [], [])
        assert resp.error_message == ("Cluster authorization failed." if version >= 2 else "")


@pytest.mark.parametrize("operation", [AclOperation.DESCRIBE, AclOperation.ALTER], ids=["DESCRIBE", "ALTER"])
async def test_describe_on_the_cluster_lets_the_request_through(authz_broker, operation):  # noqa: F811
    grant(authz_broker, "bob", operation, Res.CLUSTER, "kafka-cluster")
    resp = await _describe(authz_broker, connection=user("bob"))
    assert resp.error_code == ErrorCode.NONE and resp.topics[0].partitions[0].leader_id == NODE
    resp = await _describe(authz_broker, connection=user("admin"))  # a super user
    assert resp.error_code == ErrorCode.NONE


async def test_acl_changes_are_metadata_changes(authz_broker):  # noqa: F811
    _epoch, hw = await _epoch_and_hw(authz_broker, user("admin"))
    grant_body = req(30, creations=[sub(30, "AclCreation")(
        resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:bob", host="*",
        operation=3, permission_type=3)])  # fmt: skip
    resp = await call(authz_broker, 30, 3, grant_body, connection=user("admin"))
    assert resp.results[0].error_code == ErrorCode.NONE
    assert (await _epoch_and_hw(authz_broker, user("admin")))[1] == hw + 1
    # the same binding again, or none valid: nothing to keep, no record (Kafka's AclControlManager.createAcls)
    bad_body = req(30, creations=[sub(30, "AclCreation")(
        resource_type=2, resource_name="", resource_pattern_type=3, principal="User:bob", host="*",
        operation=3, permission_type=3)])  # fmt: skip
    for body, code in ((grant_body, ErrorCode.NONE), (bad_body, ErrorCode.INVALID_REQUEST)):
        resp = await call(authz_broker, 30, 3, body, connection=user("admin"))
        assert resp.results[0].error_code == code
        assert (await _epoch_and_hw(authz_broker, user("admin")))[1] == hw + 1


async def _features_epoch(broker) -> int:  # noqa: F811
    body = req(18, client_software_name="pytest", client_software_version="1.0")
    resp = await call(broker, 18, 3, body)
    assert resp.error_code == ErrorCode.NONE
    return resp.finalized_features_epoch


async def test_the_finalized_features_epoch_is_the_last_metadata_offset(broker):  # noqa: F811
    """KRaft Kafka's FinalizedFeatures epoch is its metadata image's offset: the last record's."""
    _, hw = await _epoch_and_hw(broker)
    assert await _features_epoch(broker) == hw - 1
    await create_ok(broker, "feature-epoch")
    _, grown = await _epoch_and_hw(broker)
    assert grown == hw + 1 and await _features_epoch(broker) == grown - 1


SAME_AGAIN = [  # (the change, records its repetition appends): Kafka writes a record only for a value that
    # changes (ConfigurationControlManager, ClientQuotaControlManager), but always for a broker's configs
    # (KAFKA-14136)
    ("topic config", lambda: _alter(TOPIC, "keep", "retention.ms", "1000"), 0),
    ("group config", lambda: _alter(GROUP, "g", "consumer.session.timeout.ms", "50000"), 0),
    ("client quota", _quota, 0),
    ("broker config", lambda: _alter(BROKER, str(NODE), "log.cleaner.threads", "2"), 1),
    ("cluster default config", lambda: _alter(BROKER, "", "log.retention.ms", "7200000"), 1),
]


@pytest.mark.parametrize("name, make, again", SAME_AGAIN, ids=[s[0] for s in SAME_AGAIN])
async def test_a_change_to_the_value_it_already_has_appends_no_record(broker, name, make, again):  # noqa: F811
    await create_ok(broker, "keep")
    await _send(broker, make)
    _epoch, hw = await _epoch_and_hw(broker)
    await _send(broker, make)
    assert await _epoch_and_hw(broker) == (1, hw + again)
