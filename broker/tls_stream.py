"""A server-side TLS stream for one connection: OpenSSL through ``ssl.SSLObject`` and memory buffers.

trio's ``SSLStream`` is general (concurrent send and receive, any
transport); a connection here uses its stream from one task, one step at a
time, so this one can be simpler and faster where Kafka clients need it:

* a receive decrypts every TLS record already received, not just one:
  librdkafka writes a produce request as many small records (about one per
  message), and one trip through the event loop per record cost most of a
  TLS produce's time;
* ``receive_into`` decrypts straight into a frame's buffer;
* a handshake that fails still sends OpenSSL's alert before the error is
  raised (Java clients report an authentication failure only when the alert
  arrives; on a bare close they retry).

Errors are trio's: ``trio.BrokenResourceError`` (its ``__cause__`` is the
``ssl.SSLError`` or ``OSError``), ``trio.ClosedResourceError`` after
``aclose``. A peer's close (``close_notify``, or a plain end of stream) reads
as ``b""``. ``send_close_notify`` sends close_notify and leaves the socket
open (the connection half-closes and drains it, ``closing.py``); ``aclose``
sends it too, unless sent already. Renegotiation is refused (the listener's context sets
``OP_NO_RENEGOTIATION``), so reads never need to write and writes never
need to read.
"""

from __future__ import annotations

import ssl

import trio

from .ssl_principal import DEFAULT_RULES, Rule

READ_BYTES = 256 * 1024  # ciphertext read from the socket at a time
WRITE_BYTES = 256 * 1024  # plaintext encrypted at a time before it is sent


class TlsStream(trio.abc.Stream):
    def __init__(self, transport: trio.SocketStream, context: ssl.SSLContext) -> None:
        self.transport_stream = transport
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._closed = False
        self._notified = False  # close_notify sent
        self._scratch = memoryview(bytearray(READ_BYTES))  # plaintext of a receive_some, copied out
        self.sender = transport.send_all  # how ciphertext goes out (the broker's bounds the waits: socket_send)

    async def do_handshake(self) -> None:
        while True:
            try:
                self._ssl.do_handshake()
                break
            except ssl.SSLWantReadError:
                await self._flush()
                await self._fill()
            except ssl.SSLError as exc:
                await self._flush()  # the alert that tells the client why
                raise trio.BrokenResourceError(f"TLS handshake failed: {exc}") from exc
        await self._flush()  # the server's last flight (and TLS 1.3 session tickets)

    def getpeercert(self) -> dict | None:
        return self._ssl.getpeercert()

    @property
    def principal_rules(self) -> tuple[Rule, ...]:
        """The listener's ``ssl.principal.mapping.rules``, parsed with its context (``ssl_config``)."""
        return getattr(self._ssl.context, "principal_rules", DEFAULT_RULES)

    def version(self) -> str | None:
        return self._ssl.version()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        size = max_bytes or READ_BYTES
        view = self._scratch[:size] if size <= READ_BYTES else memoryview(bytearray(size))
        n = await self.receive_into(view)
        return bytes(view[:n])

    async def receive_into(self, target: memoryview) -> int:
        """Decrypt into ``target`` every record that has arrived (waiting for one if none has); 0 at the end."""
        self._check_open()
        while True:
            filled = self._decrypt_into(target)
            if filled is not None:
                return filled
            await self._fill()

    def _decrypt_into(self, target: memoryview) -> int | None:
        """Bytes decrypted into ``target``, 0 at the end of the stream, None when a record is still incomplete."""
        filled = 0
        while filled < len(target):
            try:
                n = self._ssl.read(len(target) - filled, target[filled:])
            except ssl.SSLWantReadError:
                break
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):  # close_notify, or the socket's end
                return filled
            except ssl.SSLError as exc:
                raise trio.BrokenResourceError(f"TLS read failed: {exc}") from exc
            if n == 0:
                return filled
            filled += n
        return filled or None

    async def send_all(self, data) -> None:
        self._check_open()
        view = memoryview(data).cast("B")
        for start in range(0, len(view), WRITE_BYTES):
            try:
                self._ssl.write(view[start : start + WRITE_BYTES])
            except ssl.SSLError as exc:
                raise trio.BrokenResourceError(f"TLS write failed: {exc}") from exc
            await self._flush()

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport_stream.wait_send_all_might_not_block()

    async def send_close_notify(self) -> None:
        """Send close_notify, once (the peer's is not awaited); the socket stays open. Never raises."""
        if self._notified:
            return
        self._notified = True
        try:
            self._ssl.unwrap()  # queues close_notify
        except ssl.SSLError:
            pass
        try:
            await self._flush()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.send_close_notify()
        finally:
            await self.transport_stream.aclose()

    async def _flush(self) -> None:
        if self._outgoing.pending:
            await self.sender(self._outgoing.read())

    async def _fill(self) -> None:
        data = await self.transport_stream.receive_some(READ_BYTES)
        if data:
            self._incoming.write(data)
        else:
            self._incoming.write_eof()

    def _check_open(self) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the TLS stream is closed")
