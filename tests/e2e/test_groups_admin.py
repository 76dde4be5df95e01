"""Group offsets and group administration against a real broker process.

* committed offsets and metadata survive a broker SIGTERM and a SIGKILL, and
  the group is rebuilt from ``__consumer_offsets``;
* ListGroups / DescribeGroups / DeleteGroups through kafka-python's admin
  client, on an active group (NON_EMPTY_GROUP, commits from outside the
  generation refused) and on an empty one; the deletion survives a restart;
* session timeouts outside ``group.min/max.session.timeout.ms`` are refused.
"""

from __future__ import annotations

import time
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KPTopicPartition
    from kafka.errors import InvalidSessionTimeoutError, NoError, UnknownMemberIdError

from protocol import API_BY_KEY, ErrorCode, message_class

from .groups import GROUP_CONFIG, create_topic, kp_consumer, kp_poll, produce_keys, wait_assigned
from .test_bad_input import _connect, _roundtrip

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_committed_offsets_survive_a_broker_restart(broker_factory, stop):
    broker = broker_factory(offsets_topic_num_partitions="4", **GROUP_CONFIG)
    topic, group = "durable", "durable-members"
    create_topic(broker.bootstrap, topic, 2)
    placed = produce_keys(broker.bootstrap, topic, [(i % 2, f"d-{i:02d}") for i in range(30)])
    generation_before = _commit_in_a_group_and_outside_one(broker, group, topic)
    dirs = sorted(p.name for p in broker.data_dir.iterdir() if p.name.startswith("__consumer_offsets-"))
    assert dirs == [f"__consumer_offsets-{i}" for i in range(4)]
    if stop == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    broker.restart()
    _check_groups_reloaded(broker, topic)
    _resume_from_the_reloaded_offsets(broker, group, topic, placed, generation_before)


def _commit_in_a_group_and_outside_one(broker, group: str, topic: str) -> int:
    """A member of ``group`` reads everything and commits twice (p1 rewound); ``durable-simple`` commits from
    outside any generation (assign(), generation -1). Returns the group's generation."""
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    consumer = kp_consumer(broker.bootstrap, group, topic)
    try:
        assert len(kp_poll(consumer, 30)) == 30
        consumer.commit({tp0: OffsetAndMetadata(15, "all-of-p0", -1), tp1: OffsetAndMetadata(12, "first", -1)})
        consumer.commit({tp1: OffsetAndMetadata(9, "rewound-p1", -1)})  # the latest commit wins, not the highest
        generation = consumer.group_metadata().generation_id
        assert generation >= 1
    finally:
        consumer.close()
    simple = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id="durable-simple", enable_auto_commit=False)
    try:
        simple.assign([tp0])
        simple.commit({tp0: OffsetAndMetadata(7, "simple", -1)})
    finally:
        simple.close()
    return generation


def _check_groups_reloaded(broker, topic: str) -> None:
    """After the restart both groups are listed, the consumer group Empty, with their latest offsets."""
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        listed = {g["group_id"]: g for g in admin.list_groups()}
        assert listed["durable-members"]["protocol_type"] == "consumer"
        assert listed["durable-simple"]["protocol_type"] == ""
        described = admin.describe_groups(["durable-members"])["durable-members"]
        assert (described["error"], described["group_state"], described["protocol_type"], described["members"]) == (
            None, "Empty", "consumer", [])  # fmt: skip
        offsets = admin.list_group_offsets(["durable-members", "durable-simple"])
        assert {tp: (om.offset, om.metadata) for tp, om in offsets["durable-members"].items()} == {
            tp0: (15, "all-of-p0"), tp1: (9, "rewound-p1")}  # fmt: skip
        assert {tp: (om.offset, om.metadata) for tp, om in offsets["durable-simple"].items()} == {tp0: (7, "simple")}
    finally:
        admin.close()


def _resume_from_the_reloaded_offsets(broker, group: str, topic: str, placed: dict, generation_before: int) -> None:
    """A new member reads from the committed offsets, and the generation goes on from where it was."""
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    consumer = kp_consumer(broker.bootstrap, group)
    try:
        committed = [consumer.committed(tp, metadata=True, timeout_ms=15000) for tp in (tp0, tp1)]
        assert [(om.offset, om.metadata) for om in committed] == [(15, "all-of-p0"), (9, "rewound-p1")]
        consumer.subscribe([topic])
        got = kp_poll(consumer, 6)
        got += kp_poll(consumer, 1, timeout=0.5)  # and nothing more
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in placed.items() if p == 1 and o >= 9)
        assert consumer.committed(tp0) == 15
        assert consumer.group_metadata().generation_id > generation_before  # restored from the log, never back
    finally:
        consumer.close()


# ------------------------------------------------ ListGroups / DescribeGroups / DeleteGroups


def _raw_commit(broker, group: str, generation: int, member_id: str, topic: str, partition: int, offset: int) -> int:
    """OffsetCommit v8 on a socket of our own, as a member (or a zombie) would send it; the partition's error."""
    req = message_class(API_BY_KEY[8], True)
    part = req.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=partition, committed_offset=offset, committed_leader_epoch=-1, committed_metadata="raw")
    body = req(group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=None,
               topics=[req.OffsetCommitRequestTopic(name=topic, partitions=[part])])  # fmt: skip
    with _connect(broker) as s:
        _, resp = _roundtrip(s, 8, 8, body)
    return resp.topics[0].partitions[0].error_code


def test_admin_lists_describes_and_deletes_groups(broker_factory):
    broker = broker_factory(**GROUP_CONFIG)
    topic, group = "adm", "adm-members"
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    create_topic(broker.bootstrap, topic, 2)
    produce_keys(broker.bootstrap, topic, [(i % 2, f"a-{i:02d}") for i in range(10)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    consumer = kp_consumer(broker.bootstrap, group, topic, client_id="adm-client")
    closed = False
    try:
        got = wait_assigned(consumer, {tp0, tp1})
        got += kp_poll(consumer, 10 - len(got))
        assert sorted(o for _p, o, _k in got) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
        consumer.commit({tp0: OffsetAndMetadata(5, "m0", -1), tp1: OffsetAndMetadata(4, "m1", -1)})
        member = consumer.group_metadata()
        assert member.generation_id >= 1 and member.member_id
        _check_stable_group(admin, group, topic, member)
        _check_commits_into_an_active_group(broker, admin, group, topic, member)
        consumer.close()  # LeaveGroup: the group is empty, its offsets stay
        closed = True
        _check_empty_group_then_delete(admin, group, tp0)
    finally:
        if not closed:
            consumer.close()
        admin.close()
    _check_deletion_survives_a_restart(broker, group, topic, tp0)


def _states(admin: KafkaAdminClient) -> dict:
    """ListGroups: group id -> its state where the version reports one (v4+), else None."""
    return {g["group_id"]: g.get("group_state") for g in admin.list_groups()}


def _offsets(admin: KafkaAdminClient, group: str) -> dict:
    return {tp: (om.offset, om.metadata) for tp, om in admin.list_group_offsets(group)[group].items()}


def _check_stable_group(admin: KafkaAdminClient, group: str, topic: str, member) -> None:
    """ListGroups and DescribeGroups of a group with one consumer holding both partitions."""
    assert {g["group_id"]: g["protocol_type"] for g in admin.list_groups()}[group] == "consumer"
    assert _states(admin)[group] in ("Stable", None)
    d = admin.describe_groups([group])[group]
    assert (d["error"], d["group_state"], d["protocol_type"], d["protocol_data"]) == (
        None, "Stable", "consumer", "range")  # fmt: skip
    (m,) = d["members"]
    assert (m["member_id"], m["client_id"]) == (member.member_id, "adm-client")
    assert m["client_host"].endswith("127.0.0.1")
    assert m["member_metadata"]["topics"] == [topic]
    assert m["member_assignment"]["assigned_partitions"] == [{"topic": topic, "partitions": [0, 1]}]


def _check_commits_into_an_active_group(broker, admin: KafkaAdminClient, group: str, topic: str, member) -> None:
    """A group with members is not deleted, and takes commits only from a member at the current generation."""
    tp0, tp1 = KPTopicPartition(topic, 0), KPTopicPartition(topic, 1)
    assert admin.delete_groups([group]) == {group: "NonEmptyGroupError"}
    assert admin.alter_group_offsets(group, {tp0: OffsetAndMetadata(1, "admin", -1)}) == {
        tp0: UnknownMemberIdError}  # fmt: skip
    gen, mid = member.generation_id, member.member_id
    assert _raw_commit(broker, group, gen + 1, mid, topic, 0, 1) == ErrorCode.ILLEGAL_GENERATION
    assert _raw_commit(broker, group, gen, "stranger", topic, 0, 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert _offsets(admin, group) == {tp0: (5, "m0"), tp1: (4, "m1")}
    assert _raw_commit(broker, group, gen, mid, topic, 1, 3) == ErrorCode.NONE
    assert _offsets(admin, group) == {tp0: (5, "m0"), tp1: (3, "raw")}


def _check_empty_group_then_delete(admin: KafkaAdminClient, group: str, tp0: KPTopicPartition) -> None:
    """After the last member leaves, the group is Empty with its offsets; then it is deleted, and is Dead.
    A group that only holds offsets (committed from outside any generation), ``adm-keep``, is made too."""
    described = admin.describe_groups([group])[group]
    assert (described["error"], described["group_state"], described["protocol_type"], described["members"]) == (
        None, "Empty", "consumer", [])  # fmt: skip
    assert _states(admin)[group] in ("Empty", None)
    assert len(admin.list_group_offsets(group)[group]) == 2
    assert admin.alter_group_offsets("adm-keep", {tp0: OffsetAndMetadata(3, "kept", -1)}) == {tp0: NoError}
    assert admin.delete_groups([group]) == {group: "OK"}
    assert admin.delete_groups([group]) == {group: "GroupIdNotFoundError"}
    assert admin.delete_groups(["never-existed"]) == {"never-existed": "GroupIdNotFoundError"}
    assert group not in _states(admin)
    assert admin.list_group_offsets(group) == {group: {}}
    gone = admin.describe_groups([group])[group]
    assert (gone["group_state"], gone["members"]) == ("Dead", [])


def _check_deletion_survives_a_restart(broker, group: str, topic: str, tp0: KPTopicPartition) -> None:
    """The deletion is stored: after a restart the group stays gone, ``adm-keep`` keeps its offsets, and a
    new consumer of the deleted group starts by the reset policy, from offset 0."""
    assert broker.stop() == 0
    broker.restart()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        names = _states(admin)
        assert "adm-keep" in names and group not in names
        assert admin.list_group_offsets(group) == {group: {}}
        assert _offsets(admin, "adm-keep") == {tp0: (3, "kept")}
    finally:
        admin.close()
    fresh = kp_consumer(broker.bootstrap, group, topic)
    try:
        got = kp_poll(fresh, 10)
        assert sorted(o for _p, o, _k in got) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    finally:
        fresh.close()


def test_session_timeouts_outside_the_broker_bounds_are_refused(broker_factory):
    broker = broker_factory(group_max_session_timeout_ms="10000", **GROUP_CONFIG)
    create_topic(broker.bootstrap, "bounds", 1)
    for session, heartbeat in ((500, 100), (20000, 500)):  # below group.min / above group.max.session.timeout.ms
        consumer = kp_consumer(broker.bootstrap, f"bounds-{session}", "bounds", session_timeout_ms=session,
                                heartbeat_interval_ms=heartbeat)  # fmt: skip
        try:
            with pytest.raises(InvalidSessionTimeoutError):
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    consumer.poll(timeout_ms=200)
        finally:
            consumer.close()
    consumer = kp_consumer(broker.bootstrap, "bounds-ok", "bounds", session_timeout_ms=10000)
    try:  # the bounds themselves are accepted
        assert wait_assigned(consumer, {KPTopicPartition("bounds", 0)}) == []
    finally:
        consumer.close()
