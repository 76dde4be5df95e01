"""The handler registry and the bytes-in/bytes-out entry point of the broker.

Each module in ``broker.handlers`` registers one API with ``@handler(key,
min_version, max_version)``; ``ApiVersions`` is answered from this registry,
never from a hand-kept list (franz-go kfake's habit). ``dispatch`` turns one
request frame into the chunks of one response frame, or into a decision to
answer nothing (``acks=0``) or to close the connection, exactly where Kafka
closes it (reference §6.3):

* unknown api key, unparsable header or body, a version no handler serves,
  or a legacy version switched off (KIP-724/KIP-896) -> close, no answer;
* ApiVersions at a version above ours -> a v0 answer with UNSUPPORTED_VERSION
  listing only ApiVersions' own range, so the client can retry lower;
* a handler that fails unexpectedly (any ``Exception`` but ``CloseConnection``
  and the ones below), or an answer that cannot be written (a string field
  over 0x7fff bytes: an error message quoting a long name, a member id made
  of a long client id, a config value grown by APPENDs; or any other writer
  failure) -> the request's error answer with UNKNOWN_SERVER_ERROR, logged
  at ERROR as "Unexpected error handling request" (with the traceback, but
  for an over-long string). Kafka's ``KafkaApis.handle`` catches any
  Throwable from a handler, and from writing its answer, which
  ``RequestChannel.sendResponse`` does inside that try: ``handleError``
  sends ``getErrorResponse(throttle, e)`` with ``Errors.forException(e)``,
  UNKNOWN_SERVER_ERROR for anything not an ``ApiException`` (our handlers
  answer those errors themselves). Its few fields are the request's own
  and always fit. Every API's builder of that answer (Kafka's
  ``getErrorResponse``) lives in its handler module, registered with
  ``@error_answer(key)`` (shared shapes in ``handlers/_error_answers``).
  Its throttle time is the one the connection is muted for after a failed
  handler (the request quota's, or the handler's own when it failed after
  recording it: a Fetch over its byte rate), the unsent answer's for an
  unwritable one, and none where Kafka's builder sets none.
  Produce with ``acks=0`` has none (Kafka's is null): the connection is
  closed, and so it is when a builder fails or its answer cannot be written
  either: Kafka would leave that request unanswered forever. trio's
  ``Cancelled`` and any other ``BaseException`` pass through untouched;
* a metadata change whose save failed or is in doubt
  (``storage.MetadataDirFailed``: the metadata log dir is offline and the
  broker stops) -> close, no answer, as Kafka halts before it answers: the
  change is neither made nor refused. It is no ``OSError``, so no handler's
  ``except OSError`` / ``except StorageError`` (KAFKA_STORAGE_ERROR) meets it
  on its way here.

Every request a handler (or that ApiVersions fallback) answers is counted in
the request metrics (``request_metrics``), as Kafka's ``RequestChannel``
counts it: its rate per name and version, its times once the answer is sent
(the last chunk, ``AfterSent``, tells), each error code of its answer; an
answer not sent (``acks=0``) has no error codes, unless the connection is
closed over it, when Kafka counts the errors it would have carried. An
answer that cannot be written has its errors counted, as Kafka counts them
before writing, and so has the error answer sent in its place (or, for a
failed handler, the error answer alone, as Kafka counts it).

``answer_before_login`` answers the ApiVersions a SASL listener takes before
the login, which Kafka's ``SaslServerAuthenticator`` answers itself, outside
``KafkaApis`` and the ``RequestChannel``: the same answer (the same handler),
with ``throttle_time_ms`` 0, seen by no request metric and no request quota.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import time
from typing import Any, Awaitable, Callable

import attrs

from protocol import (
    API_BY_KEY,
    ErrorCode,
    InvalidRequestError,
    Request,
    StringTooLongError,
    UnsupportedVersionError,
    decode_request,
    message_class,
    response_chunks,
)

from storage import MetadataDirFailed

from . import quotas, request_metrics
from .acl_model import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType

log = logging.getLogger(__name__)

API_VERSIONS = 18
HandlerFn = Callable[["RequestContext", Any], Awaitable[Any]]
ErrorAnswerFn = Callable[["RequestContext", Any, ErrorCode], Any]


@attrs.frozen
class Handler:
    api_key: int
    min_version: int
    max_version: int
    fn: HandlerFn

    @property
    def name(self) -> str:
        return API_BY_KEY[self.api_key].name


REGISTRY: dict[int, Handler] = {}


def handler(api_key: int, min_version: int, max_version: int) -> Callable[[HandlerFn], HandlerFn]:
    """Register ``fn`` as the handler of ``api_key`` for the given versions."""
    api = API_BY_KEY[api_key]
    if not api.min_version <= min_version <= max_version <= api.max_version:
        raise ValueError(f"{api.name}: handler range {min_version}-{max_version} outside the schema's")

    def register(fn: HandlerFn) -> HandlerFn:
        if api_key in REGISTRY:
            raise RuntimeError(f"{api.name} registered twice")
        REGISTRY[api_key] = Handler(api_key, min_version, max_version, fn)
        return fn

    return register


@attrs.frozen
class ErrorAnswer:
    fn: ErrorAnswerFn
    throttled: bool  # carries the throttle time (Kafka's getErrorResponse of IncrementalAlterConfigs does not)


ERROR_ANSWERS: dict[int, ErrorAnswer] = {}


def error_answer(api_key: int, throttled: bool = True) -> Callable[[ErrorAnswerFn], ErrorAnswerFn]:
    """Register ``fn(ctx, request, error)`` as Kafka's ``getErrorResponse`` of ``api_key``: the answer
    with ``error`` sent when the handler's own answer cannot be written (see the module docstring)."""

    def register(fn: ErrorAnswerFn) -> ErrorAnswerFn:
        if api_key in ERROR_ANSWERS:
            raise RuntimeError(f"{API_BY_KEY[api_key].name}: error answer registered twice")
        ERROR_ANSWERS[api_key] = ErrorAnswer(fn, throttled)
        return fn

    return register


def load_handlers() -> dict[int, Handler]:
    """Import every module of ``broker.handlers`` (each registers itself)."""
    from . import handlers

    for info in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"{handlers.__name__}.{info.name}")
    return REGISTRY


@attrs.define
class RequestContext:
    """What a handler may use: the broker, the connection and the request."""

    broker: Any
    connection: Any
    request: Request
    size: int = 0  # the request's header and body in bytes (Kafka's sizeInBytes: no length prefix), for quotas
    request_time_recorded: bool = False  # the request_percentage quota has had this request's time
    remote_s: float = 0.0  # time spent waiting for new data or the disk (Kafka's RemoteTimeMs)
    conversion_s: float = 0.0  # time spent converting message formats (Kafka's MessageConversionsTimeMs)
    throttle_ms: int = 0  # the longest throttle this request muted its connection for (``quotas.throttle``)

    def converted(self, seconds: float) -> None:
        """Count ``seconds`` of format conversion (up on Produce, down on Fetch, while sending too)."""
        self.conversion_s += seconds

    def waited(self, since: float) -> None:
        """Count the time from ``since`` (a ``time.perf_counter()``) as waiting, not handling."""
        self.remote_s += time.perf_counter() - since

    @property
    def version(self) -> int:
        return self.request.version

    def response(self, **fields: Any) -> Any:
        return message_class(self.request.api, False)(**fields)

    @property
    def principal(self) -> str:
        return getattr(self.connection, "principal", None) or "User:ANONYMOUS"

    @property
    def client_host(self) -> str:
        """The client's address, as ACLs name hosts (the connection's peer is ``ip:port``)."""
        return str(getattr(self.connection, "peer", "")).rpartition(":")[0]

    def authorized(self, op: AclOperation, rtype: ResourceType, name: str, *, log_denied: bool = True) -> bool:
        """May this request's principal do ``op`` to the resource? Always, without an authorizer."""
        auth = self.broker.authorizer
        return auth is None or auth.authorize(self.principal, self.client_host, op, rtype, name,
                                              self.request.api.name, log_denied)  # fmt: skip

    def authorized_cluster(self, op: AclOperation) -> bool:
        return self.authorized(op, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorized_by_type(self, op: AclOperation, rtype: ResourceType) -> bool:
        """May the principal do ``op`` to some resource of ``rtype``? (Kafka's ``authorizeByResourceType``.)"""
        auth = self.broker.authorizer
        return auth is None or auth.authorize_by_type(self.principal, self.client_host, op, rtype)

    def authorized_operations(self, rtype: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bitfield of a resource: all it has, without an authorizer."""
        auth = self.broker.authorizer
        if auth is None:
            return sum(1 << op for op in SUPPORTED_OPERATIONS[rtype])
        return auth.authorized_operations(self.principal, self.client_host, rtype, name)

    @property
    def advertised(self) -> tuple[str, int]:
        """This broker's host and port as the listener the client connected to advertises them."""
        return self.broker.advertised_for(getattr(self.connection, "listener", None))


class CloseConnection(Exception):
    """Raised by dispatch (or a handler) when Kafka would close the connection. A handler that closes it
    instead of answering (Produce with ``acks=0``) passes the answer it did not send as ``response``: its
    errors are counted all the same, as Kafka's ``RequestChannel.closeConnection`` counts them. ``level``:
    how loud the close is logged (a request Kafka cannot parse: ERROR, as its ``processChannelException``)."""

    def __init__(self, message: str, response: Any = None, level: int = logging.INFO) -> None:
        super().__init__(message)
        self.response = response
        self.level = level


NO_RESPONSE = object()


# With legacy.protocol.versions.enable=false, the lowest version Kafka 4.0.1 serves of each API whose old
# versions 4.0 removed (KIP-724: Produce, Fetch; KIP-896: ListOffsets, OffsetCommit, OffsetFetch, CreateTopics,
# DeleteTopics, DescribeConfigs). JoinGroup v0-1, removed in 4.0.0, came back in 4.0.1.
KAFKA_4_LOWEST = {0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 32: 1}


def enabled_range(broker: Any, h: Handler) -> tuple[int, int]:
    """The versions served now: the versions Kafka 4.0 removed may be switched off (``KAFKA_4_LOWEST``)."""
    low = h.min_version
    if not broker.config.legacy_protocol_versions_enable:
        low = max(low, KAFKA_4_LOWEST.get(h.api_key, low))
    return low, h.max_version


@attrs.frozen
class _UnsupportedApiVersions:
    """An ApiVersions at a version not served: answered in v0 with UNSUPPORTED_VERSION, not closed."""

    version: int
    correlation_id: int


def _decode(broker: Any, frame: bytearray) -> Request | _UnsupportedApiVersions:
    """The request in ``frame``, of an API with a handler serving its version now; for an ApiVersions at a
    version not served, what its fallback answer needs. Anything else closes the connection (Kafka's
    ``RequestContext.parseRequest`` and version checks): an unparsable header or body, an API with no
    handler, a version not served."""
    try:
        request = decode_request(frame)
    except UnsupportedVersionError as exc:
        if exc.header.api_key == API_VERSIONS:
            return _UnsupportedApiVersions(exc.header.api_version, exc.header.correlation_id)
        raise CloseConnection(str(exc), level=logging.ERROR) from None
    except InvalidRequestError as exc:
        raise CloseConnection(f"unparsable request: {exc}", level=logging.ERROR) from None
    h = REGISTRY.get(request.header.api_key)
    if h is None:
        raise CloseConnection(f"no handler for {request.api.name}", level=logging.ERROR)
    low, high = enabled_range(broker, h)
    if not low <= request.version <= high:
        if request.header.api_key == API_VERSIONS:
            return _UnsupportedApiVersions(request.version, request.header.correlation_id)
        raise CloseConnection(f"{request.api.name} v{request.version} is not enabled", level=logging.ERROR)
    return request


async def dispatch(broker: Any, connection: Any, frame: bytearray) -> list | object:
    """Handle one request frame; returns response chunks or ``NO_RESPONSE``."""
    request = _decode(broker, frame)
    if isinstance(request, _UnsupportedApiVersions):
        request_metrics.record_fallback(broker, request.version)  # Kafka's handler answers it
        return _unsupported_api_versions(request.correlation_id)
    h = REGISTRY[request.header.api_key]
    started = time.perf_counter()
    ctx = RequestContext(broker, connection, request, len(frame))
    timed = quotas.start_request_time(ctx)
    try:
        body, throttled = await _handle(h, ctx, started)
    except BaseException:
        if timed:  # the connection closes (or the task is cancelled): its watch must not outlive it
            broker.request_time.end()
        raise
    if timed:
        quotas.apply_request_quota(ctx)
    if throttled:
        quotas.carry_throttle(ctx, body)
    if body is NO_RESPONSE:
        request_metrics.record(ctx, started, None, sent=False)
        return NO_RESPONSE
    try:
        chunks = response_chunks(request.api, request.version, request.header.correlation_id, body)
    except Exception as exc:  # see the module docstring
        request_metrics.count_errors(ctx, body)
        return _error_answer_chunks(ctx, started, body, exc)
    done = request_metrics.record(ctx, started, body, sent=True)
    return [*chunks, request_metrics.AfterSent(done)]


async def _handle(h: Handler, ctx: RequestContext, started: float) -> tuple[Any, bool]:
    """The handler's answer, or the request's error answer when the handler fails unexpectedly (see the module
    docstring); and whether the answer takes the throttle time of a request quota."""
    request = ctx.request
    try:
        return await h.fn(ctx, request.body), True
    except CloseConnection as exc:
        if exc.response is not None:
            request_metrics.record(ctx, started, exc.response, sent=False)
        raise
    except MetadataDirFailed as exc:
        raise CloseConnection(f"{request.api.name} not answered: {exc}", level=logging.ERROR) from exc
    except Exception as exc:  # not BaseException: trio.Cancelled and KeyboardInterrupt pass through untouched
        return _failed(ctx, started, exc)


def _failed(ctx: RequestContext, started: float, exc: Exception) -> tuple[Any, bool]:
    """Kafka's ``handleError``: the error answer with UNKNOWN_SERVER_ERROR, logged at ERROR with the
    traceback; the connection is closed instead when there is none (Produce with ``acks=0``), its errors
    counted as Kafka's ``closeConnection`` counts them."""
    request = ctx.request
    _log_failure(ctx, exc, traceback=True)
    try:
        return _error_answer(ctx)
    except CloseConnection as close:  # Produce with acks=0: Kafka's null error response
        request_metrics.record(ctx, started, close.response, sent=False)
        raise
    except Exception as again:
        request_metrics.record(ctx, started, None, sent=False)
        raise CloseConnection(f"{request.api.name} not answered: {again}", level=logging.ERROR) from None


def _error_answer(ctx: RequestContext) -> tuple[Any, bool]:
    """The request's error answer with UNKNOWN_SERVER_ERROR (Kafka's ``getErrorResponse``) and whether it
    carries a throttle time; ``LookupError`` for an API without one."""
    builder = ERROR_ANSWERS.get(ctx.request.header.api_key)
    if builder is None:
        raise LookupError(f"no error answer for {ctx.request.api.name}")
    return builder.fn(ctx, ctx.request.body, ErrorCode.UNKNOWN_SERVER_ERROR), builder.throttled


def _log_failure(ctx: RequestContext, exc: Exception, traceback: bool) -> None:
    """Kafka's ``KafkaApis.handle``: "Unexpected error handling request", at ERROR, with the traceback."""
    request = ctx.request
    log.error("Unexpected error handling request %s v%d (correlation id %d, client id %.100s, principal %s): "
              "%s; answering %s", request.api.name, request.version, request.header.correlation_id,
              request.header.client_id, ctx.principal, exc, ErrorCode.UNKNOWN_SERVER_ERROR.name,
              exc_info=exc if traceback else None)  # fmt: skip


def _error_answer_chunks(ctx: RequestContext, started: float, body: Any, exc: Exception) -> list:
    """The request's error answer (UNKNOWN_SERVER_ERROR) in place of ``body``, which could not be written
    (``exc``); the connection is closed when the API has none or it cannot be written either."""
    request = ctx.request
    _log_failure(ctx, exc, traceback=not isinstance(exc, StringTooLongError))
    try:
        answer, throttled = _error_answer(ctx)
        if throttled and hasattr(answer, "throttle_time_ms"):
            answer.throttle_time_ms = getattr(body, "throttle_time_ms", 0)
        chunks = response_chunks(request.api, request.version, request.header.correlation_id, answer)
    except Exception as again:
        request_metrics.record(ctx, started, None, sent=False)
        raise CloseConnection(f"{request.api.name} answer not sent: {again}", level=logging.ERROR) from None
    done = request_metrics.record(ctx, started, answer, sent=True)
    return [*chunks, request_metrics.AfterSent(done)]


async def answer_before_login(broker: Any, connection: Any, frame: bytearray) -> list:
    """The answer to ApiVersions on a SASL connection not logged in yet (see the module docstring), decoded
    and checked as ``dispatch`` does; any other request closes the connection, as Kafka's authenticator
    refuses every API but ApiVersions and SaslHandshake (answered in ``sasl_auth``), whatever its version."""
    request = _decode(broker, frame)
    if isinstance(request, _UnsupportedApiVersions):
        return _unsupported_api_versions(request.correlation_id)
    if request.header.api_key != API_VERSIONS:
        raise CloseConnection(f"{request.api.name} before the SASL login")
    body = await REGISTRY[API_VERSIONS].fn(RequestContext(broker, connection, request, len(frame)), request.body)
    return response_chunks(request.api, request.version, request.header.correlation_id, body)


def _unsupported_api_versions(correlation_id: int) -> list:
    """ApiVersions at a version we do not serve: UNSUPPORTED_VERSION in v0, listing ApiVersions' own range."""
    api = API_BY_KEY[API_VERSIONS]
    cls = message_class(api, False)
    h = REGISTRY[API_VERSIONS]
    key = cls.ApiVersion(api_key=API_VERSIONS, min_version=h.min_version, max_version=h.max_version)
    body = cls(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[key])
    return response_chunks(api, 0, correlation_id, body)
