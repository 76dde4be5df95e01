"""Incremental framing of a Kafka byte stream (h11's receive_data/next_event shape).

Every Kafka message is ``size int32`` followed by ``size`` bytes. ``FrameBuffer``
takes chunks of any size with ``receive_data`` and hands out whole frames with
``next_frame``, which returns ``NEED_DATA`` until one is complete. The size
prefix is checked as soon as its 4 bytes are in: a negative size or one above
``max_frame_size`` raises ``FrameTooLargeError`` (Kafka's
InvalidReceiveException: the connection is closed without an answer), before
any of the announced bytes are buffered.

Frames are returned as ``bytearray`` objects owned by the caller, so a handler
may patch record batches inside them in place. Received chunks are kept as
they are (no growing buffer) and each frame is copied out of them exactly
once, so a 1 MiB produce request costs one copy, and feeding a stream one
byte at a time stays linear.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Final

from .errors import FrameTooLargeError

DEFAULT_MAX_FRAME_SIZE: Final = 104_857_600  # socket.request.max.bytes
_SIZE = struct.Struct(">i")


class _NeedData:
    def __repr__(self) -> str:
        return "NEED_DATA"


NEED_DATA: Final = _NeedData()


class FrameBuffer:
    """Accumulates bytes and yields complete frames (without the size prefix)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._chunks: deque[memoryview] = deque()
        self._buffered = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if data:
            self._chunks.append(memoryview(bytes(data) if isinstance(data, bytearray) else data))
            self._buffered += len(data)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return self._buffered

    def next_frame(self) -> bytearray | _NeedData:
        """Return the next whole frame, or ``NEED_DATA``."""
        if self._buffered < 4:
            return NEED_DATA
        if len(self._chunks[0]) < 4:  # the size prefix spans chunks: merge them (rare, small)
            self._chunks = deque([memoryview(b"".join(self._chunks))])
        (size,) = _SIZE.unpack_from(self._chunks[0], 0)
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLargeError(f"frame size {size} outside 0..{self.max_frame_size}")
        if self._buffered < 4 + size:
            return NEED_DATA
        self._chunks[0] = self._chunks[0][4:]
        self._buffered -= 4 + size
        return self._take(size)

    def _take(self, size: int) -> bytearray:
        """Move ``size`` bytes from the front of the chunks into one new buffer (a single copy)."""
        frame = bytearray(size)
        filled = 0
        while filled < size:
            chunk = self._chunks[0]
            n = min(len(chunk), size - filled)
            frame[filled : filled + n] = chunk[:n]
            filled += n
            if n == len(chunk):
                self._chunks.popleft()
            else:
                self._chunks[0] = chunk[n:]
        if self._chunks and not len(self._chunks[0]):
            self._chunks.popleft()
        return frame
