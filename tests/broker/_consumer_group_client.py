"""KIP-848 requests for the handler tests: ConsumerGroupHeartbeat and ConsumerGroupDescribe through ``dispatch``.

Used with ``_group_client.groups_broker`` (a real broker with a hand-driven
clock). ``make_topic`` creates a topic and returns its id; ``heartbeat``
sends one ConsumerGroupHeartbeat (a join by default: epoch 0, subscribed to
``t``, rebalance timeout 30 s, no owned partitions) and returns the decoded
answer; ``owned`` turns an answer's assignment into the owned partitions of
the next heartbeat; ``parts`` reads an assignment as {topic id: [partitions]};
``describe`` sends ConsumerGroupDescribe.
"""

from __future__ import annotations

from ._admin_client import call, creatable, req, sub

JOIN = object()  # the default: every field a joining member sends


async def make_topic(broker, name: str, partitions: int, connection=None):
    resp = await call(broker, 19, 7, req(19, topics=[creatable(name, partitions)], timeout_ms=1000),
                      connection=connection)  # fmt: skip
    assert resp.topics[0].error_code == 0, resp
    return resp.topics[0].topic_id


async def ready(broker) -> None:
    """Create ``__consumer_offsets`` (a heartbeat before it exists is COORDINATOR_NOT_AVAILABLE)."""
    await broker.groups.store.ready()


def owned(assignment) -> list:
    """The owned partitions to send after an answer carrying ``assignment``."""
    cls = sub(68, "TopicPartitions")
    return [cls(topic_id=t.topic_id, partitions=list(t.partitions)) for t in assignment.topic_partitions]


def parts(assignment) -> dict:
    return {t.topic_id: sorted(t.partitions) for t in assignment.topic_partitions} if assignment else None


async def heartbeat(broker, member_id: str = "", epoch: int = 0, group: str = "cg", topics=JOIN, regex=None,
                    rebalance=JOIN, owned_partitions=JOIN, version: int = 1, instance=None, assignor=None,
                    rack=None, connection=None):  # fmt: skip
    joining = epoch == 0
    body = req(
        68, group_id=group, member_id=member_id, member_epoch=epoch, instance_id=instance, rack_id=rack,
        rebalance_timeout_ms=(30_000 if joining else -1) if rebalance is JOIN else rebalance,
        subscribed_topic_names=(["t"] if joining else None) if topics is JOIN else topics,
        subscribed_topic_regex=regex, server_assignor=assignor,
        topic_partitions=([] if joining else None) if owned_partitions is JOIN else owned_partitions,
    )  # fmt: skip
    return await call(broker, 68, version, body, connection=connection)


async def describe(broker, *groups: str, version: int = 1, operations: bool = False, connection=None):
    body = req(69, group_ids=list(groups), include_authorized_operations=operations)
    return (await call(broker, 69, version, body, connection=connection)).groups
