"""Helpers of the authorization tests: a broker with the ACL authorizer, principals, grants.

``authz_broker`` (a fixture) is ``_admin_client.broker`` with
``authorizer.class.name`` set to Kafka's StandardAuthorizer and
``super.users=User:admin``. ``user`` makes the connection a request comes
from (pass it to ``call(..., connection=user("bob"))``); ``grant`` and
``deny`` add ACL bindings straight to the broker's authorizer.
"""

from __future__ import annotations

import pytest

from broker.acl_model import AclBinding, AclOperation, PatternType, PermissionType, ResourceType
from broker.config import BrokerConfig
from broker.core import Broker

from ._admin_client import NODE, fake_connection

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
Op, Res = AclOperation, ResourceType


@pytest.fixture
def authz_broker(tmp_path):
    props = {
        "node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "num.partitions": "3",
        "prometheus.port": "0", "log.segment.bytes": "1048576",
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin",
    }  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    b.advertised = ("127.0.0.1", 9999)
    yield b
    b.close()


def user(name: str, host: str = "127.0.0.1"):
    """The connection of a client logged in as ``User:<name>`` from ``host``."""
    return fake_connection(principal=f"User:{name}", peer=f"{host}:50000")


def _add(broker, permission: PermissionType, who: str, op: AclOperation, rtype: ResourceType, name: str,
         pattern: PatternType, host: str) -> None:  # fmt: skip
    principal = who if ":" in who else f"User:{who}"
    broker.authorizer.create_in_line([AclBinding(rtype, name, pattern, principal, host, op, permission)])


def grant(broker, who: str, op: AclOperation, rtype: ResourceType, name: str,
          pattern: PatternType = PatternType.LITERAL, host: str = "*") -> None:  # fmt: skip
    """ALLOW ``who`` (a user name, or a principal such as ``User:*``) to do ``op`` to a resource."""
    _add(broker, PermissionType.ALLOW, who, op, rtype, name, pattern, host)


def deny(broker, who: str, op: AclOperation, rtype: ResourceType, name: str,
         pattern: PatternType = PatternType.LITERAL, host: str = "*") -> None:  # fmt: skip
    _add(broker, PermissionType.DENY, who, op, rtype, name, pattern, host)
