"""The admin requests guarded by a cluster ACL, and CreateDelegationToken, under the ACL authorizer.

Each is refused as a whole with Kafka's answer: DescribeLogDirs (DESCRIBE),
AlterReplicaLogDirs (ALTER), ElectLeaders / Alter- and
ListPartitionReassignments (ALTER / DESCRIBE, the controller's
ClusterAuthorizationException message), Describe- and AlterClientQuotas
(DESCRIBE_CONFIGS / ALTER_CONFIGS), Describe- and AlterUserScramCredentials
(DESCRIBE / ALTER), ListConfigResources (DESCRIBE_CONFIGS). DescribeCluster
reports the principal's cluster operations.
"""

from __future__ import annotations

import pytest

from broker.acl_model import CLUSTER_NAME
from protocol import ErrorCode

from ._admin_client import NODE, call, fake_connection, req, sub
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker is a fixture)

CAF = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
CAF_MESSAGE = "Cluster authorization failed."
DENIED_REQUEST = "Request Request(processor=0, connectionId=127.0.0.1:50000, session=Session(User:bob,/127.0.0.1)"


def _allow(broker, op):
    grant(broker, "bob", op, Res.CLUSTER, CLUSTER_NAME)


@pytest.mark.parametrize("version", [0, 3, 4])
async def test_describe_log_dirs_needs_describe_on_the_cluster(authz_broker, version):  # noqa: F811
    body = req(35, topics=None)
    resp = await call(authz_broker, 35, version, body, connection=user("bob"))
    assert resp.results == [] and (version < 3 or resp.error_code == CAF)
    _allow(authz_broker, Op.DESCRIBE)
    resp = await call(authz_broker, 35, version, body, connection=user("bob"))
    assert len(resp.results) == 1 and (version < 3 or resp.error_code == ErrorCode.NONE)


async def test_alter_replica_log_dirs_needs_alter_on_the_cluster(authz_broker):  # noqa: F811
    Dir = sub(34, "AlterReplicaLogDir")
    T = Dir.AlterReplicaLogDirTopic
    body = req(34, dirs=[Dir(path="/a", topics=[T(name="t", partitions=[0, 1])]),
                         Dir(path="/b", topics=[T(name="t", partitions=[2])])])  # fmt: skip
    resp = await call(authz_broker, 34, 2, body, connection=user("bob"))
    assert [(r.topic_name, [(p.partition_index, p.error_code) for p in r.partitions]) for r in resp.results] == [
        ("t", [(0, CAF), (1, CAF)]), ("t", [(2, CAF)])]  # fmt: skip
    _allow(authz_broker, Op.ALTER)
    resp = await call(authz_broker, 34, 2, body, connection=user("bob"))
    assert {p.error_code for r in resp.results for p in r.partitions} == {ErrorCode.LOG_DIR_NOT_FOUND}


@pytest.mark.parametrize("version", [0, 1])
async def test_elect_leaders_needs_alter_on_the_cluster(authz_broker, version):  # noqa: F811
    T = sub(43, "TopicPartitions")
    body = req(43, election_type=5 if version else 0, topic_partitions=[T(topic="t", partitions=[0, 1])],
               timeout_ms=1000)  # fmt: skip
    resp = await call(authz_broker, 43, version, body, connection=user("bob"))
    parts = resp.replica_election_results[0].partition_result
    assert [(p.partition_id, p.error_code) for p in parts] == [(0, CAF), (1, CAF)]  # before the election type
    assert parts[0].error_message.startswith(DENIED_REQUEST) and parts[0].error_message.endswith("is not authorized.")
    assert version == 0 or resp.error_code == CAF
    body.topic_partitions = None
    resp = await call(authz_broker, 43, version, body, connection=user("bob"))
    assert resp.replica_election_results == []
    _allow(authz_broker, Op.ALTER)
    resp = await call(authz_broker, 43, 1, req(43, election_type=0, topic_partitions=None, timeout_ms=1000),
                      connection=user("bob"))  # fmt: skip
    assert resp.error_code == ErrorCode.NONE


async def test_alter_partition_reassignments_needs_alter_on_the_cluster(authz_broker):  # noqa: F811
    T = sub(45, "ReassignableTopic")
    body = req(45, topics=[T(name="t", partitions=[T.ReassignablePartition(partition_index=0, replicas=[NODE])])],
               timeout_ms=1000, allow_replication_factor_change=False)  # fmt: skip
    resp = await call(authz_broker, 45, 1, body, connection=user("bob"))
    assert (resp.error_code, resp.allow_replication_factor_change) == (CAF, True)
    assert resp.error_message.startswith(DENIED_REQUEST)
    part = resp.responses[0].partitions[0]
    assert (resp.responses[0].name, part.partition_index, part.error_code, part.error_message) == (
        "t", 0, CAF, resp.error_message)  # fmt: skip
    _allow(authz_broker, Op.ALTER)
    resp = await call(authz_broker, 45, 1, body, connection=user("bob"))
    assert resp.error_code == ErrorCode.NONE
    assert resp.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_list_partition_reassignments_needs_describe_on_the_cluster(authz_broker):  # noqa: F811
    T = sub(46, "ListPartitionReassignmentsTopics")
    body = req(46, topics=[T(name="t", partition_indexes=[0, 2])], timeout_ms=1000)
    resp = await call(authz_broker, 46, 0, body, connection=user("bob"))
    assert resp.error_code == CAF and resp.error_message.startswith(DENIED_REQUEST)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics] == [("t", [0, 2])]
    grant(authz_broker, "bob", Op.ALTER, Res.CLUSTER, CLUSTER_NAME)  # ALTER implies DESCRIBE
    resp = await call(authz_broker, 46, 0, body, connection=user("bob"))
    assert (resp.error_code, resp.topics) == (ErrorCode.NONE, [])


async def test_describe_client_quotas_needs_describe_configs_on_the_cluster(authz_broker):  # noqa: F811
    bad_filter = [sub(48, "ComponentData")(entity_type="", match_type=0, match="x")]
    resp = await call(authz_broker, 48, 1, req(48, components=bad_filter, strict=False), connection=user("bob"))
    assert (resp.error_code, resp.error_message, resp.entries) == (CAF, CAF_MESSAGE, None)  # before the filter
    _allow(authz_broker, Op.DESCRIBE_CONFIGS)
    resp = await call(authz_broker, 48, 1, req(48, components=[], strict=False), connection=user("bob"))
    assert (resp.error_code, resp.entries) == (ErrorCode.NONE, [])


async def test_alter_client_quotas_needs_alter_configs_on_the_cluster(authz_broker):  # noqa: F811
    Entry = sub(49, "EntryData")
    entry = Entry(entity=[Entry.EntityData(entity_type="user", entity_name="alice")],
                  ops=[Entry.OpData(key="producer_byte_rate", value=1024.0, remove=False)])  # fmt: skip
    resp = await call(authz_broker, 49, 1, req(49, entries=[entry], validate_only=False), connection=user("bob"))
    answer = resp.entries[0]
    assert (answer.error_code, answer.error_message) == (CAF, CAF_MESSAGE)
    assert [(e.entity_type, e.entity_name) for e in answer.entity] == [("user", "alice")]
    assert authz_broker.quotas.quotas == {}
    _allow(authz_broker, Op.ALTER_CONFIGS)
    resp = await call(authz_broker, 49, 1, req(49, entries=[entry], validate_only=False), connection=user("bob"))
    assert resp.entries[0].error_code == ErrorCode.NONE and authz_broker.quotas.quotas


async def test_describe_user_scram_credentials_needs_describe_on_the_cluster(authz_broker):  # noqa: F811
    User = sub(50, "UserName")
    resp = await call(authz_broker, 50, 0, req(50, users=[User(name="a"), User(name="b")]), connection=user("bob"))
    assert (resp.error_code, resp.error_message) == (CAF, CAF_MESSAGE)
    assert [(r.user, r.error_code, r.error_message) for r in resp.results] == [("", CAF, CAF_MESSAGE)] * 2
    resp = await call(authz_broker, 50, 0, req(50, users=None), connection=user("bob"))
    assert (resp.error_code, resp.results) == (CAF, [])
    _allow(authz_broker, Op.DESCRIBE)
    resp = await call(authz_broker, 50, 0, req(50, users=None), connection=user("bob"))
    assert (resp.error_code, resp.results) == (ErrorCode.NONE, [])


async def test_alter_user_scram_credentials_needs_alter_on_the_cluster(authz_broker):  # noqa: F811
    Del = sub(51, "ScramCredentialDeletion")
    Up = sub(51, "ScramCredentialUpsertion")
    body = req(51, deletions=[Del(name="zed", mechanism=1)], upsertions=[
        Up(name="amy", mechanism=1, iterations=4096, salt=b"s", salted_password=b"p" * 32),
        Up(name="zed", mechanism=2, iterations=4096, salt=b"s", salted_password=b"p" * 64)])  # fmt: skip
    resp = await call(authz_broker, 51, 0, body, connection=user("bob"))
    assert [(r.user, r.error_code) for r in resp.results] == [("amy", CAF), ("zed", CAF)]
    assert resp.results[0].error_message.startswith(DENIED_REQUEST)
    assert authz_broker.scram.users() == []
    _allow(authz_broker, Op.ALTER)
    body.deletions = []
    body.upsertions = body.upsertions[:1]
    resp = await call(authz_broker, 51, 0, body, connection=user("bob"))
    assert [(r.user, r.error_code) for r in resp.results] == [("amy", ErrorCode.NONE)]


async def test_list_config_resources_needs_describe_configs_on_the_cluster(authz_broker):  # noqa: F811
    for version in (0, 1):
        resp = await call(authz_broker, 74, version, req(74, resource_types=[]), connection=user("bob"))
        assert (resp.error_code, resp.config_resources) == (CAF, [])
    _allow(authz_broker, Op.DESCRIBE_CONFIGS)
    resp = await call(authz_broker, 74, 1, req(74, resource_types=[4]), connection=user("bob"))
    assert resp.error_code == ErrorCode.NONE and [r.resource_name for r in resp.config_resources] == [str(NODE)]


async def test_describe_cluster_reports_the_principals_cluster_operations(authz_broker):  # noqa: F811
    async def operations(who, include=True):
        body = req(60, include_cluster_authorized_operations=include, endpoint_type=1)
        resp = await call(authz_broker, 60, 1, body, connection=user(who))
        assert resp.error_code == ErrorCode.NONE and len(resp.brokers) == 1
        return resp.cluster_authorized_operations

    assert await operations("bob") == 0
    assert await operations("bob", include=False) == -(2**31)
    _allow(authz_broker, Op.ALTER_CONFIGS)
    assert await operations("bob") == 0  # may not DESCRIBE the cluster: nothing is reported
    _allow(authz_broker, Op.DESCRIBE)
    assert await operations("bob") == (1 << Op.DESCRIBE) | (1 << Op.DESCRIBE_CONFIGS) | (1 << Op.ALTER_CONFIGS)
    assert await operations("admin") == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def _sasl_user(name):
    return fake_connection(principal=f"User:{name}", peer="127.0.0.1:50000", security_protocol="SASL_PLAINTEXT")


async def _create_token(broker, who, owner=None, renewer_type="User"):
    Renewer = sub(38, "CreatableRenewers")
    body = req(38, owner_principal_type="User" if owner else None, owner_principal_name=owner,
               renewers=[Renewer(principal_type=renewer_type, principal_name="r")], max_lifetime_ms=-1)  # fmt: skip
    return await call(broker, 38, 3, body, connection=_sasl_user(who))


async def test_create_delegation_token_for_another_owner_needs_create_tokens(authz_broker):  # noqa: F811
    resp = await _create_token(authz_broker, "bob", owner="alice")
    assert resp.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    assert (resp.principal_name, resp.token_requester_principal_name) == ("alice", "bob")
    disabled = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    assert (await _create_token(authz_broker, "bob", owner="bob")).error_code == disabled  # its own: no ACL needed
    grant(authz_broker, "bob", Op.CREATE_TOKENS, Res.USER, "User:alice")
    assert (await _create_token(authz_broker, "bob", owner="alice")).error_code == disabled
    assert (await _create_token(authz_broker, "bob", owner="alice", renewer_type="Group")).error_code == (
        ErrorCode.INVALID_PRINCIPAL_TYPE)  # fmt: skip
    resp = await _create_token(authz_broker, "carol", owner="alice", renewer_type="Group")
    assert resp.error_code == ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED  # the ACL comes before the renewers
    body = req(38, owner_principal_type="User", owner_principal_name="alice", renewers=[], max_lifetime_ms=-1)
    resp = await call(authz_broker, 38, 3, body, connection=user("carol"))  # PLAINTEXT: refused before the ACL
    assert resp.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
