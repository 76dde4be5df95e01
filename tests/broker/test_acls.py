"""DescribeAcls, CreateAcls and DeleteAcls on a broker without an authorizer, as Kafka answers them.

Every request is SECURITY_DISABLED (DescribeAcls once, CreateAcls per
creation, DeleteAcls per filter) with Kafka's messages, and nothing is
stored; a binding or filter with an UNKNOWN (0) code closes the connection,
as Kafka's request parser does.
"""

from __future__ import annotations

import pytest

from broker.acl_model import java_host_address
from broker.dispatch import CloseConnection
from protocol import ErrorCode

from ._admin_client import broker, call, req, sub  # noqa: F401  (broker is a fixture)

TOPIC, LITERAL, PREFIXED, READ, WRITE, ALLOW, ANY = 2, 3, 4, 3, 4, 3, 1


def _filter(cls, **codes):
    fields = dict(resource_type_filter=TOPIC, resource_name_filter=None, pattern_type_filter=LITERAL,
                  principal_filter=None, host_filter=None, operation=ANY, permission_type=ANY)  # fmt: skip
    return cls(**{**fields, **codes})


def _creation(**codes):
    fields = dict(resource_type=TOPIC, resource_name="t", resource_pattern_type=PREFIXED, principal="User:alice",
                  host="*", operation=WRITE, permission_type=ALLOW)  # fmt: skip
    return sub(30, "AclCreation")(**{**fields, **codes})


@pytest.mark.parametrize("version", range(4))
async def test_describe_acls_is_security_disabled(broker, version):  # noqa: F811
    body = _filter(lambda **f: req(29, **f), pattern_type_filter=ANY if version else LITERAL)
    resp = await call(broker, 29, version, body)
    assert (resp.error_code, resp.error_message, resp.resources) == (
        ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker", [])  # fmt: skip


@pytest.mark.parametrize("version", range(4))
async def test_create_acls_answers_each_creation_security_disabled(broker, version):  # noqa: F811
    creations = [_creation(), _creation(operation=READ, resource_pattern_type=LITERAL)]
    resp = await call(broker, 30, version, req(30, creations=creations))
    assert [(r.error_code, r.error_message) for r in resp.results] == [
        (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")] * 2  # fmt: skip
    assert (await call(broker, 30, version, req(30, creations=[]))).results == []


@pytest.mark.parametrize("version", range(4))
async def test_delete_acls_answers_each_filter_security_disabled(broker, version):  # noqa: F811
    Filter = sub(31, "DeleteAclsFilter")
    filters = [_filter(Filter), _filter(Filter, resource_type_filter=ANY, pattern_type_filter=LITERAL)]
    resp = await call(broker, 31, version, req(31, filters=filters))
    assert [(r.error_code, r.error_message, r.matching_acls) for r in resp.filter_results] == [
        (ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.", [])] * 2  # fmt: skip


@pytest.mark.parametrize("field", ["resource_type_filter", "pattern_type_filter", "operation", "permission_type"])
async def test_unknown_codes_close_the_connection(broker, field):  # noqa: F811
    version = 0 if field != "pattern_type_filter" else 1  # v0 has no pattern type on the wire
    with pytest.raises(CloseConnection):
        await call(broker, 29, version, _filter(lambda **f: req(29, **f), **{field: 0}))
    with pytest.raises(CloseConnection):
        await call(broker, 31, version, req(31, filters=[_filter(sub(31, "DeleteAclsFilter")), _filter(
            sub(31, "DeleteAclsFilter"), **{field: 0})]))  # fmt: skip
    creation_field = {"resource_type_filter": "resource_type", "pattern_type_filter": "resource_pattern_type"}
    with pytest.raises(CloseConnection):
        await call(broker, 30, version, req(30, creations=[_creation(**{creation_field.get(field, field): 0})]))


@pytest.mark.parametrize(("ip", "scope_id", "java"), [
    ("127.0.0.1", 0, "127.0.0.1"),
    ("::1", 0, "0:0:0:0:0:0:0:1"),
    ("2001:db8::ff00:42:8329", 0, "2001:db8:0:0:0:ff00:42:8329"),
    ("2001:0DB8:0000::0001", 0, "2001:db8:0:0:0:0:0:1"),  # no leading zeros, lower case
    ("::ffff:10.0.0.7", 0, "10.0.0.7"),  # IPv4-mapped: Java makes it an Inet4Address
    ("fe80::1%lo", 1, "fe80:0:0:0:0:0:0:1%1"),  # a scoped peer: Java's numeric scope id
    ("?", 0, "?"),
])  # fmt: skip
def test_client_hosts_are_named_as_java_prints_them(ip, scope_id, java):
    assert java_host_address(ip, scope_id) == java
