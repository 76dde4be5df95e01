"""Producer state and transactions of a ``Log`` (functions over it, as ``retention.py`` is).

* ``on_append`` feeds the batches just written to ``ProducerStateManager``:
  data batches to ``update``, COMMIT/ABORT markers to ``end_txn``, whose
  ``AbortedTxn`` goes to the ``.txnindex`` of the segment that took the
  marker. If that index write fails, the append is undone (segment cut
  back, producer state rebuilt) and the ``StorageError`` raised, so the log
  stays as it was, as ``Log.append`` promises.
* ``rebuild`` (open, truncation): the newest snapshot at or below the log end
  offset, then every batch after it is replayed: data batch headers, and
  the record of each marker (a control batch is tiny). A replayed ABORT
  marker re-adds its entry to its segment's ``.txnindex`` unless an entry
  at or beyond its offset is there already, so a crash never leaves the
  index with duplicates, and one whose tail was lost gets it back. After an
  unclean stop the loader resets the ``.txnindex`` of every segment it
  rescans and asks for the replay to start at or below the first of them
  (``replay_from``), as Kafka's ``LogSegment.recover`` rebuilds that index
  from producer state brought up to the segment's base.
* ``first_unstable_offset`` / ``last_stable_offset``: Kafka's, with the first
  unstable offset raised to the log start offset as Kafka does after
  DeleteRecords; the LSO never passes the high watermark.
* ``aborted_transactions(start, upper)``: Kafka's ``collectAbortedTransactions``
  over the segments from the one holding ``start``, stopping at the first
  index entry whose last stable offset reaches ``upper``.
"""

from __future__ import annotations

import logging
import os
import struct
from typing import TYPE_CHECKING, Any, Iterator

from protocol.errors import KafkaProtocolError
from protocol.records import RECORD_BATCH_OVERHEAD, RecordBatchView, is_single_v2_batch, iter_batches
from protocol.records.v2 import CONTROL_FLAG

from .errors import StorageError
from .producer_state import BatchInfo, Marker
from .txn_index import AbortedTxn

if TYPE_CHECKING:
    from .log import Log
    from .segment import Segment

log = logging.getLogger(__name__)
_ATTRIBUTES_LOW_BYTE = 22
_PRODUCER_ID, _PRODUCER_ID_AT = struct.Struct(">q"), 43  # a v2 batch's producer id, at byte 43


def on_append(log_: "Log", seg: "Segment", data: Any, first_offset: int) -> None:
    """Track producers and transactions of ``data``, just appended to ``seg`` at ``first_offset``."""
    if len(data) <= 16 or data[16] != 2:
        return
    state = log_.producer_state
    if is_single_v2_batch(data) and _PRODUCER_ID.unpack_from(data, _PRODUCER_ID_AT)[0] < 0:  # no producer
        state.on_high_watermark(log_.high_watermark)
        return
    try:
        for view in iter_batches(memoryview(data)):
            if view.producer_id < 0:
                continue
            if not view.is_control:
                state.update(BatchInfo.of(view))
            elif (marker := Marker.of(view)) is not None and (txn := state.end_txn(marker)) is not None:
                seg.txn_index.append(txn)
    except StorageError:
        _undo_append(log_, seg, first_offset)
        raise
    state.on_high_watermark(log_.high_watermark)


def _undo_append(log_: "Log", seg: "Segment", first_offset: int) -> None:
    try:
        seg.truncate_to(first_offset)
        seg.txn_index.truncate_to(first_offset)
        rebuild(log_)
    except OSError:
        log.exception("%s: could not undo an append whose transaction index write failed", log_.name)


def rebuild(log_: "Log", replay_from: int | None = None) -> None:
    """Producer state from the newest usable snapshot (at or below ``replay_from`` when given) plus the
    batches after it; see the module docstring."""
    state = log_.producer_state
    state.clear()
    end = log_.log_end_offset
    upto = end if replay_from is None else min(end, replay_from)
    start = max(state.load_snapshot(upto, log_.clock(), stale_above=end), 0)
    if start < end:
        for seg, item in _replay_items(log_, start):
            if isinstance(item, BatchInfo):
                state.update(item)
            elif (txn := state.end_txn(item)) is not None:
                seg.txn_index.append_if_new(txn)
    state.on_high_watermark(log_.high_watermark)


def _replay_items(log_: "Log", start: int) -> Iterator[tuple["Segment", BatchInfo | Marker]]:
    """(segment, batch or marker) of every producer's v2 batch from ``start`` on."""
    for seg in log_.segments_from(start):
        for pos, last, size in seg.iter_batch_headers(seg.find_position(start) or 0):
            head = os.pread(seg.fileno(), RECORD_BATCH_OVERHEAD, pos)
            if last < start or len(head) < RECORD_BATCH_OVERHEAD or head[16] != 2:
                continue
            info = BatchInfo.from_header(head)
            if info.producer_id < 0:
                continue
            if not head[_ATTRIBUTES_LOW_BYTE] & CONTROL_FLAG:
                yield seg, info
            elif (marker := _read_marker(seg, pos, size)) is not None:
                yield seg, marker


def _read_marker(seg: "Segment", pos: int, size: int) -> Marker | None:
    try:
        return Marker.of(RecordBatchView(os.pread(seg.fileno(), size, pos)))
    except KafkaProtocolError:
        return None


def first_unstable_offset(log_: "Log") -> int | None:
    first = log_.producer_state.first_unstable_offset(log_.high_watermark)
    return None if first is None else max(first, log_.log_start_offset)


def last_stable_offset(log_: "Log") -> int:
    first, high_watermark = first_unstable_offset(log_), log_.high_watermark
    return high_watermark if first is None else min(first, high_watermark)


def aborted_transactions(log_: "Log", start: int, upper: int) -> list[AbortedTxn]:
    found: list[AbortedTxn] = []
    for seg in log_.segments_from(start):
        txns, complete = seg.txn_index.collect(start, upper)
        found += txns
        if complete:
            break
    return found
