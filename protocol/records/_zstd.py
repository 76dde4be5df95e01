"""zstd record data read the way Kafka reads it: zstd-jni's ``ZstdInputStreamNoFinalizer``.

Kafka's ``ZstdCompression.wrapForInput`` reads a batch's records through that
stream over the record bytes, and its record iterators read until it ends. The
stream pulls the input in reads of ``ZSTD_DStreamInSize()`` bytes (128 KiB +
3) and feeds them to ``ZSTD_decompressStream``, which:

* goes on from one frame to the next: concatenated frames are all read, and
  skippable frames are skipped;
* fails on bytes where a frame should start that are no frame magic (not even
  the first bytes of one): garbage after a frame is an error.

The stream ends quietly when its input runs out just after a frame ended, and
also when it runs out later *without another read of the input having been
needed since that frame ended* (the "frame finished" flag is only cleared by a
read): so a cut-short frame, or the first bytes of a magic, after a whole frame
in the same 128 KiB read give what their whole blocks decode to and end the
stream, while past that read they are "Truncated source". A first frame that is
cut short is always an error.

``unzstd`` walks the frames' headers and block headers to find where the whole
frames end, then decodes: one whole frame by ``_one_frame`` (the common case,
sized by its content size or by doubling budgets), anything else by a stream
reader across frames, with the output bounded by ``max_size`` throughout
(``CorruptRecordError``, our limit). Unreadable data is
``CompressedStreamError``.
"""

from __future__ import annotations

import io

import zstandard

from ..errors import CompressedStreamError, CorruptRecordError

_MAGIC = b"\x28\xb5\x2f\xfd"
_SKIPPABLE, _SKIPPABLE_MASK = 0x184D2A50, 0xFFFFFFF0
_JNI_READ = 128 * 1024 + 3  # zstd-jni's source buffer, ZSTD_DStreamInSize()
_STEP = 1 << 20


def _frame_end(data: bytes, pos: int) -> int | None:
    """Where the whole frame (or skippable frame) at ``pos`` ends; None if the data ends first or no magic is there."""
    n = len(data)
    if n - pos < 8:
        return None
    if int.from_bytes(data[pos : pos + 4], "little") & _SKIPPABLE_MASK == _SKIPPABLE:
        end = pos + 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
        return end if end <= n else None
    if data[pos : pos + 4] != _MAGIC:
        return None
    fhd = data[pos + 4]
    single = (fhd >> 5) & 1
    p = pos + 5 + (1 - single) + (0, 1, 2, 4)[fhd & 3] + ((0, 2, 4, 8)[fhd >> 6] or single)
    while True:
        if p + 3 > n:
            return None
        block = int.from_bytes(data[p : p + 3], "little")
        p += 3 + (1 if (block >> 1) & 3 == 1 else block >> 3)  # an RLE block holds one byte
        if block & 1:
            break
    p += 4 if fhd & 4 else 0  # the content checksum
    return p if p <= n else None


def unzstd(data, max_size: int) -> bytes:
    """What Kafka's zstd stream reads from ``data``, at most ``max_size`` bytes of output."""
    data = bytes(data)
    end = frames = 0
    while (nxt := _frame_end(data, end)) is not None:
        end, frames = nxt, frames + 1
    if end == 0 or (frames == 1 and end == len(data) and data[:4] == _MAGIC):
        return _one_frame(data, max_size)
    out = _frames(data[:end], max_size)
    if end < len(data):
        if len(data) > -(-end // _JNI_READ) * _JNI_READ:
            raise CompressedStreamError("zstd data after the last whole frame is not whole frames")
        out += _frames(data[end:], max_size - len(out))
    return out


def _frames(data: bytes, budget: int) -> bytes:
    """Everything a stream reader across frames gives for ``data`` (a cut-short last frame: its whole blocks)."""
    out = bytearray()
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
            while chunk := reader.read(min(_STEP, budget + 1 - len(out))):
                out += chunk
                if len(out) > budget:
                    raise CorruptRecordError("zstd data decompresses to more than the allowed size")
    except zstandard.ZstdError as exc:
        raise CompressedStreamError(f"invalid zstd data: {exc}") from None
    return bytes(out)


def _one_frame(data: bytes, max_size: int) -> bytes:
    """The data as one frame (a faster path than ``_frames``; its errors where the frame is cut short)."""
    try:
        declared = zstandard.frame_content_size(data)
        if declared > max_size:
            raise CorruptRecordError(f"zstd frame declares {declared} bytes, more than {max_size}")
        if declared >= 0:  # the output buffer is sized from the header
            return zstandard.ZstdDecompressor().decompress(data, max_output_size=max_size)
        return _unzstd_unsized(data, max_size)
    except zstandard.ZstdError as exc:
        raise CompressedStreamError(f"invalid zstd data: {exc}") from None


def _unzstd_unsized(data: bytes, max_size: int) -> bytes:
    """A frame without a content size (the Java producer writes those): budgets that double up to ``max_size``.

    python-zstandard allocates the whole ``max_output_size`` before decompressing, which for the
    64 MiB default costs ~5x the decompression of a 100 KiB batch; most frames fit the first budget
    (4x the frame). Too small a budget and a truncated frame fail alike, so the last budget's
    failure is told apart by reading the frame as a stream, one byte past the limit at most: a frame
    that gives that much is over the limit (CORRUPT_MESSAGE, as our cap refuses it), one that ends
    short of it was cut short, a stream error as Kafka's zstd-jni stream throws it.
    """
    dctx = zstandard.ZstdDecompressor()
    budget = min(max_size, max(4 * len(data), 1 << 16))
    while True:
        try:
            return dctx.decompress(data, max_output_size=budget)
        except zstandard.ZstdError as exc:
            if "full frame" not in str(exc):
                raise
            if budget >= max_size:
                break
            budget = min(max_size, 2 * budget)
    with dctx.stream_reader(io.BytesIO(data), read_across_frames=False) as reader:
        if len(reader.read(max_size + 1)) <= max_size:
            raise CompressedStreamError("zstd frame truncated")
    raise CorruptRecordError(f"zstd data decompresses to more than {max_size} bytes")
