"""Down-conversion of whole v2 batches by the C accelerator, a chunk's worth per call.

An LZ4 batch becomes one legacy wrapper (``convert._convert_v2``): decompress,
write the messages, compress again; an uncompressed batch becomes its records
from the fetch offset on, one message each. That is most of what a Fetch
v0-v3 answer costs, and all of it runs without the GIL in the extension
(``_clz4.c``), which takes every such batch of a chunk at once. ``start`` hands
it the batches it can take: v2, LZ4 (when the system's ``liblz4.so.1`` was
found) or uncompressed, not control batches, with a good CRC (a corrupt one
must raise ``CorruptRecordError`` in its turn), and at least one record. With
``background`` the extension's helper thread starts converting them and
``start`` returns at once (``convert_batches_start``), so the broker sends the
previous chunk meanwhile; otherwise the work waits for the call ``start``
returns, and the calling thread and the helper share it (``convert_batches``).

That call answers, per batch, ``(its entries, records written)`` (the entries
a view into one buffer) or None for a batch that is unusual in any way; the
caller converts those, and every other batch, in Python, so errors are the
same. When every batch of the chunk went to C, the buffer itself comes too:
it is the chunk's output as it is, without another copy.

It is used when the accelerator is (``_downconvert_runs.C_EMIT``: the broker
switches both off for ``MINIBROKER_PURE_PYTHON=1``).
"""

from __future__ import annotations

from collections.abc import Callable

from . import _downconvert_runs
from ._accel import BUILT_BATCHES, BUILT_BATCHES_START, LZ4_IN_C
from ._lz4 import frame_header
from ._model import Codec, TimestampType
from .legacy import TIMESTAMP_TYPE_FLAG

# per batch (entries, records written) or None, and the whole buffer; None: no batch went to C
Converted = tuple[list, "bytes | None"] | None
_CODECS = (Codec.NONE, Codec.LZ4) if LZ4_IN_C else (Codec.NONE,)


def _nothing() -> Converted:
    return None


def start(batches: list, target_magic: int, fetch_offset: int, max_size: int, *,
          background: bool) -> Callable[[], Converted]:  # fmt: skip
    """Hand the batches C can take to it; the call returned gives their entries (see the module)."""
    if (convert := _downconvert_runs.accelerated(BUILT_BATCHES)) is None:
        return _nothing
    jobs, where = [], []
    for i, batch in enumerate(batches):
        if batch.magic != 2 or batch.compression not in _CODECS or batch.is_control or batch.records_count < 1:
            continue
        if not batch.is_valid():
            continue
        lat = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        ts_flag = TIMESTAMP_TYPE_FLAG if lat is not None and target_magic == 1 else 0
        jobs.append((batch.records_section, batch.records_count, batch.base_offset, batch.base_timestamp, lat,
                     ts_flag, max_size, int(batch.compression), fetch_offset))  # fmt: skip
        where.append(i)
    if not jobs:
        return _nothing
    args = (jobs, target_magic, frame_header(target_magic))
    if background:
        pending = BUILT_BATCHES_START(*args)
        return lambda: _placed(len(batches), where, *pending.result())
    return lambda: _placed(len(batches), where, *convert(*args))


def _placed(count: int, where: list, joined: bytes, lengths: list, written: list) -> Converted:
    out: list = [None] * count
    view, pos = memoryview(joined), 0
    for i, length, records in zip(where, lengths, written):
        if length is not None:
            out[i], pos = (view[pos : pos + length], records), pos + length
    return out, joined if None not in out else None
