"""The C reader of plain legacy messages (``_clegacy.c``): same rows as the Python loops, same errors.

Up-conversion reads every message of a Produce v0-v2 request (``legacy.plain_rows``) or of a
compressed wrapper's inner set. Each check here runs with the accelerator and without, on valid
sets of both magics and on damaged and truncated ones, and the answers (rows, None, or the error
of the general path) must be the same; valid sets must be taken by C.
"""

from __future__ import annotations

import random
import shutil

import pytest

from protocol.errors import KafkaProtocolError
from protocol.records import Codec, RecordBatchBuilder, TimestampType, iter_batches
from protocol.records.legacy import plain_rows
from tests.protocol.records.helpers import python_only


if shutil.which("cc"):  # a compiler is here, so setup must have built the accelerator
    from protocol.records import _cdownconvert as cdc
else:
    cdc = pytest.importorskip("protocol.records._cdownconvert")


def message_set(magic: int, seed: int, *, codec: Codec = Codec.NONE, lat: bool = False, n: int = 40) -> bytes:
    rng = random.Random(seed)
    kw = {"timestamp_type": TimestampType.LOG_APPEND_TIME} if lat else {}
    b = RecordBatchBuilder(magic=magic, compression=codec, base_offset=rng.randrange(1000), **kw)
    for i in range(n):
        key = None if i % 5 == 1 else rng.randbytes(rng.randrange(0, 20))
        value = None if i % 7 == 3 else rng.randbytes(rng.randrange(0, 300))
        b.append(key, value, timestamp=1_700_000_000_000 + rng.randrange(-1000, 1000))
    return b.build()


def both(fn):
    """``fn()``'s answer (or error) with the accelerator and without; they must agree."""

    def run():
        try:
            return "ok", fn()
        except KafkaProtocolError as exc:
            return type(exc).__name__, str(exc)

    with_c = run()
    with python_only():
        assert run() == with_c
    return with_c


def entries(data: bytes) -> list:
    return [r for batch in iter_batches(data) for r in batch.iter_tuples()]


@pytest.mark.parametrize("magic", [0, 1])
def test_valid_sets_are_taken_and_read_alike(magic):
    data = b"".join(message_set(magic, seed) for seed in range(3))  # one message per entry when plain
    assert cdc.plain_rows(data, 1 << 20, False, -1) is not None
    kind, rows = both(lambda: plain_rows(data, 1 << 20))
    assert kind == "ok" and len(rows) == 120
    assert rows == entries(data)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("lat", [False, True])
def test_wrappers_inner_sets_are_read_alike(magic, lat):
    data = b"".join(message_set(magic, seed, codec=Codec.GZIP, lat=lat) for seed in range(3))
    kind, rows = both(lambda: entries(data))
    assert kind == "ok" and len(rows) == 120


@pytest.mark.parametrize("seed", range(200))
def test_damaged_sets_give_the_same_answer_or_error(seed):
    rng = random.Random(seed)
    magic = rng.choice([0, 1])
    data = bytearray(message_set(magic, seed, codec=rng.choice([Codec.NONE, Codec.GZIP]), lat=rng.random() < 0.3))
    for _ in range(rng.randint(1, 3)):
        data[rng.randrange(len(data))] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
    data = bytes(data[: rng.choice([len(data), rng.randrange(len(data) + 1)])])
    limit = rng.choice([1 << 20, 200])
    both(lambda: plain_rows(data, limit))
    both(lambda: entries(data))


def test_what_plain_rows_leaves_to_python():
    v0, v1 = message_set(0, 1, n=2), message_set(1, 2, n=2)
    assert cdc.plain_rows(v0 + v1, 1 << 20, False, -1) is None  # magics mixed
    assert cdc.plain_rows(message_set(1, 3, lat=True), 1 << 20, False, -1) is None  # LogAppendTime
    assert cdc.plain_rows(message_set(1, 3, lat=True), 1 << 20, True, 1) is not None
    assert cdc.plain_rows(message_set(1, 4, codec=Codec.GZIP), 1 << 20, True, -1) is None  # a wrapper
    assert cdc.plain_rows(v1, 10, False, -1) is None  # over max_entry_size
    assert cdc.plain_rows(v1[:-1], 1 << 20, False, -1) is not None  # a partial last message ends the set
    assert cdc.plain_rows(b"", 1 << 20, False, -1) is None
