"""DescribeAcls, CreateAcls and DeleteAcls on a broker with the ACL authorizer (Kafka's ``AclApis``).

Admin (a super user) creates, lists and removes bindings through the
requests; a user without DESCRIBE (DescribeAcls) or ALTER (Create, Delete) on
the cluster is refused with CLUSTER_AUTHORIZATION_FAILED; bindings Kafka
refuses get INVALID_REQUEST and Kafka's message while the rest are made; v0
answers leave PREFIXED bindings out; the bindings outlive a restart. A
change the disk refuses to save (``storage.fileops``, the fault seam) is
KAFKA_STORAGE_ERROR and changes nothing; one in doubt is not answered.
"""

from __future__ import annotations

import pytest

from broker.acl_model import AclOperation as Op
from broker.acl_model import ResourceType as Res
from broker.config import BrokerConfig
from broker.core import Broker
from broker.dispatch import CloseConnection
from protocol import ErrorCode
from storage import fileops

from ._admin_client import call, req, sub
from ._authz import authz_broker, grant, user  # noqa: F401  (authz_broker is a fixture)
from .test_store_saves_off_loop import directory_fsync_fails_once, full_disk

TOPIC, GROUP, CLUSTER, LITERAL, PREFIXED, ANY, MATCH = 2, 3, 4, 3, 4, 1, 2
READ, WRITE, ALTER, DESCRIBE, DENY, ALLOW = 3, 4, 7, 8, 2, 3
ADMIN = user("admin")


def creation(name="orders", rtype=TOPIC, pattern=LITERAL, principal="User:bob", host="*", op=READ, perm=ALLOW):
    return sub(30, "AclCreation")(resource_type=rtype, resource_name=name, resource_pattern_type=pattern,
                                  principal=principal, host=host, operation=op, permission_type=perm)  # fmt: skip


def describe_filter(name=None, rtype=ANY, pattern=ANY, principal=None, op=ANY, perm=ANY, cls=None):
    return (cls or (lambda **f: req(29, **f)))(
        resource_type_filter=rtype, resource_name_filter=name, pattern_type_filter=pattern,
        principal_filter=principal, host_filter=None, operation=op, permission_type=perm)  # fmt: skip


async def create(broker, *creations, version=3, connection=ADMIN):
    resp = await call(broker, 30, version, req(30, creations=list(creations)), connection=connection)
    return [(r.error_code, r.error_message) for r in resp.results]


async def describe(broker, version=3, connection=ADMIN, **flt):
    return await call(broker, 29, version, describe_filter(**flt), connection=connection)


def listing(resp):
    return [(r.resource_type, r.resource_name, r.pattern_type, [(a.principal, a.host, a.operation, a.permission_type)
                                                                 for a in r.acls]) for r in resp.resources]  # fmt: skip


async def test_admin_creates_and_lists_bindings_grouped_by_resource(authz_broker):  # noqa: F811
    made = await create(authz_broker, creation(), creation(op=WRITE), creation("pay", pattern=PREFIXED, perm=DENY),
                        creation(principal="User:carol", host="10.0.0.1"))  # fmt: skip
    assert made == [(ErrorCode.NONE, None)] * 4
    resp = await describe(authz_broker)
    assert (resp.error_code, resp.error_message) == (ErrorCode.NONE, None)
    assert listing(resp) == [
        (TOPIC, "orders", LITERAL, [("User:bob", "*", READ, ALLOW), ("User:bob", "*", WRITE, ALLOW),
                                    ("User:carol", "10.0.0.1", READ, ALLOW)]),
        (TOPIC, "pay", PREFIXED, [("User:bob", "*", READ, DENY)]),
    ]  # fmt: skip
    assert listing(await describe(authz_broker, name="payments", rtype=TOPIC, pattern=MATCH)) == [
        (TOPIC, "pay", PREFIXED, [("User:bob", "*", READ, DENY)])]  # fmt: skip
    assert listing(await describe(authz_broker, op=WRITE)) == [(TOPIC, "orders", LITERAL, [("User:bob", "*", WRITE, ALLOW)])]
    assert listing(await describe(authz_broker, version=0)) == listing(resp)[:1]  # v0 cannot name PREFIXED


async def test_created_bindings_take_effect_at_once(authz_broker):  # noqa: F811
    bob = user("bob")
    assert not authz_broker.authorizer.authorize("User:bob", "127.0.0.1", Op.READ, Res.TOPIC, "orders")
    await create(authz_broker, creation())
    assert authz_broker.authorizer.authorize("User:bob", "127.0.0.1", Op.READ, Res.TOPIC, "orders")
    assert (await describe(authz_broker, connection=bob)).error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


@pytest.mark.parametrize("version", range(4))
async def test_a_user_needs_cluster_rights_for_each_request(authz_broker, version):  # noqa: F811
    bob = user("bob")
    resp = await describe(authz_broker, version, connection=bob)
    denied = ("Request Request(processor=0, connectionId=127.0.0.1:50000, session=Session(User:bob,/127.0.0.1), "
              "listenerName=ListenerName(PLAINTEXT), securityProtocol=PLAINTEXT, buffer=null, envelope=None) is not "
              "authorized.")  # Kafka's ClusterAuthorizationException, as its RequestChannel.Request prints itself
    assert (resp.error_code, resp.error_message, resp.resources) == (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied, [])
    refused = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, denied)
    assert await create(authz_broker, creation(), creation(op=WRITE), version=version, connection=bob) == [refused] * 2
    Filter = sub(31, "DeleteAclsFilter")
    resp = await call(authz_broker, 31, version, req(31, filters=[describe_filter(cls=Filter, pattern=LITERAL)]),
                      connection=bob)  # fmt: skip
    assert [(r.error_code, r.matching_acls) for r in resp.filter_results] == [(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])]
    assert authz_broker.authorizer.acls == []
    grant(authz_broker, "bob", Op.ALTER, Res.CLUSTER, "kafka-cluster")
    assert await create(authz_broker, creation(), version=version, connection=bob) == [(ErrorCode.NONE, None)]
    assert (await describe(authz_broker, version, connection=bob)).error_code == ErrorCode.NONE  # ALTER implies DESCRIBE


async def test_bindings_kafka_refuses_get_invalid_request_and_the_rest_are_made(authz_broker):  # noqa: F811
    made = await create(authz_broker, creation("other-cluster", rtype=CLUSTER), creation(""), creation(rtype=ANY),
                        creation(pattern=MATCH), creation(op=ANY), creation(perm=ANY), creation(principal="bob"),
                        creation("kafka-cluster", rtype=CLUSTER, op=ALTER))  # fmt: skip
    assert [code for code, _ in made] == [ErrorCode.INVALID_REQUEST] * 7 + [ErrorCode.NONE]
    assert [message for _, message in made[:6]] == [
        "The only valid name for the CLUSTER resource is kafka-cluster", "Invalid empty resource name",
        "Invalid resourceType ANY", "Invalid patternType MATCH", "Invalid operation ANY", "Invalid permissionType ANY"]
    assert made[6][1].startswith("Could not parse principal from `bob`")
    assert listing(await describe(authz_broker)) == [(CLUSTER, "kafka-cluster", LITERAL, [("User:bob", "*", ALTER, ALLOW)])]


async def test_delete_lists_what_each_filter_removed(authz_broker):  # noqa: F811
    await create(authz_broker, creation(), creation(op=WRITE), creation("g", rtype=GROUP), creation("p", pattern=PREFIXED))
    Filter = sub(31, "DeleteAclsFilter")
    filters = [describe_filter("orders", TOPIC, LITERAL, op=WRITE, cls=Filter), describe_filter(rtype=TOPIC, cls=Filter),
               describe_filter("nothing", cls=Filter)]  # fmt: skip
    resp = await call(authz_broker, 31, 3, req(31, filters=filters), connection=ADMIN)
    got = [[(m.resource_name, m.pattern_type, m.operation) for m in r.matching_acls] for r in resp.filter_results]
    assert got == [[("orders", LITERAL, WRITE)], [("orders", LITERAL, READ), ("orders", LITERAL, WRITE),
                                                   ("p", PREFIXED, READ)], []]  # fmt: skip
    assert {r.error_code for r in resp.filter_results} == {ErrorCode.NONE}
    assert listing(await describe(authz_broker)) == [(GROUP, "g", LITERAL, [("User:bob", "*", READ, ALLOW)])]


async def test_bindings_outlive_a_restart(tmp_path):
    props = {"node.id": "3", "log.dirs": str(tmp_path / "data"), "prometheus.port": "0", "super.users": "User:admin",
             "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}  # fmt: skip
    first = Broker.open(BrokerConfig.from_props(props))
    try:
        await create(first, creation(), creation("p", pattern=PREFIXED, op=WRITE))
        made = list(first.authorizer.acls)
    finally:
        first.close()
    again = Broker.open(BrokerConfig.from_props(props))
    try:
        assert again.authorizer.acls == made and len(made) == 2
        assert again.authorizer.authorize("User:bob", "1.2.3.4", Op.WRITE, Res.TOPIC, "p1")
    finally:
        again.close()


REFUSED = (ErrorCode.KAFKA_STORAGE_ERROR, "could not store the ACLs: [Errno 28] No space left on device")


async def test_a_creation_the_disk_refuses_is_refused_and_changes_nothing(authz_broker, monkeypatch):  # noqa: F811
    """KAFKA_STORAGE_ERROR naming the failure, as for a config or quota change the disk refused (before:
    UNKNOWN_SERVER_ERROR, from dispatch); a creation Kafka refuses keeps its own error."""
    await create(authz_broker, creation("kept"))
    before, offset = list(authz_broker.authorizer.acls), authz_broker.quorum.end_offset
    monkeypatch.setattr(fileops, "fsync", full_disk("__acls"))
    made = await create(authz_broker, creation("new"), creation(""), creation("kept"))
    assert made == [REFUSED, (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"), REFUSED]
    assert authz_broker.authorizer.acls == before and authz_broker.quorum.end_offset == offset
    assert not authz_broker.topics.manager.failures.metadata_offline
    monkeypatch.undo()
    assert await create(authz_broker, creation("new")) == [(ErrorCode.NONE, None)]


async def test_a_deletion_the_disk_refuses_is_refused_and_removes_nothing(authz_broker, monkeypatch):  # noqa: F811
    await create(authz_broker, creation("a"), creation("b"))
    before = list(authz_broker.authorizer.acls)
    Filter = sub(31, "DeleteAclsFilter")
    filters = [describe_filter("a", TOPIC, LITERAL, cls=Filter), describe_filter("none", cls=Filter)]
    monkeypatch.setattr(fileops, "fsync", full_disk("__acls"))
    resp = await call(authz_broker, 31, 3, req(31, filters=filters), connection=ADMIN)
    assert [(r.error_code, r.error_message, r.matching_acls) for r in resp.filter_results] == [(*REFUSED, [])] * 2
    assert authz_broker.authorizer.acls == before
    assert authz_broker.authorizer.authorize("User:bob", "1.2.3.4", Op.READ, Res.TOPIC, "a")  # still in force
    monkeypatch.undo()
    resp = await call(authz_broker, 31, 3, req(31, filters=filters), connection=ADMIN)
    assert [len(r.matching_acls) for r in resp.filter_results] == [1, 0]


async def test_a_deletion_whose_save_is_in_doubt_is_not_answered(authz_broker, monkeypatch):  # noqa: F811
    """Renamed in place, its directory not fsynced: the metadata log dir fails and the broker stops."""
    await create(authz_broker, creation("a"))
    before = list(authz_broker.authorizer.acls)
    monkeypatch.setattr(fileops, "fsync_path", directory_fsync_fails_once())
    Filter = sub(31, "DeleteAclsFilter")
    with pytest.raises(CloseConnection, match="DeleteAcls not answered: .*a metadata save is in doubt"):
        await call(authz_broker, 31, 3, req(31, filters=[describe_filter("a", cls=Filter)]), connection=ADMIN)
    assert authz_broker.topics.manager.failures.metadata_offline and authz_broker.authorizer.acls == before
