"""Down-conversion of LZ4 v2 batches by the C accelerator, a chunk's worth per call.

An LZ4 batch becomes one legacy wrapper (``convert._convert_v2``): decompress,
write the messages, compress again. That is most of what a Fetch v0-v3 answer
costs on an LZ4 topic, and all of it runs without the GIL in the extension
(``_clz4.c``), which takes every LZ4 batch of a chunk at once. ``start`` hands
it the batches it can take: v2, LZ4, not control batches, with a good CRC (a
corrupt one must raise ``CorruptRecordError`` in its turn), and at least one
record. With ``background`` the extension's helper thread starts converting
them and ``start`` returns at once (``convert_lz4_start``), so the broker sends
the previous chunk meanwhile; otherwise the work waits for the call ``start``
returns, and the calling thread and the helper share it (``convert_lz4``).

That call answers, per batch, its wrapper entry (a view into one buffer) or
None for a batch that is unusual in any way; the caller converts those, and
every other batch, in Python, so errors are the same. When every batch of the
chunk went to C, the buffer itself comes too: it is the chunk's output as it
is, without another copy.

It is used when the accelerator is (``_downconvert_runs.C_EMIT``: the broker
switches both off for ``MINIBROKER_PURE_PYTHON=1``) and the extension found
the system's ``liblz4.so.1``.
"""

from __future__ import annotations

from collections.abc import Callable

from . import _downconvert_runs
from ._accel import BUILT_LZ4, BUILT_LZ4_START
from ._lz4 import frame_header
from ._model import Codec, TimestampType
from .legacy import TIMESTAMP_TYPE_FLAG

Wrapped = tuple[list, "bytes | None"] | None  # per batch its entry or None, and the whole buffer; None: no batch in C


def _nothing() -> Wrapped:
    return None


def start(batches: list, target_magic: int, max_size: int, *, background: bool) -> Callable[[], Wrapped]:
    """Hand the LZ4 batches of ``batches`` to C; the call returned gives their wrappers (see the module)."""
    if (convert_lz4 := _downconvert_runs.accelerated(BUILT_LZ4)) is None:
        return _nothing
    jobs, where = [], []
    for i, batch in enumerate(batches):
        if batch.magic != 2 or batch.compression is not Codec.LZ4 or batch.is_control or batch.records_count < 1:
            continue
        if not batch.is_valid():
            continue
        lat = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        ts_flag = TIMESTAMP_TYPE_FLAG if lat is not None and target_magic == 1 else 0
        jobs.append((batch.records_section, batch.records_count, batch.base_offset, batch.base_timestamp, lat,
                     ts_flag, max_size))  # fmt: skip
        where.append(i)
    if not jobs:
        return _nothing
    args = (jobs, target_magic, frame_header(target_magic))
    if background:
        pending = BUILT_LZ4_START(*args)
        return lambda: _placed(len(batches), where, *pending.result())
    return lambda: _placed(len(batches), where, *convert_lz4(*args))


def wrappers(batches: list, target_magic: int, max_size: int) -> Wrapped:
    """``start`` and its result at once, on the calling thread and the helper."""
    return start(batches, target_magic, max_size, background=False)()


def _placed(count: int, where: list, joined: bytes, lengths: list) -> Wrapped:
    out: list = [None] * count
    view, pos = memoryview(joined), 0
    for i, length in zip(where, lengths):
        if length is not None:
            out[i], pos = view[pos : pos + length], pos + length
    return out, joined if None not in out else None
