"""Down-conversion of LZ4 v2 batches by the C accelerator, a chunk's worth per call.

An LZ4 batch becomes one legacy wrapper (``convert._convert_v2``): decompress,
write the messages, compress again. That is most of what a Fetch v0-v3 answer
costs on an LZ4 topic, and all of it runs without the GIL in the extension's
``convert_lz4`` (``_clz4.c``), which takes every LZ4 batch of a chunk at once
and shares them between the calling thread and a helper thread. ``wrappers``
hands it the batches it can take: v2, LZ4, not control batches, with a good
CRC (a corrupt one must raise ``CorruptRecordError`` in its turn), and at least
one record. It answers None for a batch that is unusual in any way; the caller
converts those, and every other batch, in Python, so errors are the same. The
entries come back in one buffer: when every batch of the chunk went to C that
buffer is the chunk's output as it is, without another copy.

It is used when the accelerator is (``_downconvert_runs.C_EMIT``: the broker
switches both off for ``MINIBROKER_PURE_PYTHON=1``) and the extension found
the system's ``liblz4.so.1``.
"""

from __future__ import annotations

from . import _downconvert_runs
from ._accel import BUILT_LZ4
from ._lz4 import frame_header
from ._model import Codec, TimestampType
from .legacy import TIMESTAMP_TYPE_FLAG


def wrappers(batches: list, target_magic: int, max_size: int) -> tuple[list, bytes | None] | None:
    """Per batch, its wrapper entry as the C path wrote it (a view into one buffer) or None, and that
    buffer itself when it is every batch's output; None when no batch went to C."""
    if (convert_lz4 := _downconvert_runs.accelerated(BUILT_LZ4)) is None:
        return None
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
        return None
    joined, lengths = convert_lz4(jobs, target_magic, frame_header(target_magic))
    out: list = [None] * len(batches)
    view, pos = memoryview(joined), 0
    for i, length in zip(where, lengths):
        if length is not None:
            out[i], pos = view[pos : pos + length], pos + length
    return out, joined if None not in out else None
