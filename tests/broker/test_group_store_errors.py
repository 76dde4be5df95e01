"""A classic group's assignment that cannot be stored: the parked SyncGroups get the storage error, mapped as
Kafka maps it (``GroupMetadataManager.appendGroupMetadataErrorToResponseError``), then the group rebalances.

A real broker with a hand-driven clock (``_group_client``); the store fails as it really does: the log dir
of the group's ``__consumer_offsets`` partition goes offline, or the group's record is larger than the
topic's ``max.message.bytes``.
"""

from __future__ import annotations

import pytest
import trio

from broker.groups.group import PREPARING
from broker.groups.store import OFFSETS_TOPIC, coordinator_error
from protocol import ErrorCode

from ._group_client import groups_broker, join, join_new, start_join, sync  # noqa: F401  (fixtures)
from ._group_client import clock, group_props  # noqa: F401  (fixtures)


async def _two_members_completing(b) -> tuple:
    """A stable group of one member, then a second joins: generation 2, CompletingRebalance."""
    first = await join_new(b, "g")
    assert (await sync(b, "g", 1, first.member_id, {first.member_id: b"x"})).error_code == ErrorCode.NONE
    results: dict = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "second", join_new, b, "g")
        await trio.sleep(0.05)
        start_join(nursery, results, "first", join, b, "g", first.member_id)
    leader = results["first"] if results["first"].leader == results["first"].member_id else results["second"]
    follower = results["second"] if leader is results["first"] else results["first"]
    assert leader.generation_id == follower.generation_id == 2
    return leader, follower


async def _syncs(b, leader, follower, assignments) -> dict:
    results: dict = {}
    async with trio.open_nursery() as nursery:
        start_join(nursery, results, "follower", sync, b, "g", 2, follower.member_id)
        await trio.sleep(0.05)
        start_join(nursery, results, "leader", sync, b, "g", 2, leader.member_id, assignments)
    return {name: r.error_code for name, r in results.items()}


async def test_syncs_get_not_coordinator_when_the_offsets_log_dir_went_offline(groups_broker):
    """KAFKA_STORAGE_ERROR becomes NOT_COORDINATOR, for the leader and for the member that waited; it was
    REBALANCE_IN_PROGRESS. The group then prepares a rebalance with the assignments dropped."""
    b = groups_broker
    leader, follower = await _two_members_completing(b)
    partition = b.topics.partition(OFFSETS_TOPIC, b.groups.store.partition_of("g"))
    b.topics.manager.failures.fail_dir(partition.log.dir.parent, "injected")
    answers = await _syncs(b, leader, follower, {leader.member_id: b"a", follower.member_id: b"b"})
    assert answers == {"leader": ErrorCode.NOT_COORDINATOR, "follower": ErrorCode.NOT_COORDINATOR}
    group = b.groups.groups["g"]
    assert group.state == PREPARING
    assert [m.assignment for m in group.members.values()] == [b"", b""]


@pytest.mark.parametrize("group_props", [{"message.max.bytes": "4000"}])
async def test_syncs_get_unknown_server_error_when_the_group_record_is_too_large(groups_broker):
    """A group record over ``__consumer_offsets``' ``max.message.bytes`` is refused (Kafka's coordinator
    runtime checks the batch size: MESSAGE_TOO_LARGE), which SyncGroup answers UNKNOWN_SERVER_ERROR."""
    b = groups_broker
    leader, follower = await _two_members_completing(b)
    answers = await _syncs(b, leader, follower, {leader.member_id: b"a" * 5000, follower.member_id: b"b"})
    assert answers == {"leader": ErrorCode.UNKNOWN_SERVER_ERROR, "follower": ErrorCode.UNKNOWN_SERVER_ERROR}
    assert b.groups.groups["g"].state == PREPARING


@pytest.mark.parametrize(("append", "answer"), [
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
    (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    (ErrorCode.INVALID_FETCH_SIZE, ErrorCode.UNKNOWN_SERVER_ERROR),
    (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (None, None),
])  # fmt: skip
def test_coordinator_error_maps_append_errors_as_kafka(append, answer):
    assert coordinator_error(append) == answer
