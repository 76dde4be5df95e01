"""Conversions begun on the C helper thread (``convert_chunk_start``, ``start_down_convert``).

The broker begins the next chunks of a Fetch v0-v3 answer before it sends the
one ahead of them, so several rounds of LZ4 jobs can wait for the helper at
once, be ended in any order, or be dropped unended when a connection goes.
Each must give the bytes of the Python path, and none may touch a round that
is gone.
"""

from __future__ import annotations

import gc
import random
import threading

import pytest

from protocol.records import down_convert
from protocol.records.convert import start_down_convert
from protocol.records._lz4 import frame_header

from .test_lz4_wrappers_c import MAX, cdc, lz4_batch, python_way

pytestmark = pytest.mark.skipif(not cdc.lz4_available(), reason="no liblz4.so.1 on this system")


def _chunk(seed: int, batches: int = 6) -> bytes:
    return b"".join(lz4_batch(seed * 100 + s, base=100 * s) for s in range(batches))


def test_begun_conversions_give_pythons_bytes_ended_in_any_order():
    chunks = [_chunk(seed) for seed in range(5)]
    expected = [python_way(c, 1) for c in chunks]
    ends = [start_down_convert(c, target_magic=1, fetch_offset=0) for c in chunks]
    order = list(range(5))
    random.Random(3).shuffle(order)
    assert {i: ends[i]() for i in order} == dict(enumerate(expected))


def test_a_round_keeps_its_source_alive():
    ends = [start_down_convert(_chunk(seed), target_magic=0, fetch_offset=0) for seed in range(3)]
    gc.collect()  # the chunks themselves are gone: the rounds hold their buffers
    assert [end() for end in ends] == [python_way(_chunk(seed), 0) for seed in range(3)]


def test_rounds_dropped_unended_leave_the_helper_working():
    rng = random.Random(7)
    data = _chunk(9)
    expected = python_way(data, 1)
    for _ in range(30):
        started = [cdc.convert_chunk_start(data, 1, frame_header(1), 0, MAX) for _ in range(rng.randrange(1, 4))]
        keep = started[rng.randrange(len(started))]
        del started  # the others are dropped, queued or half done
        joined, lengths, written, consumed = keep.result()
        assert sum(lengths) == len(joined) == len(expected.records) and sum(written) == expected.converted_count
        assert consumed == len(data)
    assert down_convert(data, target_magic=1, fetch_offset=0) == expected


def test_a_result_is_taken_once():
    pending = cdc.convert_chunk_start(_chunk(1, 2), 1, frame_header(1), 0, MAX)
    joined, lengths, written, consumed = pending.result()
    assert len(lengths) == 2 and None not in lengths and len(joined) == sum(lengths) and written == [60, 60]
    assert consumed == len(_chunk(1, 2))
    with pytest.raises(RuntimeError, match="already taken"):
        pending.result()


def test_threads_with_rounds_ahead():
    data = [_chunk(seed, 3) for seed in range(4)]
    expected = [python_way(c, 1) for c in data]
    failures: list = []

    def work(offset: int) -> None:
        ahead = []
        for i in range(24):
            ahead.append((i, start_down_convert(data[(i + offset) % 4], target_magic=1, fetch_offset=0)))
            if len(ahead) > 2:
                j, end = ahead.pop(0)
                if end() != expected[(j + offset) % 4]:
                    failures.append(j)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and failures == []


def test_bad_arguments_queue_nothing():
    with pytest.raises(ValueError, match="7-byte frame header"):
        cdc.convert_chunk_start(_chunk(2, 2), 1, b"\x04\x22", 0, MAX)
    with pytest.raises(TypeError):
        cdc.convert_chunk_start(_chunk(2, 2), 1, frame_header(1), "not an offset", MAX)
    with pytest.raises(ValueError, match="magic 0 or 1"):
        start_down_convert(_chunk(2, 2), target_magic=2, fetch_offset=0)
    assert down_convert(_chunk(2, 2), target_magic=1, fetch_offset=0) == python_way(_chunk(2, 2), 1)
