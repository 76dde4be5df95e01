"""What the admin handlers share to authorize a request as Kafka does (``AuthHelper``, ``ConfigHelper``).

Without an authorizer every check here allows (``RequestContext.authorized``).

* ``filter_authorized``: the names of a list the principal may act on, each
  name asked once (Kafka's ``filterByAuthorized``).
* ``config_refusal``: a config resource's check. Kafka guards TOPIC configs
  with the topic's ACLs, GROUP configs with the group's, and BROKER,
  BROKER_LOGGER and CLIENT_METRICS configs with the cluster's; a denial is
  TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED or
  CLUSTER_AUTHORIZATION_FAILED with that error's default message. Other
  resource types are not authorized here (each handler refuses them its own
  way).
* ``cluster_denied_message``: the message of the ClusterAuthorizationException
  Kafka's controller throws for a request it does not let through
  (``authorizeClusterOperation``): "Request Request(...) is not authorized.",
  the request described as Kafka's ``RequestChannel.Request`` prints itself.
"""

from __future__ import annotations

from typing import Iterable

from protocol import ErrorCode

from ..acl_model import AclOperation, ResourceType
from ..dispatch import RequestContext
from ._admin import RESOURCE_BROKER, RESOURCE_BROKER_LOGGER, RESOURCE_GROUP, RESOURCE_TOPIC

RESOURCE_CLIENT_METRICS = 16

# The default messages of Kafka's Errors, which its handlers send with these codes.
DEFAULT_MESSAGES = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "Topic authorization failed.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "Delegation Token authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}
CLUSTER_DENIED = (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, DEFAULT_MESSAGES[ErrorCode.CLUSTER_AUTHORIZATION_FAILED])

# A config resource type: the ACL resource type that guards it and the error of a denial.
_CONFIG_GUARDS = {
    RESOURCE_TOPIC: (ResourceType.TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    RESOURCE_GROUP: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    RESOURCE_BROKER: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    RESOURCE_BROKER_LOGGER: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    RESOURCE_CLIENT_METRICS: (ResourceType.CLUSTER, ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
}


def filter_authorized(ctx: RequestContext, op: AclOperation, rtype: ResourceType, names: Iterable[str],
                      *, log_denied: bool = True) -> set[str]:  # fmt: skip
    """The names (each checked once) on which the principal may do ``op``."""
    return {name for name in dict.fromkeys(names) if ctx.authorized(op, rtype, name, log_denied=log_denied)}


def config_refusal(ctx: RequestContext, op: AclOperation, resource_type: int,
                   resource_name: str | None) -> tuple[ErrorCode, str] | None:  # fmt: skip
    """The (error, message) of a config resource the principal may not ``op``; None when allowed."""
    guard = _CONFIG_GUARDS.get(resource_type)
    if guard is None:
        return None
    rtype, error = guard
    if rtype == ResourceType.CLUSTER:
        allowed = ctx.authorized_cluster(op)
    else:
        allowed = ctx.authorized(op, rtype, resource_name or "")
    return None if allowed else (error, DEFAULT_MESSAGES[error])


def cluster_denied_message(ctx: RequestContext) -> str:
    """Kafka's "Request Request(...) is not authorized." for a request denied its cluster operation."""
    connection = ctx.connection
    listener = getattr(connection, "listener", "") or getattr(connection, "security_protocol", "PLAINTEXT")
    protocol = getattr(connection, "security_protocol", "PLAINTEXT")
    return (f"Request Request(processor=0, connectionId={getattr(connection, 'peer', '')}, "
            f"session=Session({ctx.principal},/{ctx.client_host}), listenerName=ListenerName({listener}), "
            f"securityProtocol={protocol}, buffer=null, envelope=None) is not authorized.")  # fmt: skip
