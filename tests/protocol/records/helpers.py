"""Small builders of hand-made (possibly malformed) v2 batches for tests, and a switch to the Python paths."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from protocol.records import _downconvert_runs
from protocol.records.builder import write_v2_batch
from protocol.records.varint import encode_varint, encode_varlong


def raw_record(
    *, attributes=0, ts_delta=0, offset_delta=0, key=b"k", value=b"v", headers=(), header_count=None, length_adjust=0
) -> bytes:
    """One record, hand-encoded; ``header_count``/``length_adjust`` allow lies."""
    body = bytes([attributes]) + encode_varlong(ts_delta) + encode_varint(offset_delta)
    for field in (key, value):
        body += encode_varint(-1) if field is None else encode_varint(len(field)) + field
    body += encode_varint(len(headers) if header_count is None else header_count)
    for hk, hv in headers:
        body += encode_varint(-1) if hk is None else encode_varint(len(hk)) + hk
        body += encode_varint(-1) if hv is None else encode_varint(len(hv)) + hv
    return encode_varint(len(body) + length_adjust) + body


def raw_batch(records: bytes, count: int, *, attributes=0, base_offset=0, base_ts=1000, max_ts=1000) -> bytes:
    """A v2 batch with a correct CRC around arbitrary record bytes."""
    fields = (base_offset, 0, -1, 2, 0, attributes, max(count - 1, 0), base_ts, max_ts, -1, -1, -1, count)
    return write_v2_batch(fields, records)


@contextlib.contextmanager
def python_only() -> Iterator[None]:
    """Run the block with the C accelerator switched off, then switch it back as it was."""
    was = _downconvert_runs.C_EMIT is not None
    _downconvert_runs.set_accelerated(False)
    try:
        yield
    finally:
        _downconvert_runs.set_accelerated(was)
