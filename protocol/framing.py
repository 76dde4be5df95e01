"""Incremental framing of a Kafka byte stream (h11's receive_data/next_event shape).

Every Kafka message is ``size int32`` followed by ``size`` bytes. ``FrameBuffer``
takes chunks of any size with ``receive_data`` and hands out whole frames with
``next_frame``, which returns ``NEED_DATA`` until one is complete. The size
prefix is checked as soon as its 4 bytes are in: a negative size or one above
``max_frame_size`` raises ``FrameTooLargeError`` (Kafka's
InvalidReceiveException: the connection is closed without an answer), before
any of the announced bytes are buffered.

Frames are returned as ``bytearray`` objects owned by the caller, so a handler
may patch record batches inside them in place. Consumed bytes are dropped from
the front of the internal buffer lazily (when more than half of it is dead),
so feeding a stream one byte at a time stays linear.
"""

from __future__ import annotations

import struct
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
        self._buf = bytearray()
        self._start = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buf) - self._start

    def next_frame(self) -> bytearray | _NeedData:
        """Return the next whole frame, or ``NEED_DATA``."""
        start = self._start
        if len(self._buf) - start < 4:
            return NEED_DATA
        (size,) = _SIZE.unpack_from(self._buf, start)
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLargeError(f"frame size {size} outside 0..{self.max_frame_size}")
        end = start + 4 + size
        if len(self._buf) < end:
            return NEED_DATA
        frame = self._buf[start + 4 : end]
        self._start = end
        self._compact()
        return frame

    def _compact(self) -> None:
        if self._start == len(self._buf):
            self._buf = bytearray()
            self._start = 0
        elif self._start > len(self._buf) // 2:
            del self._buf[: self._start]
            self._start = 0
