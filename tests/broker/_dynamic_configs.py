"""Requests the dynamic broker config tests repeat: AlterConfigs and IncrementalAlterConfigs on a BROKER resource.

``incremental`` (IncrementalAlterConfigs v1, operations ``SET``, ``DELETE``,
``APPEND``, ``SUBTRACT``) and ``alter`` (AlterConfigs v2) change one level,
``""`` for the cluster default or ``NODE_NAME`` for this broker, and return
that resource's answer; ``ok`` checks it succeeded; ``broker_entry`` is one
key of this broker's DescribeConfigs. ``DYNAMIC_BROKER`` and
``DYNAMIC_DEFAULT`` are Kafka's config sources 2 and 3.
"""

from __future__ import annotations

from protocol import ErrorCode

from ._admin_client import BROKER, NODE, call, describe, req, sub

DYNAMIC_BROKER, DYNAMIC_DEFAULT = 2, 3
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
NODE_NAME = str(NODE)


async def incremental(broker, name: str, ops: list, validate_only=False):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    res = Res(resource_type=BROKER, resource_name=name, configs=entries)
    return (await call(broker, 44, 1, req(44, resources=[res], validate_only=validate_only))).responses[0]


async def alter(broker, name: str, configs: dict, validate_only=False):
    Res = sub(33, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, value=v) for k, v in configs.items()]
    body = req(33, resources=[Res(resource_type=BROKER, resource_name=name, configs=entries)],
               validate_only=validate_only)  # fmt: skip
    return (await call(broker, 33, 2, body)).responses[0]


async def ok(result) -> None:
    assert (result.error_code, result.error_message) == (ErrorCode.NONE, None)


async def broker_entry(broker, key: str):
    return {c.name: c for c in (await describe(broker, NODE_NAME, rtype=BROKER)).configs}[key]
