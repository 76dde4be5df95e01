"""Transactions seen by a cleaning pass: Kafka's ``CleanedTransactionMetadata``.

The cleaner walks batches in offset order. Before each stretch of the log it
is given the aborted transactions recorded there (``Log.aborted_transactions``,
from the ``.txnindex`` files), kept in a heap by first offset. As batches go
by:

* an aborted transaction becomes *ongoing* for its producer once the pass
  reaches its first offset; every transactional data batch of that producer
  until its ABORT marker is aborted data (``on_data_batch`` answers True: pass
  1 leaves it out of the offset map, pass 2 drops it) and is remembered as
  seen;
* a transactional data batch of any other producer is committed data (the
  cleaner only works below the last stable offset, so every transaction
  there is decided) and marks that producer's transaction as having batches;
* an ABORT marker ends its producer's aborted transaction: if a batch of it
  was seen in this pass the marker must stay, and its ``AbortedTxn`` goes to
  ``kept_aborted`` (the cleaned segment's ``.txnindex``); otherwise the marker
  is removable;
* a COMMIT marker is removable when no batch of its transaction was seen;
* an empty control batch (its record removed by an earlier round) is removable.

"Removable" markers are not dropped at once: pass 2 gives them a delete
horizon first, like a tombstone (KIP-534), and drops them once it passed.
The state carries over from one group of segments to the next within a
round; each pass starts a fresh one.
"""

from __future__ import annotations

import heapq
from typing import Any

from protocol.records.control import ABORT, COMMIT, marker_type


class CleanedTransactions:
    def __init__(self) -> None:
        self._pending: list[tuple[int, int, Any]] = []  # (first offset, tie-break, AbortedTxn)
        self._count = 0
        self._aborted: dict[int, list] = {}  # producer id -> [AbortedTxn, seen a batch]
        self._committed: set[int] = set()  # producers whose committed transaction had a batch in this pass
        self.kept_aborted: list = []  # AbortedTxn of ABORT markers kept, for the cleaned .txnindex

    def add_aborted(self, aborted: list) -> None:
        """Aborted transactions of the stretch of log about to be walked.

        A transaction spanning stretches is given again while it is still ongoing; starting it a
        second time changes nothing (``setdefault``).
        """
        for txn in aborted:
            heapq.heappush(self._pending, (txn.first_offset, self._count, txn))
            self._count += 1

    def _start_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0][0] <= offset:
            txn = heapq.heappop(self._pending)[2]
            self._aborted.setdefault(txn.producer_id, [txn, False])

    def on_data_batch(self, batch: Any) -> bool:
        """A v2 data batch went by; True when it belongs to an aborted transaction."""
        self._start_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        state = self._aborted.get(batch.producer_id)
        if state is None:
            self._committed.add(batch.producer_id)
            return False
        state[1] = True
        return True

    def on_control_batch(self, batch: Any) -> bool:
        """A control batch went by; True when the marker may be removed (after its delete horizon)."""
        self._start_up_to(batch.last_offset)
        if batch.records_count == 0:
            return True
        kind = marker_type(batch.buffer)
        if kind == ABORT:
            state = self._aborted.pop(batch.producer_id, None)
            if state is not None and state[1]:
                self.kept_aborted.append(state[0])
                return False
            return True
        if kind == COMMIT:
            if batch.producer_id in self._committed:
                self._committed.discard(batch.producer_id)
                return False
            return True
        return False

