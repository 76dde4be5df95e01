"""FrameBuffer: whole frames out of arbitrary chunks, and Kafka's size-prefix rules."""

from __future__ import annotations

import random
import struct

import pytest

from protocol import NEED_DATA, FrameBuffer, FrameTooLargeError
from protocol.framing import DIRECT_MIN


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


BIG = [bytes(random.Random(i).randbytes(n)) for i, n in enumerate((DIRECT_MIN, 3 * DIRECT_MIN + 5, 200_000))]


def _feed_direct(fb: FrameBuffer, stream: bytes, rng: random.Random) -> list[bytes]:
    """Feed ``stream`` as a socket would: into ``receive_buffer()`` when offered, else as chunks."""
    got, pos = [], 0
    while pos < len(stream):
        step = rng.randint(1, 90_000)
        target = fb.receive_buffer()
        if target is None:
            fb.receive_data(stream[pos : pos + step])
            pos += step
        else:
            n = min(step, len(target), len(stream) - pos)
            target[:n] = stream[pos : pos + n]
            fb.received_into(n)
            pos += n
        got.extend(_drain(fb))
    return got


def test_large_frames_are_received_in_place_and_small_ones_still_chunked():
    rng = random.Random(3)
    payloads = [BIG[0], b"small", BIG[1], b"", BIG[2], b"x" * 100] * 3
    stream = b"".join(_frame(p) for p in payloads)
    for _ in range(5):
        fb, offered = FrameBuffer(), 0
        got = []
        pos = 0
        while pos < len(stream):
            target = fb.receive_buffer()
            offered += target is not None
            got.extend(_feed_direct(fb, stream[pos : pos + 50_000], rng))
            pos += 50_000
        assert got == payloads
        assert fb.buffered == 0 and fb.receive_buffer() is None
        assert offered > 0


def test_in_place_frame_is_offered_once_its_prefix_is_in():
    fb = FrameBuffer()
    frame = _frame(BIG[1])
    fb.receive_data(frame[:10])
    assert fb.receive_buffer() is None  # nothing decided until next_frame reads the prefix
    assert fb.next_frame() is NEED_DATA
    target = fb.receive_buffer()
    assert target is not None and len(target) == len(BIG[1]) - 6
    assert fb.buffered == 10
    target[:] = frame[10:]
    fb.received_into(len(target))
    assert fb.next_frame() == BIG[1]
    assert fb.receive_buffer() is None


def test_receive_data_fills_an_in_place_frame_and_keeps_the_rest():
    fb = FrameBuffer()
    stream = _frame(BIG[1]) + _frame(b"after")
    fb.receive_data(stream[:100])
    assert fb.next_frame() is NEED_DATA and fb.receive_buffer() is not None
    fb.receive_data(bytearray(stream[100:]))
    assert _drain(fb) == [BIG[1], b"after"]


@pytest.mark.parametrize("n", [-1, DIRECT_MIN * 3 + 2])
def test_received_into_beyond_the_frame_is_refused(n):
    fb = FrameBuffer()
    fb.receive_data(_frame(BIG[1])[:8])
    assert fb.next_frame() is NEED_DATA and fb.receive_buffer() is not None
    with pytest.raises(ValueError):
        fb.received_into(n)


def test_received_into_without_a_frame_in_place_is_refused():
    with pytest.raises(ValueError):
        FrameBuffer().received_into(1)


def test_frame_buffers_are_not_zeroed_but_hold_only_what_was_received():
    """Frames come in buffers that are not zeroed first (``records._accel.new_frame``): a zero-filled
    frame received in place into memory that last held other bytes is still all zeros."""
    size = DIRECT_MIN * 4
    for _ in range(3):
        junk = bytearray(b"\xaa" * size)
        del junk  # a freed block of the same size, full of 0xAA, for the allocator to hand out again
        fb = FrameBuffer()
        fb.receive_data(_frame(bytes(size))[:100])
        assert fb.next_frame() is NEED_DATA
        target = fb.receive_buffer()
        assert target is not None
        target[:] = bytes(len(target))
        fb.received_into(len(target))
        assert fb.next_frame() == bytes(size)


def test_new_frame_is_a_bytearray_of_the_size_asked():
    from protocol.records._accel import new_frame

    frame = new_frame(12345)
    assert type(frame) is bytearray and len(frame) == 12345
    assert new_frame(0) == bytearray()
    with pytest.raises(ValueError):
        new_frame(-1)
