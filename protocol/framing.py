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
once, so feeding a stream one byte at a time stays linear. A frame's buffer
is not zeroed first (``records._accel.new_frame``): every byte of it is
written before the frame is returned.

A large frame need not be copied at all: once its size prefix is in and at
least ``DIRECT_MIN`` of its bytes are still to come, the frame's buffer is
allocated, the bytes already received move into it, and ``receive_buffer``
offers the rest of it to the caller, who receives straight into it
(``socket.recv_into``) and reports the count with ``received_into``. A 1 MiB
produce request then lands in its final buffer by the kernel's copy alone.
``receive_data`` keeps working meanwhile (it fills the frame first).
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Final

from .errors import FrameTooLargeError
from .records._accel import new_frame

DEFAULT_MAX_FRAME_SIZE: Final = 104_857_600  # socket.request.max.bytes
DIRECT_MIN: Final = 64 * 1024  # frame bytes still to come from which they are received in place
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
        self._direct: bytearray | None = None  # a frame being received in place
        self._direct_filled = 0

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if isinstance(data, bytearray):  # the caller may reuse it
            data = bytes(data)
        if self._direct is not None and data:  # fill the frame being received in place, keep the rest
            n = min(len(data), len(self._direct) - self._direct_filled)
            self._direct[self._direct_filled : self._direct_filled + n] = memoryview(data)[:n]
            self._direct_filled += n
            data = memoryview(data)[n:]
        if data:
            self._chunks.append(memoryview(data))
            self._buffered += len(data)

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return self._buffered + (self._direct_filled + 4 if self._direct is not None else 0)

    def receive_buffer(self) -> memoryview | None:
        """The unfilled rest of a frame being received in place, or None (then use ``receive_data``)."""
        if self._direct is None:
            return None
        return memoryview(self._direct)[self._direct_filled :]

    def received_into(self, n: int) -> None:
        """Record that ``n`` bytes were written at the start of the last ``receive_buffer()``."""
        if self._direct is None or not 0 <= n <= len(self._direct) - self._direct_filled:
            raise ValueError(f"received_into({n}) does not fit the frame being received")
        self._direct_filled += n

    def next_frame(self) -> bytearray | _NeedData:
        """Return the next whole frame, or ``NEED_DATA``."""
        if self._direct is not None:
            return self._finish_direct()
        if self._buffered < 4:
            return NEED_DATA
        if len(self._chunks[0]) < 4:  # the size prefix spans chunks: merge them (rare, small)
            self._chunks = deque([memoryview(b"".join(self._chunks))])
        (size,) = _SIZE.unpack_from(self._chunks[0], 0)
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLargeError(f"frame size {size} outside 0..{self.max_frame_size}")
        if self._buffered < 4 + size and 4 + size - self._buffered < DIRECT_MIN:
            return NEED_DATA
        self._chunks[0] = self._chunks[0][4:]
        if self._buffered < 4 + size:  # much still to come: receive it in place
            self._direct, self._direct_filled = new_frame(size), self._buffered - 4
            self._move(self._direct, self._direct_filled)
            self._buffered = 0
            return NEED_DATA
        self._buffered -= 4 + size
        frame = new_frame(size)
        self._move(frame, size)
        return frame

    def _finish_direct(self) -> bytearray | _NeedData:
        frame = self._direct
        if self._direct_filled < len(frame):
            return NEED_DATA
        self._direct, self._direct_filled = None, 0
        return frame

    def _move(self, frame: bytearray, size: int) -> None:
        """Move ``size`` bytes from the front of the chunks to the start of ``frame`` (a single copy)."""
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
