"""``log_txn.on_append`` skips the batch walk for one batch without a producer, and tells the producer state
exactly what the walk would: nothing about the batch, then the high watermark.

The fake log and state note every call; Hypothesis draws one or more v2
batches with and without producer ids (the shortcut's case and the walk's).
"""

from __future__ import annotations

import types

from hypothesis import given
from hypothesis import strategies as st

from protocol.records import RecordBatchBuilder, iter_batches
from storage import log_txn
from storage.producer_state import BatchInfo


class _State:
    def __init__(self) -> None:
        self.calls: list = []

    def update(self, info: BatchInfo) -> None:
        self.calls.append(("update", info))

    def on_high_watermark(self, offset: int) -> None:
        self.calls.append(("high watermark", offset))


def batch(count: int, producer_id: int, base_offset: int) -> bytes:
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                 base_sequence=0 if producer_id >= 0 else -1, base_offset=base_offset)  # fmt: skip
    for i in range(count):
        builder.append(b"k", b"v%d" % i, timestamp=1_700_000_000_000)
    return builder.build()


@given(st.lists(st.tuples(st.integers(1, 3), st.sampled_from([-1, 0, 5])), min_size=1, max_size=3), st.booleans())
def test_the_producer_state_hears_what_the_walk_tells_it(specs, as_view):
    data = b"".join(batch(count, pid, 10 * i) for i, (count, pid) in enumerate(specs))
    state = _State()
    log_ = types.SimpleNamespace(producer_state=state, high_watermark=42)
    log_txn.on_append(log_, None, memoryview(data) if as_view else data, 0)
    expected = [("update", BatchInfo.of(v)) for v in iter_batches(data) if v.producer_id >= 0]
    assert state.calls == expected + [("high watermark", 42)]
