"""Transaction markers: the control batches that end a transaction (Kafka's ``EndTransactionMarker``).

A marker is a v2 batch with attributes *transactional* | *control* (bits 4
and 5), uncompressed, base sequence -1, holding one record whose

* key is ``version int16 (0), type int16`` (0 ABORT, 1 COMMIT), and
* value is ``version int16 (0), coordinator_epoch int32``.

``build_marker_batch`` writes one at base offset 0 (the log assigns its
offset, as for any append); ``marker_type``/``read_marker`` read it back and
answer None for anything that is not a readable v2 control batch with a
record (the cleaner leaves control batches empty once their record goes).
Readers accept key/value versions above 0 as Kafka does, reading the fields
they know.
"""

from __future__ import annotations

import struct

from ..errors import KafkaProtocolError
from .builder import RecordBatchBuilder
from .v2 import RecordBatchView

ABORT, COMMIT = 0, 1
_KEY = struct.Struct(">hh")  # version, type
_VALUE = struct.Struct(">hi")  # version, coordinator epoch


def build_marker_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                       timestamp: int) -> bytes:  # fmt: skip
    """The bytes of one COMMIT or ABORT marker batch at base offset 0, CRC included."""
    builder = RecordBatchBuilder(
        base_offset=0, producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=-1,
        is_transactional=True, is_control=True,
    )  # fmt: skip
    key = _KEY.pack(0, COMMIT if commit else ABORT)
    builder.append(key, _VALUE.pack(0, coordinator_epoch), timestamp=timestamp)
    return builder.build()


def read_marker(batch_bytes) -> tuple[int, int, int] | None:
    """``(type, coordinator_epoch, timestamp)`` of a v2 control batch's record; None if unreadable."""
    try:
        view = RecordBatchView(batch_bytes)
        if not view.is_control or view.records_count < 1:
            return None
        record = next(iter(view), None)
    except (KafkaProtocolError, ValueError):
        return None
    if record is None or record.key is None or len(record.key) < _KEY.size:
        return None
    version, kind = _KEY.unpack_from(record.key)
    if version < 0:
        return None
    value = record.value
    epoch = _VALUE.unpack_from(value)[1] if value is not None and len(value) >= _VALUE.size else -1
    return kind, epoch, record.timestamp


def marker_type(batch_bytes) -> int | None:
    """The key's type of a v2 control batch (``ABORT``, ``COMMIT``, or another control type); None if unreadable."""
    marker = read_marker(batch_bytes)
    return None if marker is None else marker[0]
