"""FrameBuffer: whole frames out of arbitrary chunks, and Kafka's size-prefix rules."""

from __future__ import annotations

import random
import struct

import pytest

from protocol import NEED_DATA, FrameBuffer, FrameTooLargeError


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _drain(fb: FrameBuffer) -> list[bytes]:
    out = []
    while (frame := fb.next_frame()) is not NEED_DATA:
        out.append(bytes(frame))
    return out


PAYLOADS = [b"", b"a", b"hello world", bytes(range(256)) * 5, b"\x00\x01\x02"]


def test_byte_at_a_time_yields_every_frame_once():
    stream = b"".join(_frame(p) for p in PAYLOADS)
    fb = FrameBuffer()
    got = []
    for i in range(len(stream)):
        fb.receive_data(stream[i : i + 1])
        got.extend(_drain(fb))
    assert got == PAYLOADS
    assert fb.buffered == 0


def test_random_chunking_matches_whole_feed():
    rng = random.Random(7)
    stream = b"".join(_frame(p) for p in PAYLOADS * 20)
    for _ in range(20):
        fb = FrameBuffer()
        got, pos = [], 0
        while pos < len(stream):
            step = rng.randint(1, 700)
            fb.receive_data(stream[pos : pos + step])
            pos += step
            got.extend(_drain(fb))
        assert got == PAYLOADS * 20


def test_partial_frame_waits():
    fb = FrameBuffer()
    fb.receive_data(_frame(b"abcdef")[:-1])
    assert fb.next_frame() is NEED_DATA
    fb.receive_data(b"f")
    assert fb.next_frame() == b"abcdef"


@pytest.mark.parametrize("size", [-1, -(2**31), 1001])
def test_bad_size_prefix_rejected_before_buffering(size):
    fb = FrameBuffer(max_frame_size=1000)
    fb.receive_data(struct.pack(">i", size))
    with pytest.raises(FrameTooLargeError):
        fb.next_frame()


def test_size_at_limit_accepted():
    fb = FrameBuffer(max_frame_size=10)
    fb.receive_data(_frame(b"x" * 10))
    assert fb.next_frame() == b"x" * 10


def test_frames_are_writable_and_independent():
    fb = FrameBuffer()
    fb.receive_data(_frame(b"abc") + _frame(b"def"))
    first = fb.next_frame()
    first[0] = ord("z")
    assert fb.next_frame() == b"def"
    assert first == b"zbc"
