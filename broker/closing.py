"""How the broker ends a connection so that the client reads every answer it wrote.

Closing a socket whose receive buffer still holds bytes the broker has not
read (a request the client pipelined) makes the kernel send a reset (RST)
instead of an end of stream (FIN). A client that writes its next request
after that (a Java producer with requests in flight writes between two
reads) fails with ECONNRESET and drops the answers it had received but not
read yet; an idempotent producer then resends batches that were appended.
So a connection the broker ends (at a stop, after a protocol error, after
``connections.max.idle.ms``) ends in steps, within a bounded time:

1. over TLS, close_notify is sent;
2. ``lingering``: the socket is half-closed (``shutdown(SHUT_WR)``, a FIN
   after the answers already written) and what the client still sends is read
   and dropped until it closes its end (a client closes on the end of stream);
3. what has arrived meanwhile is read without waiting, then the socket
   closes: with nothing unread, the kernel ends with FIN, not RST.

Steps 1 and 2 get ``CLOSE_GRACE_SECONDS``. A client that went away first
(end of stream, a broken connection) gets no lingering.

A stop (the server's scope cancelled, as on SIGTERM) gives all connections
one grace period together, ``STOP_GRACE_SECONDS`` from the stop
(``Closing.stop``): the request being handled finishes (a Produce may have
appended: its answer must go out) and its answer is written, then the steps
above; whatever is still under way when the grace ends is cut, so a client
that reads nothing cannot hold the stop. Requests not yet handled are
dropped, never appended. A connection's life runs in one shielded scope
(``Closing.serving``), so the stop does not cancel it; ``stop`` moves that
scope's deadline to the end of the grace and cancels at once a connection's
wait for its next request (``Serving.waiting``), and the connection checks
``stopping`` before each request; ``on_stop`` hooks end the waits a request
may be in (the broker's ``stop_waits``: a long-polling Fetch answers with
what there is, a parked JoinGroup or SyncGroup NOT_COORDINATOR). That costs
nothing per request (a trio cancel scope per request measured 12 us on our
2-core VMs). Kafka's
SocketServer closes its channels at shutdown with whatever they still hold;
this goes further so that no answer written is lost to a reset.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from collections.abc import Callable, Iterator

import attrs
import trio

from .tls_stream import TlsStream

STOP_GRACE_SECONDS = 1.0  # from the stop: shared by every connection (docker stop waits 10 s)
CLOSE_GRACE_SECONDS = 1.0  # one connection's close_notify and lingering outside a stop
DROP_BYTES = 64 * 1024  # read and dropped at a time while lingering
_DROP_ROUNDS = 256  # reads of what already arrived, before the close (at most 16 MiB)


@attrs.define(eq=False)
class Serving:
    """One connection's life under ``Closing.serving``: its scope and, while it waits for a request, that wait's."""

    scope: trio.CancelScope | None  # None: a connection no server stops (built by a test), cancelled as usual
    waiting: trio.CancelScope | None = None


class Closing:
    """The deadlines of one server's connections: none until the stop, then the end of the grace."""

    def __init__(self, grace_s: float | None = None) -> None:
        self.grace_s = STOP_GRACE_SECONDS if grace_s is None else grace_s
        self.stop_deadline = math.inf
        self._scopes: set[trio.CancelScope] = set()
        self._serving: set[Serving] = set()
        self.on_stop: list[Callable[[], None]] = []  # run at the stop, after the deadlines are set

    @property
    def stopping(self) -> bool:
        return self.stop_deadline != math.inf

    def stop(self) -> None:
        """The server stops: connections waiting for a request end now, the rest one grace period from now."""
        if self.stopping:
            return
        self.stop_deadline = trio.current_time() + self.grace_s
        for scope in [*self._scopes, *(s.scope for s in self._serving if s.scope is not None)]:
            scope.deadline = min(scope.deadline, self.stop_deadline)
        for serving in self._serving:
            if serving.waiting is not None:
                serving.waiting.cancel()
        for hook in self.on_stop:
            hook()

    @contextlib.contextmanager
    def serving(self) -> Iterator[Serving]:
        """A connection's life: the stop does not cancel it (see the module); its own cancellation is swallowed."""
        serving = Serving(trio.CancelScope(shield=True, deadline=self.stop_deadline))
        self._serving.add(serving)
        try:
            with serving.scope:  # type: ignore[union-attr]
                yield serving
        finally:
            self._serving.discard(serving)

    @contextlib.contextmanager
    def finishing(self, deadline: float = math.inf) -> Iterator[trio.CancelScope]:
        """A scope the stop does not cancel, only ends at ``deadline`` or the end of the grace, if sooner.

        Its own cancellation is swallowed at its end: check ``cancelled_caught`` after it."""
        scope = trio.CancelScope(shield=True, deadline=min(deadline, self.stop_deadline))
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)


async def stop_at_cancel(closing: Closing) -> None:
    """Run beside the connections: when the server's scope is cancelled, the grace period begins."""
    try:
        await trio.sleep_forever()
    finally:
        closing.stop()


async def close_stream(stream: trio.SocketStream | TlsStream, closing: Closing, linger: bool) -> None:
    """End a connection's stream in the module docstring's steps; never raises, never waits past the grace."""
    transport = stream.transport_stream if isinstance(stream, TlsStream) else stream
    with trio.CancelScope(shield=True):
        with closing.finishing(trio.current_time() + CLOSE_GRACE_SECONDS):
            if isinstance(stream, TlsStream):
                stream.sender = transport.send_all  # bounded by this scope, not by the idle time (socket_send)
                await stream.send_close_notify()
            if linger:
                await _linger(transport)
        _drop_arrived(transport.socket)
        await trio.aclose_forcefully(stream)


async def _linger(transport: trio.SocketStream) -> None:
    """Half-close, then read and drop what the client sends until it closes its end."""
    try:
        transport.socket.shutdown(socket.SHUT_WR)
        while await transport.receive_some(DROP_BYTES):
            pass
    except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _drop_arrived(sock) -> None:
    """Read, without waiting, what has arrived: a socket closed with nothing unread ends with FIN, not RST."""
    try:
        fd = sock.fileno()
        for _ in range(_DROP_ROUNDS):
            if not os.read(fd, DROP_BYTES):
                return
    except OSError:  # BlockingIOError: nothing more has arrived
        pass
