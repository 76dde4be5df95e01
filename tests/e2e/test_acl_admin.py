"""ACLs managed with real admin clients on a broker with the ACL authorizer (``authorizer.class.name``).

The broker has a SASL_PLAINTEXT listener with PLAIN users ``admin`` (in
``super.users``) and ``alice``. kafka-python's KafkaAdminClient, logged in
as admin, creates bindings (LITERAL and PREFIXED, ALLOW and DENY) and lists
them; confluent-kafka's AdminClient lists the same bindings, deletes some by
filter and sees the rest; alice, who has no ALTER on the cluster, is refused
with Kafka's ClusterAuthorizationFailed. The bindings outlive a restart.
"""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from .acl_users import confluent_conf, kafka_python_conf

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePattern,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType
    from kafka.errors import ClusterAuthorizationFailedError

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _kafka_python(broker, user: str) -> KafkaAdminClient:
    return KafkaAdminClient(**kafka_python_conf(broker, user), request_timeout_ms=10_000)


def _confluent(broker, user: str = "admin") -> AdminClient:
    return AdminClient(confluent_conf(broker, user))


def _acl(name, op, pattern=ACLResourcePatternType.LITERAL, perm=ACLPermissionType.ALLOW, who="User:alice"):
    return ACL(who, "*", op, perm, ResourcePattern(KpResourceType.TOPIC, name, pattern))


ANY_FILTER = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                              AclPermissionType.ANY)  # fmt: skip


def _bindings(admin: AdminClient) -> set:
    found = admin.describe_acls(ANY_FILTER, request_timeout=10).result()
    return {(b.restype.name, b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
             b.permission_type.name) for b in found}  # fmt: skip


def test_admins_manage_acls_with_kafka_python_and_confluent(acl_broker):
    admin = _kafka_python(acl_broker, "admin")
    made = admin.create_acls([_acl("orders", ACLOperation.READ), _acl("orders", ACLOperation.WRITE),
                              _acl("tmp-", ACLOperation.ALL, ACLResourcePatternType.PREFIXED, ACLPermissionType.DENY)])
    assert len(made["succeeded"]) == 3 and made["failed"] == []
    listed, error = admin.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                                  ResourcePatternFilter(KpResourceType.TOPIC, "orders",
                                                                        ACLResourcePatternType.MATCH)))  # fmt: skip
    assert error.errno == 0
    assert sorted(a.operation.name for a in listed) == ["READ", "WRITE"]
    admin.close()

    confluent = _confluent(acl_broker)
    expected = {("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
                ("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW"),
                ("TOPIC", "tmp-", "PREFIXED", "User:alice", "*", "ALL", "DENY")}  # fmt: skip
    assert _bindings(confluent) == expected
    write_filter = AclBindingFilter(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, None, None,
                                    AclOperation.WRITE, AclPermissionType.ANY)  # fmt: skip
    deleted = confluent.delete_acls([write_filter], request_timeout=10)[write_filter].result()
    assert [(b.name, b.operation.name) for b in deleted] == [("orders", "WRITE")]
    confluent.create_acls([AclBinding(ResourceType.GROUP, "g", ResourcePatternType.LITERAL, "User:alice", "*",
                                      AclOperation.READ, AclPermissionType.ALLOW)])  # fmt: skip
    assert _bindings(confluent) == (expected - {("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW")}
                                    | {("GROUP", "g", "LITERAL", "User:alice", "*", "READ", "ALLOW")})  # fmt: skip

    acl_broker.stop()
    acl_broker.restart()
    assert len(_bindings(_confluent(acl_broker))) == 3


def test_a_user_without_cluster_alter_is_refused(acl_broker):
    alice = _kafka_python(acl_broker, "alice")
    made = alice.create_acls([_acl("orders", ACLOperation.READ)])
    assert made["succeeded"] == [] and len(made["failed"]) == 1
    assert made["failed"] == [ClusterAuthorizationFailedError]  # kafka-python lists the error classes
    with pytest.raises(ClusterAuthorizationFailedError):
        alice.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                      ResourcePatternFilter(KpResourceType.ANY, None, ACLResourcePatternType.ANY)))
    alice.close()
    assert _bindings(_confluent(acl_broker)) == set()
    confluent_alice = _confluent(acl_broker, "alice")
    # librdkafka reads DescribeAcls' error code but does not report it (rd_kafka_DescribeAclsResponse_parse):
    # alice's listing is empty, though admin made a binding after her refusal.
    binding = AclBinding(ResourceType.TOPIC, "t", ResourcePatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                         AclPermissionType.ALLOW)  # fmt: skip
    admin = _confluent(acl_broker)
    admin.create_acls([binding])[binding].result(10)
    assert confluent_alice.describe_acls(ANY_FILTER, request_timeout=10).result() == []
    with pytest.raises(KafkaException, match="CLUSTER_AUTHORIZATION_FAILED"):
        confluent_alice.create_acls([binding], request_timeout=10)[binding].result(10)
