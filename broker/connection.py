"""One client connection: read frames, process them in order, write answers.

Kafka handles one request per connection at a time (it mutes the channel
while a request is in flight), so answers always come back in request order;
we get the same by processing frames sequentially in the connection's task.
A frame that Kafka would refuse closes the connection (``CloseConnection``),
and so does ``connections.max.idle.ms`` without a byte from the client (a
request in progress, such as a long-polling Fetch, is not idle time). A
handler that fails unexpectedly does not: ``dispatch`` answers its request
UNKNOWN_SERVER_ERROR, as Kafka's ``handleError`` does, and the connection
serves on; only a failure outside the handlers reaches the catch-all in
``serve``, which logs it with its traceback and closes the connection. A
handler that finds the client over a quota sets ``throttle``: the answer
goes out at once and the connection then reads nothing more for that long
(KIP-219: Kafka mutes the channel after the response, for every version).

However it ends, unless the client went away first, the connection ends
as ``closing.py`` tells: a half-close after the answers written, what the
client still sends read and dropped until it closes, so the kernel ends with
FIN rather than a reset that would lose answers the client had not read. When
the server stops (its scope cancelled) no further request is handled; the
request under way (a Produce may have appended) and its answer are finished
first, within the stop's grace period (``Closing.serving``).

A large request frame is received straight into its own buffer
(``FrameBuffer.receive_buffer`` and ``recv_into``), so its bytes are copied
only by the kernel.

On an SSL or SASL_SSL listener ``stream`` is a ``TlsStream`` and the
TLS handshake comes first. A handshake that fails (no client certificate
when ``ssl.client.auth=required``, a plaintext client, no common TLS version)
is answered with OpenSSL's alert (Java clients report an authentication
failure only when it arrives), closes the connection and counts as a failed
authentication; one that succeeds counts as a successful one on SSL
listeners, as Kafka's selector counts them. Over TLS the kernel cannot send file regions, so they are read and
written through the TLS stream (as Kafka's ``SslTransportLayer`` does), and
large frames are received through it too.

On a SASL listener the frames before authentication go to the
connection's ``SaslAuthenticator`` (``sasl_auth.py``), which answers the
handshake and the login (PLAIN or SCRAM) itself and hands only ApiVersions
on to ``dispatch.answer_before_login``. As in Kafka, whose authenticator
writes these answers itself, none of them goes through the request metrics,
the request quota or the ``outgoing_byte`` count. Each login that succeeds or fails is counted per listener
(``kafka_server_socket_server_metrics_{successful,failed}_authentication_total``
and ``_rate``, Kafka's socket-server-metrics; re-authentications apart, in
``..._reauthentication_total`` and ``_rate``, with their latency; first logins
of clients that cannot re-authenticate also in
``..._successful_authentication_no_reauth_total``: ``login_metrics.py``).

A SASL session with a lifetime (KIP-368: the OAUTHBEARER token's ``exp``,
``connections.max.reauth.ms``) is checked on each request once logged in:
a SaslHandshake begins re-authentication on the same connection (the
authenticator takes the frames again until it completes), and any other
request after the session's end closes the connection, as Kafka's
SocketServer does (counted in ``expired_connections_killed_count``).

Responses are lists of chunks. ``bytes`` chunks are coalesced and written; on
a plain socket they go straight to the kernel when its buffer takes them
all (the usual case for an answer of a few hundred bytes), which spares the
scheduling round trio's ``send_all`` takes after every send, and whatever
the kernel does not take follows once the socket has room, each wait bounded
by ``connections.max.idle.ms`` (``socket_send.py``). Each request still
passes a checkpoint: receiving one always does, and ``_drain`` adds one
before each further frame it finds already buffered. A ``FileRegion`` chunk (a slice of a segment file) is written
with ``os.sendfile`` straight from the page cache, waiting for the socket to
become writable whenever the kernel's buffer is full; a ``ConvertedRecords``
chunk (Fetch v0-v3) converts and writes itself.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import ssl
from typing import Any

import attrs
import trio

from protocol import (NEED_DATA, FrameBuffer, FrameTooLargeError, InvalidRequestError, StringTooLongError,
                      UnsupportedVersionError)  # fmt: skip

from .closing import Closing, Serving, close_stream
from .converted_send import ConvertedRecords
from .dispatch import NO_RESPONSE, CloseConnection, answer_before_login, dispatch
from .request_metrics import AfterSent
from .quotas import record_send_time
from .sasl_auth import SASL_HANDSHAKE, SaslAuthenticator, UnexpectedRequest
from .socket_send import send_plain, wait_writable
from .ssl_config import peer_principal
from .ssl_principal import NoMatchingRule
from .tls_stream import TlsStream

log = logging.getLogger(__name__)
DIRECT_SEND_BYTES = 256 * 1024  # a response chunk this big is sent without joining
RECEIVE_SIZE = 256 * 1024
TLS_READ_BYTES = 1024 * 1024  # a file region sent over TLS is read this much at a time


@attrs.define(eq=False)
class FileRegion:
    """``count`` bytes of an open file from ``position``, sent with sendfile."""

    fileno: int
    position: int
    count: int
    keepalive: Any = None  # holds the file object open until the send is done

    def __len__(self) -> int:
        return self.count

    def read(self) -> bytes:
        return os.pread(self.fileno, self.count, self.position)


@attrs.define(eq=False)
class Connection:
    broker: Any
    stream: trio.SocketStream | TlsStream
    peer: str = ""
    listener: str = ""  # the listener's name: what Metadata advertises to this client
    security_protocol: str = "PLAINTEXT"  # the listener's: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    requests: int = 0
    client_software: tuple[str, str] | None = None
    auth: SaslAuthenticator | None = None  # SASL listeners: the handshake not yet done
    principal: str = "User:ANONYMOUS"  # an SSL client's certificate subject; a SASL login's user
    throttle: int | None = None  # ms to read nothing once the answer is out: set by a handler over a client quota
    answering: tuple[str, str] | None = None  # (user, client id) of the answer to send, while request quotas are on
    read_ahead: dict = attrs.Factory(dict)  # Fetch v0-v3 down-conversions begun for the next Fetch (read_ahead)
    closing: Closing | None = None  # the server's: the grace period of a stop (closing.py); None: no server's

    async def serve(self) -> None:
        linger = True  # the client may still be sending: read until it closes (closing.py); not if it went away
        try:
            with self.closing.serving() if self.closing else contextlib.nullcontext(Serving(None)) as serving:
                linger = await self._serve(serving)
        except (CloseConnection, FrameTooLargeError) as exc:  # Kafka's Selector warns of a frame size it refuses
            level = exc.level if isinstance(exc, CloseConnection) else logging.WARNING
            log.log(level, "closing connection from %s: %s", self.peer, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            linger = False
        except Exception:  # a bug outside the handlers (dispatch answers theirs) must not take the broker down
            log.exception("closing connection from %s after an unexpected error", self.peer)
        finally:  # also on a stop: the answers written are read before the end of stream
            await close_stream(self.stream, self.closing or Closing(), linger)

    async def _serve(self, serving: Serving) -> bool:
        """Requests until the client closes (False: no lingering), the connection idles or the server stops."""
        config = self.broker.config
        frames = FrameBuffer(config.sasl_server_max_receive_size if self.auth else config.socket_request_max_bytes)
        idle_s = config.connections_max_idle_ms / 1000
        if isinstance(self.stream, TlsStream):  # its records go out as a plain socket's answers (``_send``)
            sock = self.stream.transport_stream.socket
            self.stream.sender = lambda data: send_plain(sock, data, idle_s)
        ready = False
        with trio.move_on_after(idle_s):
            ready = not isinstance(self.stream, TlsStream) or await self._tls_handshake()
        if not ready:  # the handshake failed or took longer than connections.max.idle.ms
            return False
        while not self.stopping:
            waiting = serving.waiting = trio.move_on_after(idle_s)  # the stop cancels it at once
            with waiting:
                more = await self._receive(frames)
            serving.waiting = None
            if waiting.cancelled_caught:  # idle for connections.max.idle.ms, or the server stops
                return True
            if not more:
                return False
            await self._drain(frames)
        return True

    @property
    def stopping(self) -> bool:
        return self.closing is not None and self.closing.stopping

    async def _tls_handshake(self) -> bool:
        """The TLS handshake; False (counted as a failed login unless the client just went away) if it fails."""
        stream: TlsStream = self.stream  # type: ignore[assignment]
        try:
            await stream.do_handshake()
        except trio.BrokenResourceError as exc:
            cause = exc.__cause__
            if isinstance(cause, ssl.SSLError) and not isinstance(cause, ssl.SSLEOFError):
                log.info("closing connection from %s: TLS handshake failed (%s)", self.peer, cause.reason or cause)
                self._count_login("failed")
            return False
        try:
            self.principal = peer_principal(stream.getpeercert(), stream.principal_rules)
        except NoMatchingRule as exc:  # Kafka fails the client's authentication and closes the connection
            log.info("closing connection from %s: no principal for its certificate (%s)", self.peer, exc)
            self._count_login("failed")
            return False
        log.debug("TLS handshake with %s done: %s, %s", self.peer, stream.version(), self.principal)
        if self.auth is None:  # SSL: the handshake is the login; SASL_SSL counts its SASL login
            self._count_login("successful")
        return True

    async def _receive(self, frames: FrameBuffer) -> bool:
        """Receive some bytes into ``frames`` (a large frame straight into its buffer); False at end of stream."""
        target = frames.receive_buffer()
        if target is None:
            data = await self.stream.receive_some(RECEIVE_SIZE)
            frames.receive_data(data)
            return bool(data)
        if isinstance(self.stream, TlsStream):
            return await self._receive_tls_frame(frames, target)
        try:
            n = await self.stream.socket.recv_into(target)
        except OSError as exc:  # as SocketStream.receive_some reports it
            raise trio.BrokenResourceError(str(exc)) from exc
        frames.received_into(n)
        return n > 0

    async def _receive_tls_frame(self, frames: FrameBuffer, target: memoryview) -> bool:
        """The rest of a large frame, decrypted straight into its buffer."""
        filled = 0
        while filled < len(target):
            n = await self.stream.receive_into(target[filled:])  # type: ignore[union-attr]
            if not n:
                break
            filled += n
        frames.received_into(filled)
        return filled == len(target)

    async def _drain(self, frames: FrameBuffer) -> None:
        first = True
        while (frame := frames.next_frame()) is not NEED_DATA:
            if not first:  # frames received together: let the other connections in between
                await trio.lowlevel.checkpoint()
            first = False
            if self.stopping:  # the server stops (maybe during that checkpoint): requests not handled yet are
                return  # dropped, never appended
            self.requests += 1
            if self.auth is not None and self.auth.complete:
                self._check_session(frame)
            if self.auth is not None and not self.auth.complete:
                await self._authenticate(frame)
                if self.auth.complete:  # logged in: frames up to socket.request.max.bytes from now on
                    frames.max_frame_size = self.broker.config.socket_request_max_bytes
                    self.principal = f"User:{self.auth.principal}"
                continue
            response = await dispatch(self.broker, self, frame)  # not cut by a stop before the grace ends
            throttle_ms, self.throttle = self.throttle, None
            if response is not NO_RESPONSE:
                await self._send_timed(response)
            if throttle_ms:  # KIP-219: answered at once, then muted for the throttle time
                await trio.sleep(throttle_ms / 1000)

    def _check_session(self, frame: bytearray) -> None:
        """KIP-368 on a logged-in SASL connection: a SaslHandshake may begin re-authentication; any other
        request once the session has expired closes the connection (Kafka's ``processCompletedReceives``)."""
        auth, now = self.auth, self.broker.clock()
        if frame[:2] == SASL_HANDSHAKE.to_bytes(2, "big") and auth.begin_reauthentication(now):  # type: ignore[union-attr]
            return
        if auth.expired(now):  # type: ignore[union-attr]
            self.broker.metrics.expired_connections_killed.labels(self.listener).inc()
            raise CloseConnection(f"the SASL session of {self.principal} expired")

    async def _send_timed(self, response: list) -> None:
        """Send an answer; while request quotas are on, its sending time counts for its client too."""
        identity, self.answering = self.answering, None
        timer = self.broker.request_time
        if identity is None or not timer.installed:
            await self.send_chunks(response)
            return
        timer.begin()
        try:
            await self.send_chunks(response)
        finally:
            record_send_time(self.broker, identity, timer.end())

    async def _authenticate(self, frame: bytearray) -> None:
        """One frame before a SASL_PLAINTEXT connection is authenticated (``sasl_auth.py``)."""
        try:
            step = self.auth.handle(frame)  # type: ignore[union-attr]
            chunks = step.chunks
            if chunks is None:  # ApiVersions, answered as after the login, but unmetered
                chunks = await answer_before_login(self.broker, self, frame)
                self.auth.versions_answered(chunks)  # type: ignore[union-attr, arg-type]
        except (UnexpectedRequest, InvalidRequestError, UnsupportedVersionError) as exc:  # Kafka: an I/O error
            raise CloseConnection(str(exc)) from None
        except StringTooLongError as exc:  # a login answer quoting a long name: Kafka's authenticator, which
            # writes these answers itself, outside KafkaApis, closes the connection (Selector's catch)
            raise CloseConnection(f"login answer not sent: {exc}", level=logging.ERROR) from None
        if step.close_after or self.auth.complete:  # type: ignore[union-attr]
            self._count_login("failed" if step.close_after else "successful")
        if chunks:
            await self.send_chunks(chunks, counted=False)
        if step.close_after:  # Kafka holds a failed login open a little, so retries cannot hammer it
            await trio.sleep(self.broker.config.connection_failed_authentication_delay_ms / 1000)
            raise CloseConnection(step.close_after)

    def _count_login(self, outcome: str) -> None:
        """A login that ended, in Kafka's socket-server-metrics (``login_metrics.py``; a refused mechanism is a
        failed login too). Only SaslAuthenticate v1+ shows a client can re-authenticate (never TLS alone)."""
        auth, succeeded = self.auth, outcome == "successful"
        again = auth is not None and auth.reauthenticating
        self.broker.metrics.logins.record(
            self.listener, f"{outcome}_{'re' if again else ''}authentication", self.broker.clock(),
            no_reauth=succeeded and not again and not (auth is not None and auth.client_supports_reauth),
            latency_ms=auth.reauthentication_latency_ms if succeeded and again else None)  # type: ignore[union-attr]

    async def send_chunks(self, chunks: list, counted: bool = True) -> None:
        """Send a response: small chunks joined, file regions by ``sendfile``, big buffers as they are. Its
        request times (``AfterSent``) are recorded even when the peer goes away meanwhile, as Kafka records
        the responses in flight on a connection that closes. ``counted``: its bytes in ``outgoing_byte``
        (not the login's answers: Kafka's authenticator writes them past the selector's count)."""
        try:
            await self._send_chunks(chunks, counted)
        finally:
            for chunk in chunks:
                if isinstance(chunk, AfterSent):
                    chunk.after_sent()

    async def _send_chunks(self, chunks: list, counted: bool) -> None:
        pending: list = []
        for chunk in chunks:
            region = isinstance(chunk, FileRegion)
            converted = isinstance(chunk, ConvertedRecords)
            if not (region or converted) and len(chunk) < DIRECT_SEND_BYTES:
                pending.append(chunk)
                continue
            if pending:
                await self._send_joined(pending)
                pending = []
            if region:
                await self._sendfile(chunk)
            elif converted:
                await chunk.send(self._send)
            else:  # a big buffer is not copied into one more
                await self._send(chunk)
        if pending:
            await self._send_joined(pending)
        if counted:
            self.broker.metrics.bytes_sent(sum(len(c) for c in chunks))
        for chunk in chunks:
            if isinstance(chunk, ConvertedRecords):
                chunk.after_sent()

    async def _send_joined(self, chunks: list) -> None:
        """Small chunks as one write: on a plain socket straight to the kernel first (module docstring)."""
        await self._send(b"".join(chunks))

    async def _send(self, data) -> None:
        """``data`` to the client; one that reads nothing for connections.max.idle.ms is gone (socket_send.py)."""
        stream = self.stream
        if type(stream) is trio.SocketStream:
            await send_plain(stream.socket, data, self.broker.config.connections_max_idle_ms / 1000)
        else:  # TLS: its records go out through ``send_plain`` too (``TlsStream.sender``, set by ``_serve``)
            await stream.send_all(data)

    async def _sendfile(self, region: FileRegion) -> None:
        if isinstance(self.stream, TlsStream):
            for start in range(0, region.count, TLS_READ_BYTES):
                size = min(TLS_READ_BYTES, region.count - start)
                data = os.pread(region.fileno, size, region.position + start)
                await self._send(data + bytes(size - len(data)))  # a shrunk file is padded
            return
        sock = self.stream.socket
        sent, total = 0, region.count
        while sent < total:
            try:
                n = os.sendfile(sock.fileno(), region.fileno, region.position + sent, total - sent)
            except BlockingIOError:
                n = -1
            except OSError as exc:
                if exc.errno in (errno.EINVAL, errno.ENOSYS):  # no sendfile here: copy instead
                    await self._send(os.pread(region.fileno, total - sent, region.position + sent))
                    return
                raise trio.BrokenResourceError(str(exc)) from exc
            if n == 0:  # the file shrank under us: pad so the frame length stays right
                await self._send(bytes(total - sent))
                return
            if n < 0:
                await wait_writable(sock, self.broker.config.connections_max_idle_ms / 1000)
            else:
                sent += n
