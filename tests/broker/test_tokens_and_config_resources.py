"""Delegation token requests answered as Kafka answers them with tokens off, and ListConfigResources."""

from __future__ import annotations

import pytest

from protocol import ErrorCode

from ._admin_client import NODE, broker, call, create_ok, fake_connection, req, sub  # noqa: F401  (broker: a fixture)

NOT_ALLOWED, DISABLED = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def _bodies(version: int) -> dict:
    Renewer = sub(38, "CreatableRenewers")
    return {
        38: req(38, owner_principal_type=None, owner_principal_name=None, max_lifetime_ms=-1,
                renewers=[Renewer(principal_type="User", principal_name="bob")]),
        39: req(39, hmac=b"\x01", renew_period_ms=1000),
        40: req(40, hmac=b"\x01", expiry_time_period_ms=-1),
        41: req(41, owners=None),
    }  # fmt: skip


@pytest.mark.parametrize(("protocol", "principal", "expected"), [
    ("PLAINTEXT", "User:ANONYMOUS", NOT_ALLOWED),
    ("SSL", "User:ANONYMOUS", NOT_ALLOWED),  # 1-way SSL
    ("SSL", "User:CN=client", DISABLED),
    ("SASL_PLAINTEXT", "User:alice", DISABLED),
    ("SASL_SSL", "User:alice", DISABLED),
])  # fmt: skip
@pytest.mark.parametrize("version", [0, 2, 3])
async def test_token_requests_get_kafkas_refusal(broker, protocol, principal, expected, version):
    connection = fake_connection(security_protocol=protocol, principal=principal)
    for key, body in _bodies(version).items():
        if key in (39, 40) and version > 2:
            continue
        resp = await call(broker, key, version, body, connection=connection)
        assert resp.error_code == expected, key
    create = await call(broker, 38, version, _bodies(version)[38], connection=connection)
    assert (create.principal_type, create.principal_name, create.token_id, create.hmac) == (
        "User", principal.partition(":")[2], "", b"")  # fmt: skip
    assert create.issue_timestamp_ms == create.expiry_timestamp_ms == create.max_timestamp_ms == -1


async def list_resources(broker, version: int, types: list[int]):
    body = req(74, resource_types=types) if version else req(74)
    return await call(broker, 74, version, body)


async def test_list_config_resources(broker):
    await create_ok(broker, "listed")
    everything = await list_resources(broker, 1, [])
    assert everything.error_code == ErrorCode.NONE
    assert [(r.resource_name, r.resource_type) for r in everything.config_resources] == [
        ("listed", 2), (str(NODE), 8), (str(NODE), 4)]
    topics = await list_resources(broker, 1, [2])
    assert [r.resource_name for r in topics.config_resources] == ["listed"]
    assert (await list_resources(broker, 1, [16, 32])).config_resources == []
    assert (await list_resources(broker, 0, [])).config_resources == []
    unknown = await list_resources(broker, 1, [2, 64])
    assert (unknown.error_code, unknown.config_resources) == (ErrorCode.UNSUPPORTED_VERSION, [])
