"""The ACL authorizer's decisions, Kafka's StandardAuthorizer rules, and how it keeps the bindings.

Each rule is checked on an ``Authorizer`` kept in memory or in a temporary
log dir: super users, the default when no binding applies to a resource
(``allow.everyone.if.no.acl.found``), LITERAL, ``*`` and PREFIXED names,
principals and ``User:*``, hosts, DENY over ALLOW, the operations an ALLOW
implies (and a DENY does not), ``authorize_by_type``, the
``authorized_operations`` bitfield, filters, and the ``__acls.json`` file.
"""

from __future__ import annotations

import pytest

from broker.acl_model import AclBinding, AclFilter, AclOperation, PatternType, PermissionType, ResourceType
from broker.authorizer import ACLS_FILE, AclFileError, Authorizer, parse_super_users
from broker.config import BrokerConfig, ConfigError

Op, Res, Pat, Perm = AclOperation, ResourceType, PatternType, PermissionType
HOST = "10.0.0.7"


def acl(name="orders", op=Op.READ, perm=Perm.ALLOW, who="User:bob", rtype=Res.TOPIC, pattern=Pat.LITERAL, host="*"):
    return AclBinding(rtype, name, pattern, who, host, op, perm)


def auth_with(*acls, super_users="User:admin", allow_if_no_acl=False) -> Authorizer:
    a = Authorizer(None, parse_super_users(super_users), allow_if_no_acl)
    a.create_in_line(list(acls))
    return a


def may(a: Authorizer, op=Op.READ, name="orders", who="User:bob", rtype=Res.TOPIC, host=HOST) -> bool:
    return a.authorize(who, host, op, rtype, name)


def test_no_binding_means_denied_unless_allow_everyone_is_set():
    assert not may(auth_with())
    assert may(auth_with(allow_if_no_acl=True))
    # Any binding on the resource, whoever it names, takes the default away.
    assert not may(auth_with(acl(who="User:carol"), allow_if_no_acl=True))
    assert may(auth_with(acl(name="other", who="User:carol"), allow_if_no_acl=True))


def test_super_users_may_do_anything_even_against_a_deny():
    a = auth_with(acl(op=Op.ALL, perm=Perm.DENY, who="User:admin"), super_users=" User:admin ; User:ops;")
    assert a.super_users == {"User:admin", "User:ops"}
    assert may(a, who="User:admin") and may(a, Op.DELETE, who="User:ops")
    assert not may(a, who="User:bob")


def test_literal_wildcard_and_prefixed_names():
    a = auth_with(acl("orders"), acl("*", Op.WRITE), acl("pay", Op.DELETE, pattern=Pat.PREFIXED))
    assert may(a, Op.READ, "orders") and not may(a, Op.READ, "orders2") and not may(a, Op.READ, "order")
    assert may(a, Op.WRITE, "anything") and may(a, Op.WRITE, "*")
    assert may(a, Op.DELETE, "payments") and may(a, Op.DELETE, "pay") and not may(a, Op.DELETE, "pa")
    assert not may(a, Op.DELETE, "orders")


def test_resource_types_are_apart():
    a = auth_with(acl("orders", rtype=Res.GROUP))
    assert may(a, rtype=Res.GROUP) and not may(a, rtype=Res.TOPIC)


def test_principal_and_host_must_match():
    a = auth_with(acl(who="User:*", op=Op.READ), acl(who="User:bob", op=Op.WRITE, host="10.0.0.8"))
    assert may(a, who="User:anyone") and may(a, who="User:bob")
    assert not may(a, Op.WRITE) and may(a, Op.WRITE, host="10.0.0.8")
    assert not may(auth_with(acl(who="Group:bob")))  # a principal is type and name


def test_deny_wins_over_allow_from_any_matching_binding():
    a = auth_with(acl("orders", Op.ALL), acl("ord", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED),
                  acl("*", Op.READ, Perm.DENY, who="User:*", host=HOST))  # fmt: skip
    assert not may(a, Op.WRITE) and not may(a, Op.READ)
    assert may(a, Op.DELETE) and may(a, Op.READ, host="10.9.9.9")


def test_allow_implies_describe_and_describe_configs_but_deny_implies_nothing():
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        a = auth_with(acl(op=op))
        assert may(a, Op.DESCRIBE) and not may(a, Op.DESCRIBE_CONFIGS)
    assert may(auth_with(acl(op=Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS)
    assert not may(auth_with(acl(op=Op.CREATE)), Op.DESCRIBE)
    assert not may(auth_with(acl(op=Op.DESCRIBE)), Op.READ)
    a = auth_with(acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=Perm.DENY))
    assert may(a, Op.DESCRIBE) and not may(a, Op.READ)
    assert not may(auth_with(acl(op=Op.READ), acl(op=Op.ALL, perm=Perm.DENY)), Op.DESCRIBE)


async def test_decisions_are_cached_until_the_bindings_change():
    a = auth_with(acl(op=Op.READ))
    assert may(a)
    await a.create([acl(op=Op.READ, perm=Perm.DENY)])
    assert not may(a)
    await a.delete([AclFilter(Res.ANY, None, Pat.ANY, None, None, Op.ANY, Perm.DENY)])
    assert may(a)


@pytest.mark.parametrize(("acls", "expected"), [
    ((), False),
    ((acl("a", Op.WRITE),), True),
    ((acl("a", Op.ALL),), True),
    ((acl("a", Op.READ),), False),
    ((acl("a", Op.WRITE, who="User:carol"),), False),
    ((acl("a", Op.WRITE), acl("a", Op.WRITE, Perm.DENY)), False),
    ((acl("ab", Op.WRITE), acl("a", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)), False),
    ((acl("ab", Op.WRITE, pattern=Pat.PREFIXED), acl("abc", Op.WRITE, Perm.DENY, pattern=Pat.PREFIXED)), True),
    ((acl("ab", Op.WRITE), acl("a", Op.WRITE, Perm.DENY)), True),
    ((acl("*", Op.WRITE),), True),
    ((acl("*", Op.WRITE), acl("*", Op.WRITE, Perm.DENY, who="User:*")), False),
    ((acl("*", Op.WRITE, Perm.DENY), acl("ab", Op.WRITE)), False),
])  # fmt: skip
def test_authorize_by_type(acls, expected):
    assert auth_with(*acls).authorize_by_type("User:bob", HOST, Op.WRITE, Res.TOPIC) is expected


def test_authorize_by_type_lets_super_users_and_the_open_default_through():
    assert auth_with().authorize_by_type("User:admin", HOST, Op.WRITE, Res.TOPIC)
    assert auth_with(allow_if_no_acl=True).authorize_by_type("User:bob", HOST, Op.WRITE, Res.TOPIC)


def test_authorized_operations_lists_what_the_resource_type_has():
    a = auth_with(acl(op=Op.WRITE), acl(op=Op.ALTER_CONFIGS))
    ops = a.authorized_operations("User:bob", HOST, Res.TOPIC, "orders")
    assert ops == sum(1 << op for op in (Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))
    assert a.authorized_operations("User:admin", HOST, Res.GROUP, "g") == sum(
        1 << op for op in (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS))  # fmt: skip
    assert a.authorized_operations("User:bob", HOST, Res.CLUSTER, "kafka-cluster") == 0


@pytest.mark.parametrize(("flt", "names"), [
    (AclFilter(Res.ANY, None, Pat.ANY, None, None, Op.ANY, Perm.ANY), ["orders", "*", "ord", "g"]),
    (AclFilter(Res.TOPIC, "orders", Pat.ANY, None, None, Op.ANY, Perm.ANY), ["orders"]),
    (AclFilter(Res.TOPIC, "orders", Pat.MATCH, None, None, Op.ANY, Perm.ANY), ["orders", "*", "ord"]),
    (AclFilter(Res.TOPIC, "ord", Pat.PREFIXED, None, None, Op.ANY, Perm.ANY), ["ord"]),
    (AclFilter(Res.TOPIC, None, Pat.LITERAL, None, None, Op.ANY, Perm.ANY), ["orders", "*"]),
    (AclFilter(Res.ANY, None, Pat.ANY, "User:carol", None, Op.ANY, Perm.ANY), ["g"]),
    (AclFilter(Res.ANY, None, Pat.ANY, None, "10.0.0.8", Op.ANY, Perm.ANY), ["*"]),
    (AclFilter(Res.ANY, None, Pat.ANY, None, None, Op.WRITE, Perm.ANY), ["ord"]),
    (AclFilter(Res.ANY, None, Pat.ANY, None, None, Op.ANY, Perm.DENY), ["*"]),
])  # fmt: skip
def test_filters_pick_bindings_as_kafka_does(flt, names):
    a = auth_with(acl("orders"), acl("*", perm=Perm.DENY, host="10.0.0.8"), acl("ord", Op.WRITE, pattern=Pat.PREFIXED),
                  acl("g", rtype=Res.GROUP, who="User:carol"))  # fmt: skip
    assert [b.resource_name for b in a.describe(flt)] == names


async def test_bindings_are_kept_in_the_log_dir_and_read_back(tmp_path):
    a = Authorizer.load(tmp_path, "", False)
    await a.create([acl("orders"), acl("orders"), acl("p", Op.WRITE, pattern=Pat.PREFIXED)])
    assert len(a.acls) == 2
    again = Authorizer.load(tmp_path, "", False)
    assert again.acls == a.acls and may(again, Op.WRITE, "pxy")
    removed = await again.delete([AclFilter(Res.TOPIC, "orders", Pat.LITERAL, None, None, Op.ANY, Perm.ANY)])
    assert removed == [[acl("orders")]]
    assert Authorizer.load(tmp_path, "", False).acls == [acl("p", Op.WRITE, pattern=Pat.PREFIXED)]


def test_an_unreadable_acl_file_stops_the_start(tmp_path):
    (tmp_path / ACLS_FILE).write_text('{"acls": [{"resource_type": 2}]}')
    with pytest.raises(AclFileError, match=ACLS_FILE):
        Authorizer.load(tmp_path, "", False)


def test_an_unknown_authorizer_class_stops_the_start():
    with pytest.raises(ConfigError, match="authorizer.class.name"):
        BrokerConfig.from_props({"authorizer.class.name": "com.example.MyAuthorizer"}).validate()
    config = BrokerConfig.from_props({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})
    config.validate()
    assert config.authorizer_class_name == "kafka.security.authorizer.AclAuthorizer"


def test_every_denied_request_is_logged_even_when_the_decision_is_cached(caplog):
    a = auth_with()
    caplog.set_level("INFO", logger="kafka.authorizer.logger")
    assert not a.authorize("User:bob", HOST, Op.READ, Res.TOPIC, "orders", "Fetch", log_denied=False)
    assert not a.authorize("User:bob", HOST, Op.READ, Res.TOPIC, "orders", "Fetch")
    assert not a.authorize("User:bob", HOST, Op.READ, Res.TOPIC, "orders", "Fetch")
    assert [r.getMessage() for r in caplog.records] == [
        f"Principal = User:bob is Denied operation = READ from host = {HOST} on resource = Topic:LITERAL:orders "
        "for request = Fetch based on rule DefaultDeny"] * 2  # fmt: skip
