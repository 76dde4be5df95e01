"""The request metrics of each request, recorded as Kafka's ``RequestChannel`` records them.

Kafka's ``updateRequestMetrics`` runs once a response is out (or, for a
request answered by nothing, once that is decided): it marks
``RequestsPerSec{request,version}`` and records the request's times in the
``RequestMetrics`` histograms of its name (tagged by name only), and for a
Fetch under ``FetchConsumer`` or ``FetchFollower`` as well. The error codes
of every response sent (or of the one a closed connection stood for) go to
``ErrorsPerSec{request,error}`` under the API's own name
(``protocol.error_counts``).

The times here, in Kafka's parts: the request arrives when ``dispatch``
takes it (there is no request queue: ``RequestQueueTimeMs`` is 0); the
handler's time is ``LocalTimeMs`` but for what it spent waiting for new data
or for the disk (a Fetch's long poll, an ``acks=-1`` Produce's fsync), which
is ``RemoteTimeMs`` as Kafka's purgatories make it; ``ThrottleTimeMs`` is
the throttle the response carried; no response queue (0); and
``ResponseSendTimeMs`` lasts until the connection has sent the response (or
found its peer gone: Kafka records the responses in flight on a connection
that closes), which ``dispatch`` learns from the ``AfterSent`` chunk it puts
last.
``TotalTimeMs`` runs from the arrival to the response sent. An answer that
cannot be written has its errors counted all the same, and the error answer
sent in its place (``dispatch``) is then recorded as the request's answer.
``MessageConversionsTimeMs`` is recorded for every Produce and Fetch (under
those names only), 0 when nothing was converted, as Kafka records it: the
time up-converting (Produce) or down-converting (Fetch, sending included).
"""

from __future__ import annotations

import time
from typing import Any, Callable

from protocol import ErrorCode, Request
from protocol.error_counts import error_counts


class AfterSent(bytes):
    """An empty last chunk of a response: the connection calls ``after_sent()`` once the response is out."""

    def __new__(cls, fn: Callable[[], None]) -> "AfterSent":
        chunk = super().__new__(cls, b"")
        chunk._fn = fn  # type: ignore[attr-defined]
        return chunk

    def after_sent(self) -> None:
        self._fn()  # type: ignore[attr-defined]


def metric_names(request: Request) -> list[str]:
    """The RequestMetrics names a request is counted under."""
    api = request.api.name
    if api != "Fetch":
        return [api]
    body = request.body
    replica_id = body.replica_id if request.version < 15 else body.replica_state.replica_id
    return [api, "FetchFollower" if replica_id >= 0 else "FetchConsumer"]


def record(ctx: Any, started: float, body: Any, sent: bool) -> Callable[[], None]:
    """Count a handled request (``ctx``) whose answer is ``body`` (``None``: no answer); the times are
    recorded by the function returned, to call once the answer is out (at once when ``sent`` is False)."""
    handled = time.perf_counter()
    broker, request, api = ctx.broker, ctx.request, ctx.request.api.name
    if body is not None:
        count_errors(ctx, body)
    throttle_ms = getattr(body, "throttle_time_ms", 0) or 0

    def done() -> None:
        now, remote_s = time.perf_counter(), ctx.remote_s
        times = {"requestqueuetimems": 0.0, "localtimems": (handled - started - remote_s) * 1000,
                 "remotetimems": remote_s * 1000, "throttletimems": float(throttle_ms),
                 "responsequeuetimems": 0.0, "responsesendtimems": (now - handled) * 1000,
                 "totaltimems": (now - started) * 1000}  # fmt: skip
        broker.metrics.observe_request(metric_names(request), request.version, times)
        if api in ("Produce", "Fetch"):  # Kafka's histogram of every such request, 0 when nothing converted
            broker.metrics.conversion_time.observe((api,), ctx.conversion_s * 1000)

    if not sent:
        done()
    return done


def count_errors(ctx: Any, body: Any) -> None:
    """Count the error codes of ``body``, an answer to ``ctx``'s request; ``record`` does for the answer sent.
    Kafka counts an answer's errors before writing it, so one it cannot write is counted too (``dispatch``)."""
    api = ctx.request.api.name
    ctx.broker.metrics.count_errors(api, error_counts(api, body))


def record_fallback(broker: Any, version: int) -> None:
    """An ApiVersions above our range, answered UNSUPPORTED_VERSION: Kafka's handler answers it, so it
    is counted, at the version asked."""
    zero = dict.fromkeys(("requestqueuetimems", "localtimems", "remotetimems", "throttletimems",
                          "responsequeuetimems", "responsesendtimems", "totaltimems"), 0.0)  # fmt: skip
    broker.metrics.observe_request(["ApiVersions"], version, zero)
    broker.metrics.count_errors("ApiVersions", {ErrorCode.UNSUPPORTED_VERSION: 1})
