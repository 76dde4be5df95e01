"""DescribeUserScramCredentials (key 50): v0, the users' SCRAM credentials as Kafka's ScramImage describes them.

Behaviour: with no users named (null or empty) every user with a
credential is described, by name; otherwise each distinct name, in the order
asked. A user gets its credentials as (mechanism type, iterations), by
type, and never a salt or key; a user without any gets RESOURCE_NOT_FOUND
"Attempt to describe a user credential that does not exist: <user>", and a
name given twice gets one DUPLICATE_RESOURCE result "Cannot describe SCRAM
credentials for the same user twice in a single request: <user>". The
request-level error is NONE.

Authorization (Kafka's ``KafkaApis``): DESCRIBE on the cluster; without it the
answer is CLUSTER_AUTHORIZATION_FAILED "Cluster authorization failed." at the
top and in one result per user named, each with an empty user name, as
Kafka's error answer builds them (none when ``users`` is null). The same
shape, with UNKNOWN_SERVER_ERROR and no message, replaces an answer that
cannot be written (a user name near 0x7fff bytes quoted in a message:
``error_answer``, Kafka's ``getErrorResponse``).
"""

from __future__ import annotations

from collections import Counter

from protocol import ErrorCode

from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ._admin_authz import CLUSTER_DENIED

API_KEY = 50
NOT_FOUND = "Attempt to describe a user credential that does not exist: "
DUPLICATE = "Cannot describe SCRAM credentials for the same user twice in a single request: "


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized_cluster(AclOperation.DESCRIBE):
        return _refuse_all(ctx, request, *CLUSTER_DENIED)
    store = ctx.broker.scram
    asked = [user.name for user in request.users or []]
    counts = Counter(asked)
    resp = ctx.response(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None, results=[])
    Result = type(resp).DescribeUserScramCredentialsResult
    for user in dict.fromkeys(asked) if asked else store.users():
        infos = store.infos(user)
        if counts[user] > 1:
            result = Result(user=user, error_code=ErrorCode.DUPLICATE_RESOURCE, error_message=DUPLICATE + user)
        elif not infos:
            result = Result(user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND, error_message=NOT_FOUND + user)
        else:
            result = Result(user=user, error_code=ErrorCode.NONE, error_message=None, credential_infos=[
                Result.CredentialInfo(mechanism=m, iterations=i) for m, i in infos])  # fmt: skip
        resp.results.append(result)
    return resp


@error_answer(API_KEY)
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` at the top and for each user asked (no name), no message."""
    return _refuse_all(ctx, request, error, None)


def _refuse_all(ctx: RequestContext, request, code: ErrorCode, message: str | None) -> object:
    """``code`` and ``message`` at the top and once per user asked, the user's name left empty."""
    resp = ctx.response(throttle_time_ms=0, error_code=code, error_message=message)
    Result = type(resp).DescribeUserScramCredentialsResult
    resp.results = [Result(user="", error_code=code, error_message=message) for _ in request.users or []]
    return resp
