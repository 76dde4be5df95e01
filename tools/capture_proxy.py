"""A recording TCP proxy that cuts Kafka traffic into frames.

How it works:

* ``RecordingProxy`` runs an asyncio server on ``127.0.0.1:0`` in a background
  thread.  Every accepted client connection gets its own upstream connection to
  the peer broker and two pumps, one per direction.
* Each pump feeds the bytes it reads into a ``FrameSplitter`` which cuts the
  stream at Kafka's 4-byte big-endian size prefix and hands out whole frames
  (prefix included).  Frames are forwarded unchanged, one by one.
* A request frame's header starts with ``api_key`` int16, ``api_version``
  int16 and ``correlation_id`` int32; the pump remembers the first two under the
  correlation id (per connection, since ids are per connection).  A response
  frame starts with the correlation id, which names its request.
* Every frame is stored as a ``CapturedFrame`` together with the context
  (client, settings) that was current when its connection was accepted; a
  connection accepted while the context is ``None`` is forwarded but not
  recorded (used for setup steps).
* ``rewrite`` optionally swaps a byte string in the *forwarded* copy of
  responses (never in the recorded copy).  It is used to replace the peer's own
  ``host + int32 port`` in Metadata/FindCoordinator answers by the proxy's, of
  the same length, for peers that cannot be told what address to advertise.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
from concurrent.futures import Future

import attrs

REQUEST = "request"
RESPONSE = "response"


@attrs.frozen
class CaptureContext:
    """Who is talking through the proxy right now."""

    client: str
    settings: str
    peer: str


@attrs.frozen
class CapturedFrame:
    """One whole Kafka frame as seen on the wire, size prefix included."""

    order: int
    connection: int
    direction: str
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    data: bytes
    context: CaptureContext


class FrameError(Exception):
    """The byte stream is not a sequence of size-prefixed frames."""


class FrameSplitter:
    """Accumulates stream bytes and returns each completed frame."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[bytes]:
        """Add ``chunk``; return the frames (with prefix) it completed."""
        self._buffer += chunk
        frames: list[bytes] = []
        while len(self._buffer) >= 4:
            (size,) = struct.unpack_from(">i", self._buffer)
            if size < 0:
                raise FrameError(f"negative frame size {size}")
            if len(self._buffer) < 4 + size:
                break
            frames.append(bytes(self._buffer[: 4 + size]))
            del self._buffer[: 4 + size]
        return frames


def request_header(frame: bytes) -> tuple[int, int, int] | None:
    """``(api_key, api_version, correlation_id)`` of a request frame, if it has one."""
    if len(frame) < 12:
        return None
    return struct.unpack_from(">hhi", frame, 4)


def response_correlation_id(frame: bytes) -> int | None:
    """The correlation id a response frame starts with, if it has one."""
    if len(frame) < 8:
        return None
    return struct.unpack_from(">i", frame, 4)[0]


class _Connection:
    """State shared by the two pumps of one proxied connection."""

    def __init__(self, number: int, context: CaptureContext | None) -> None:
        self.number = number
        self.context = context
        self.pending: dict[int, tuple[int, int]] = {}


class RecordingProxy:
    """Forward 127.0.0.1:<port> to a peer broker and record every frame."""

    def __init__(self) -> None:
        self.upstream: tuple[str, int] | None = None
        self.rewrite: tuple[bytes, bytes] | None = None
        self.context: CaptureContext | None = None
        self.port = 0
        self._frames: list[CapturedFrame] = []
        self._lock = threading.Lock()
        self._order = itertools.count()
        self._connections = itertools.count()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def start(self) -> int:
        """Start listening on 127.0.0.1:0; return the port."""
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def stop(self) -> None:
        """Close the listener and stop the background loop."""
        if self._server is not None:
            self._server.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)

    def frames(self) -> list[CapturedFrame]:
        """A copy of everything recorded so far, in capture order."""
        with self._lock:
            return list(self._frames)

    def _call(self, coroutine):  # type: ignore[no-untyped-def]
        future: Future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout=10)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.upstream is None:
            writer.close()
            return
        connection = _Connection(next(self._connections), self.context)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self._pump(reader, up_writer, connection, REQUEST),
            self._pump(up_reader, writer, connection, RESPONSE),
            return_exceptions=True,
        )

    async def _pump(self, reader, writer, connection: _Connection, direction: str) -> None:  # type: ignore[no-untyped-def]
        splitter = FrameSplitter()
        try:
            while chunk := await reader.read(65536):
                for frame in splitter.feed(chunk):
                    self._record(connection, direction, frame)
                    writer.write(self._forwarded(frame, direction))
                await writer.drain()
        except (OSError, FrameError):
            pass
        finally:
            writer.close()

    def _forwarded(self, frame: bytes, direction: str) -> bytes:
        if direction == RESPONSE and self.rewrite is not None:
            old, new = self.rewrite
            return frame.replace(old, new)
        return frame

    def _record(self, connection: _Connection, direction: str, frame: bytes) -> None:
        if direction == REQUEST:
            header = request_header(frame)
            api_key, api_version, correlation_id = header if header else (None, None, None)
            if header:
                connection.pending[correlation_id] = (api_key, api_version)
        else:
            correlation_id = response_correlation_id(frame)
            api_key, api_version = connection.pending.pop(correlation_id, (None, None))
        if connection.context is None:
            return
        captured = CapturedFrame(
            order=next(self._order),
            connection=connection.number,
            direction=direction,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            data=frame,
            context=connection.context,
        )
        with self._lock:
            self._frames.append(captured)
