"""AlterUserScramCredentials (key 51): v0, deletions and upsertions checked as Kafka's ScramControlManager does.

Behaviour: each user may be named once in a request. Deletions are taken
first, then upsertions; a user met a second time (two deletions, two
upsertions, even of two mechanisms, or one of each) gets a single
DUPLICATE_RESOURCE "A user credential cannot be altered twice in the same
request", and none of its alterations is applied. Each alteration is
checked: an empty user name is UNACCEPTABLE_CREDENTIAL "Username must not
be empty", a mechanism other than 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)
UNSUPPORTED_SASL_MECHANISM "Unknown SCRAM mechanism", a deletion of a
credential that does not exist RESOURCE_NOT_FOUND, and an upsertion's
iterations below the mechanism's minimum (4096) or above 16384
UNACCEPTABLE_CREDENTIAL "Too few iterations" / "Too many iterations". An
upsertion's salted password becomes the stored key and server key
(``scram.py``); an empty one fails as Kafka's HMAC does, with
UNKNOWN_SERVER_ERROR and no message.

The valid alterations are applied together and saved (``scram_store.py``,
on a worker thread, one request's alterations at a time, each checked
against what the one before left) before the answer; logins from then on
use them. If the disk refuses the save, nothing changes and every user the
request would have changed gets KAFKA_STORAGE_ERROR, as configs, quotas and
ACLs do; a save in doubt is not answered (the broker stops). Results come as Kafka
orders them: the deletions done, the upsertions done, then the failures.

Authorization (Kafka's ``ControllerApis``): ALTER on the cluster, checked
first; without it nothing changes and each user named (once, sorted by name)
gets CLUSTER_AUTHORIZATION_FAILED with the message of Kafka's
ClusterAuthorizationException ("Request Request(...) is not authorized.").
"""

from __future__ import annotations

from protocol import ErrorCode
from ..acl_model import AclOperation
from ..dispatch import RequestContext, error_answer, handler
from ..scram import BY_TYPE, credential_from_salted
from ..store_saves import NotStored
from ._admin_authz import cluster_denied_message

API_KEY = 51
DUPLICATE = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def _check_name(name: str, mechanism: int) -> tuple[ErrorCode, str | None] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism not in BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None


def _check_deletion(store, deletion) -> tuple[ErrorCode, str | None] | None:
    error = _check_name(deletion.name, deletion.mechanism)
    if error is None and store.get(deletion.name, BY_TYPE[deletion.mechanism].name) is None:
        error = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
    return error


def _check_upsertion(upsertion) -> tuple[ErrorCode, str | None] | None:
    error = _check_name(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    mechanism = BY_TYPE[upsertion.mechanism]
    if upsertion.iterations < mechanism.min_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if upsertion.iterations > mechanism.max_iterations:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def _sort(store, request) -> tuple[dict, dict, dict]:
    """Deletions and upsertions by user, and the users refused with their error."""
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    chosen: tuple[dict, dict] = ({}, {})  # deletions, upsertions
    for kind, entries in enumerate((request.deletions, request.upsertions)):
        for entry in entries:
            if entry.name in errors:
                continue
            if any(entry.name in c for c in chosen):
                for c in chosen:
                    c.pop(entry.name, None)
                errors[entry.name] = DUPLICATE
                continue
            error = _check_deletion(store, entry) if kind == 0 else _check_upsertion(entry)
            if error is not None:
                errors[entry.name] = error
            else:
                chosen[kind][entry.name] = entry
    return chosen[0], chosen[1], errors


def _credentials(upsertions: dict, errors: dict) -> dict:
    """The new credential of each upsertion; one that cannot be made moves to ``errors``."""
    changes = {}
    for name, upsertion in list(upsertions.items()):
        mechanism = BY_TYPE[upsertion.mechanism]
        try:
            changes[(name, mechanism.name)] = credential_from_salted(
                mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password), upsertion.iterations)
        except ValueError:  # an empty salted password: Kafka's HMAC fails, the answer hides why
            del upsertions[name]
            errors[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return changes


async def _apply(store, deletions: dict, changes: dict) -> str | None:
    """Apply and save all the alterations; or none of them if the disk refused the file: then why (a save
    in doubt, ``MetadataDirFailed``, goes on unanswered)."""
    credentials = dict(store.credentials)
    for name, deletion in deletions.items():
        del credentials[(name, BY_TYPE[deletion.mechanism].name)]
    credentials.update(changes)
    try:
        await store.replace(credentials)
    except NotStored as exc:
        return str(exc)
    return None


def _denied(ctx: RequestContext, request) -> object:
    resp = ctx.response(throttle_time_ms=0, results=[])
    Result = type(resp).AlterUserScramCredentialsResult
    users = sorted({entry.name for entry in [*request.deletions, *request.upsertions]})
    message = cluster_denied_message(ctx)
    resp.results = [Result(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message)
                    for u in users]  # fmt: skip
    return resp


@handler(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request) -> object:
    if not ctx.authorized_cluster(AclOperation.ALTER):
        return _denied(ctx, request)
    store = ctx.broker.scram
    async with store.saves:  # checked against the credentials the change before left
        deletions, upsertions, errors = _sort(store, request)
        changes = _credentials(upsertions, errors)
        done = [*deletions, *upsertions]
        refused = await _apply(store, deletions, changes) if deletions or changes else None
        if refused is not None:
            errors.update({name: (ErrorCode.KAFKA_STORAGE_ERROR, refused) for name in done})
            done = []
    resp = ctx.response(throttle_time_ms=0, results=[])
    Result = type(resp).AlterUserScramCredentialsResult
    resp.results = [Result(user=name, error_code=ErrorCode.NONE, error_message=None) for name in done]
    resp.results += [Result(user=name, error_code=code, error_message=text) for name, (code, text) in errors.items()]
    return resp


@error_answer(API_KEY, throttled=False)  # Kafka's getErrorResponse sets no throttle time
def _error_answer(ctx: RequestContext, request, error: ErrorCode) -> object:
    """Kafka's ``getErrorResponse``: ``error`` once for each user named, in name order, no message."""
    resp = ctx.response()
    users = sorted({c.name for c in request.deletions} | {c.name for c in request.upsertions})
    Result = type(resp).AlterUserScramCredentialsResult
    resp.results = [Result(user=user, error_code=error, error_message=None) for user in users]
    return resp
