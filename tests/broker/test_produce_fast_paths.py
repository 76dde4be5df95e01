"""The Produce path's header-only shortcuts give the answers of the batch walks they skip.

``is_single_v2_batch`` lets ``refused_before_append`` (Kafka's
``ProduceRequest.validateRecords`` shape check, for the meters) and
``_producer_check`` (the idempotence checks) answer one plain v2 batch from
its prefix. Hypothesis draws valid batches and damaged ones (codec ids 0-7,
other magics, wrong length fields, cut or padded buffers, two batches,
random bytes) for every Produce version, and each shortcut must agree with
the full walk, kept here as the reference.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.handlers._produce_metrics import refused_before_append, refused_by_walk
from broker.handlers.produce import _producer_check
from protocol.records import RecordBatchBuilder, is_single_v2_batch, iter_batches
from storage.producer_state import BatchInfo


def refused_reference(version: int, records) -> bool:
    """``refused_before_append`` without the shortcut of one batch: the walk of every batch."""
    if version < 3 or records is None:
        return False
    return refused_by_walk(version, records)


def batch(count: int, producer_id: int) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                 base_sequence=0 if producer_id >= 0 else -1)  # fmt: skip
    for i in range(count):
        builder.append(b"k%d" % i, b"v" * i, timestamp=1_700_000_000_000 + i)
    return builder.build()


@st.composite
def buffers(draw) -> bytes:
    """A v2 batch, most often damaged in one of the ways the framing or shape checks look at."""
    buf = bytearray(batch(draw(st.integers(1, 3)), draw(st.sampled_from([-1, 0, 7]))))
    damage = draw(st.sampled_from(["none", "codec", "magic", "length", "cut", "pad", "two", "random"]))
    if damage == "codec":
        buf[22] = (buf[22] & ~0x07) | draw(st.integers(0, 7))
    elif damage == "magic":
        buf[16] = draw(st.integers(0, 255))
    elif damage == "length":
        struct.pack_into(">i", buf, 8, struct.unpack_from(">i", buf, 8)[0] + draw(st.integers(-60, 60)))
    elif damage == "cut":
        del buf[draw(st.integers(0, len(buf) - 1)) :]
    elif damage == "pad":
        buf += draw(st.binary(min_size=1, max_size=70))
    elif damage == "two":
        buf += batch(1, -1)
    elif damage == "random":
        buf = bytearray(draw(st.binary(max_size=120)))
    return bytes(buf)


@given(buffers(), st.integers(0, 13), st.booleans())
def test_refused_before_append_agrees_with_the_walk(buf, version, as_view):
    records = memoryview(buf) if as_view else buf
    assert refused_before_append(version, records) == refused_reference(version, records)


@given(buffers())
def test_a_single_v2_batch_is_what_the_walk_yields_alone(buf):
    if is_single_v2_batch(buf):
        (only,) = list(iter_batches(buf))
        assert only.magic == 2 and only.size_in_bytes == len(buf)


class _State:
    """Producer state that lets every batch through and notes what it was asked."""

    def __init__(self) -> None:
        self.asked: list[BatchInfo] = []

    def check(self, info: BatchInfo) -> None:
        self.asked.append(info)


@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([-1, 0, 7])), min_size=1, max_size=3),
       st.booleans())  # fmt: skip
def test_producer_check_asks_about_the_idempotent_batches_only(specs, as_view):
    data = b"".join(batch(count, pid) for count, pid in specs)
    state = _State()
    assert _producer_check(state, memoryview(data) if as_view else data) is None
    idempotent = [v for v in iter_batches(data) if v.producer_id >= 0]
    assert state.asked == [BatchInfo.of(v) for v in idempotent]


@pytest.mark.parametrize("codec_id", range(8))
@pytest.mark.parametrize("version", range(14))
def test_each_codec_id_at_each_version_agrees_with_the_walk(codec_id, version):
    """Zstd (4) below v7 and the ids that name no codec (5-7) below v7 are refused, as the walk decides."""
    buf = bytearray(batch(2, -1))
    buf[22] = (buf[22] & ~0x07) | codec_id
    assert refused_before_append(version, memoryview(buf)) == refused_reference(version, buf)
