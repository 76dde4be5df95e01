"""CreateTopics, DeleteTopics and CreatePartitions under the ACL authorizer, as Kafka's controller checks them.

CreateTopics: CREATE on the cluster or on each topic (TOPIC_AUTHORIZATION_FAILED
"Authorization failed." per topic), the configs of the answer only with
DESCRIBE_CONFIGS. DeleteTopics: DELETE on the cluster or the topic, DESCRIBE
deciding what a refusal reveals (unknown names hidden, names of ids hidden).
CreatePartitions: ALTER on each topic.
"""

from __future__ import annotations

import uuid

import pytest

from protocol import ErrorCode

from ._admin_client import call, creatable, req, sub
from ._authz import Op, Res, authz_broker, deny, grant, user  # noqa: F401  (authz_broker is a fixture)

TAF = ErrorCode.TOPIC_AUTHORIZATION_FAILED
ZERO_ID = uuid.UUID(int=0)


async def _create(broker, who, *topics, version=7, validate_only=False):
    body = req(19, topics=list(topics), timeout_ms=1000, validate_only=validate_only)
    resp = await call(broker, 19, version, body, connection=user(who))
    return {t.name: t for t in resp.topics}


async def create_ok(broker, name):
    """Create a topic as the super user; its result."""
    result = (await _create(broker, "admin", creatable(name)))[name]
    assert result.error_code == ErrorCode.NONE
    return result


async def test_create_topics_needs_create_on_the_topic_or_the_cluster(authz_broker):  # noqa: F811
    grant(authz_broker, "bob", Op.CREATE, Res.TOPIC, "mine")
    got = await _create(authz_broker, "bob", creatable("mine"), creatable("theirs"))
    assert got["mine"].error_code == ErrorCode.NONE
    assert (got["theirs"].error_code, got["theirs"].error_message) == (TAF, "Authorization failed.")
    assert authz_broker.topics.get("theirs") is None
    grant(authz_broker, "carol", Op.CREATE, Res.CLUSTER, "kafka-cluster")
    got = await _create(authz_broker, "carol", creatable("any"), creatable("other"))
    assert [t.error_code for t in got.values()] == [ErrorCode.NONE, ErrorCode.NONE]


async def test_create_topics_checks_duplicates_and_the_metadata_topic_before_acls(authz_broker):  # noqa: F811
    got = await _create(authz_broker, "bob", creatable("a"), creatable("a"), creatable("__cluster_metadata"))
    assert (got["a"].error_code, got["a"].error_message) == (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    assert (got["__cluster_metadata"].error_code, got["__cluster_metadata"].error_message) == (
        ErrorCode.INVALID_REQUEST, "Creation of internal topic __cluster_metadata is prohibited.")  # fmt: skip


async def test_create_topics_hides_configs_without_describe_configs(authz_broker):  # noqa: F811
    grant(authz_broker, "bob", Op.CREATE, Res.CLUSTER, "kafka-cluster")
    grant(authz_broker, "bob", Op.DESCRIBE_CONFIGS, Res.TOPIC, "seen")
    got = await _create(authz_broker, "bob", creatable("seen", 2), creatable("unseen", 2))
    seen, unseen = got["seen"], got["unseen"]
    assert (seen.error_code, seen.topic_config_error_code, seen.num_partitions) == (ErrorCode.NONE, ErrorCode.NONE, 2)
    assert seen.configs
    assert (unseen.error_code, unseen.topic_config_error_code) == (ErrorCode.NONE, TAF)
    assert (unseen.num_partitions, unseen.replication_factor, unseen.configs) == (-1, -1, [])
    assert unseen.topic_id != ZERO_ID and authz_broker.topics.get("unseen").num_partitions == 2


async def test_create_topics_alter_configs_implies_describe_configs_validate_only(authz_broker):  # noqa: F811
    grant(authz_broker, "bob", Op.CREATE, Res.TOPIC, "t")
    grant(authz_broker, "bob", Op.ALTER_CONFIGS, Res.TOPIC, "t")
    got = await _create(authz_broker, "bob", creatable("t"), creatable("u"), validate_only=True)
    assert (got["t"].error_code, got["t"].topic_config_error_code) == (ErrorCode.NONE, ErrorCode.NONE)
    assert got["t"].configs and got["u"].error_code == TAF
    assert authz_broker.topics.get("t") is None


async def test_create_topics_denied_topics_do_not_count_towards_the_partition_bound(authz_broker):  # noqa: F811
    grant(authz_broker, "bob", Op.CREATE, Res.TOPIC, "small")
    got = await _create(authz_broker, "bob", creatable("small", 1), creatable("huge", 20_000), version=4)
    assert (got["small"].error_code, got["huge"].error_code) == (ErrorCode.NONE, TAF)


async def test_create_topics_deny_wins_over_a_cluster_grant_only_per_topic(authz_broker):  # noqa: F811
    grant(authz_broker, "bob", Op.CREATE, Res.TOPIC, "*")
    deny(authz_broker, "bob", Op.CREATE, Res.TOPIC, "secret")
    got = await _create(authz_broker, "bob", creatable("open"), creatable("secret"))
    assert (got["open"].error_code, got["secret"].error_code) == (ErrorCode.NONE, TAF)


async def _delete_names(broker, who, *names, version=5):
    resp = await call(broker, 20, version, req(20, topic_names=list(names), timeout_ms=1000), connection=user(who))
    return {r.name: r for r in resp.responses}


async def _delete_ids(broker, who, *ids):
    T = sub(20, "DeleteTopicState")
    body = req(20, topics=[T(name=None, topic_id=i) for i in ids], timeout_ms=1000)
    return (await call(broker, 20, 6, body, connection=user(who))).responses


async def test_delete_topics_by_name(authz_broker):  # noqa: F811
    for name in ("gone", "kept", "seen"):
        await create_ok(authz_broker, name)
    grant(authz_broker, "bob", Op.DELETE, Res.TOPIC, "gone")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "seen")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "absent")
    got = await _delete_names(authz_broker, "bob", "gone", "kept", "seen", "absent", "hidden")
    assert {n: r.error_code for n, r in got.items()} == {
        "gone": ErrorCode.NONE, "kept": TAF, "seen": TAF,
        "absent": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # may describe it: its absence is no secret
        "hidden": TAF,  # may not: absent or not, the same answer
    }  # fmt: skip
    assert got["kept"].error_message == "Topic authorization failed."
    assert authz_broker.topics.get("gone") is None and authz_broker.topics.get("kept") is not None


async def test_delete_topics_with_delete_on_the_cluster(authz_broker):  # noqa: F811
    await create_ok(authz_broker, "t")
    grant(authz_broker, "bob", Op.DELETE, Res.CLUSTER, "kafka-cluster")
    got = await _delete_names(authz_broker, "bob", "t", "nope")
    assert (got["t"].error_code, got["nope"].error_code) == (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def test_delete_topics_by_id_hides_the_name_without_describe(authz_broker):  # noqa: F811
    ids = {name: (await create_ok(authz_broker, name)).topic_id for name in ("hidden", "seen", "gone")}
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "seen")
    grant(authz_broker, "bob", Op.DELETE, Res.TOPIC, "gone")
    unknown = uuid.uuid4()
    got = await _delete_ids(authz_broker, "bob", ids["hidden"], ids["seen"], ids["gone"], unknown)
    assert [(r.name, r.topic_id, r.error_code) for r in got] == [
        (None, ids["hidden"], TAF), ("seen", ids["seen"], TAF), ("gone", ids["gone"], ErrorCode.NONE),
        (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),  # an id is no secret: unknown is said as such
    ]  # fmt: skip


async def test_delete_topics_a_name_and_the_id_of_one_topic_clash_only_once_deletable(authz_broker):  # noqa: F811
    topic_id = (await create_ok(authz_broker, "t")).topic_id
    T = sub(20, "DeleteTopicState")
    body = req(20, topics=[T(name=None, topic_id=topic_id), T(name="t")], timeout_ms=1000)

    async def delete() -> list:
        resp = await call(authz_broker, 20, 6, body, connection=user("bob"))
        return [(r.name, r.topic_id, r.error_code) for r in resp.responses]

    assert await delete() == [(None, topic_id, TAF), ("t", ZERO_ID, TAF)]  # nothing said of the mapping
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "t")
    assert await delete() == [("t", topic_id, TAF), ("t", ZERO_ID, TAF)]
    grant(authz_broker, "bob", Op.DELETE, Res.TOPIC, "t")
    assert await delete() == [("t", topic_id, ErrorCode.INVALID_REQUEST)]
    assert authz_broker.topics.get("t") is not None


async def test_delete_topics_disabled_deletion_comes_before_acls(authz_broker, monkeypatch):  # noqa: F811
    await create_ok(authz_broker, "t")
    got = await _delete_names(authz_broker, "bob", "t", version=3)
    assert got["t"].error_code == TAF
    monkeypatch.setattr(authz_broker.config, "delete_topic_enable", False)
    got = await _delete_names(authz_broker, "bob", "t", version=3)
    assert got["t"].error_code == ErrorCode.TOPIC_DELETION_DISABLED


async def _grow(broker, who, **counts):
    T = sub(37, "CreatePartitionsTopic")
    body = req(37, topics=[T(name=n, count=c, assignments=None) for n, c in counts.items()], timeout_ms=1000,
               validate_only=False)  # fmt: skip
    resp = await call(broker, 37, 3, body, connection=user(who))
    return {r.name: (r.error_code, r.error_message) for r in resp.results}


async def test_create_partitions_needs_alter_on_each_topic(authz_broker):  # noqa: F811
    for name in ("mine", "theirs"):
        await create_ok(authz_broker, name)
    grant(authz_broker, "bob", Op.ALTER, Res.TOPIC, "mine")
    grant(authz_broker, "bob", Op.ALTER, Res.CLUSTER, "kafka-cluster")  # no stand-in for the topic's ALTER
    got = await _grow(authz_broker, "bob", mine=3, theirs=3, absent=3)
    assert got == {"mine": (ErrorCode.NONE, None), "theirs": (TAF, None), "absent": (TAF, None)}
    assert authz_broker.topics.get("mine").num_partitions == 3
    assert authz_broker.topics.get("theirs").num_partitions == 1


@pytest.mark.parametrize("who", ["admin", "bob"])
async def test_create_partitions_unknown_topic_with_alter(authz_broker, who):  # noqa: F811
    grant(authz_broker, "bob", Op.ALTER, Res.TOPIC, "absent")
    assert await _grow(authz_broker, who, absent=3) == {"absent": (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)}
