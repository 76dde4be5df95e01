"""Down-conversion of whole v2 batches by the C accelerator, a chunk's worth per call.

An LZ4 batch becomes one legacy wrapper (``convert._convert_v2``): decompress,
write the messages, compress again; an uncompressed batch becomes its records
from the fetch offset on, one message each. That is most of what a Fetch
v0-v3 answer costs, and all of it runs without the GIL in the extension
(``_clz4.c``). ``start`` hands it the chunk's bytes; the extension walks the
entries and reads each batch header itself, and takes the batches it can: v2,
LZ4 (when the system's ``liblz4.so.1`` was found) or uncompressed, not
control batches, with at least one record. It checks each one's CRC-32C when
it converts it, so that too is off the event loop's thread; a corrupt batch is
left to Python, which raises ``CorruptRecordError`` in its turn. With
``background`` the extension's helper thread starts converting them and
``start`` returns at once (``convert_chunk_start``), so the broker sends the
previous chunk meanwhile; otherwise the work waits for the call ``start``
returns, and the calling thread and the helper share it (``convert_chunk``).

That call answers, for the entries the extension walked (in order, from the
chunk's start), ``(their output, records written)`` (the output a view into
one buffer) or None for an entry that is unusual in any way, and how many
bytes those entries span; the caller converts the None entries, and any past
that span, in Python, so errors are the same. When every entry went to C, the
buffer itself comes too: it is the chunk's output as it is, without another
copy.

It is used when the accelerator is (``_downconvert_runs.C_EMIT``: the broker
switches both off for ``MINIBROKER_PURE_PYTHON=1``).
"""

from __future__ import annotations

from collections.abc import Callable

from . import _downconvert_runs
from ._accel import BUILT_CHUNK, BUILT_CHUNK_START, LZ4_IN_C
from ._lz4 import frame_header
from ._model import Codec

# per entry walked (output, records written) or None; the bytes those entries span; the whole buffer
# when every entry of the chunk went to C. None: the accelerator is off.
Converted = tuple[list, int, "bytes | None"] | None
_CODECS = (Codec.NONE, Codec.LZ4) if LZ4_IN_C else (Codec.NONE,)


def _nothing() -> Converted:
    return None


def start(data, target_magic: int, fetch_offset: int, max_size: int, *, background: bool) -> Callable[[], Converted]:
    """Hand the chunk ``data`` (whole entries) to C; the call returned gives its entries (see the module)."""
    if (convert := _downconvert_runs.accelerated(BUILT_CHUNK)) is None:
        return _nothing
    args = (data, target_magic, frame_header(target_magic), fetch_offset, max_size, Codec.LZ4 in _CODECS)
    if background:
        pending = BUILT_CHUNK_START(*args)
        return lambda: _placed(len(data), *pending.result())
    return lambda: _placed(len(data), *convert(*args))


def _placed(size: int, joined: bytes, lengths: list, written: list, consumed: int) -> Converted:
    out: list = []
    view, pos = memoryview(joined), 0
    for length, records in zip(lengths, written):
        if length is None:
            out.append(None)
        else:
            out.append((view[pos : pos + length], records))
            pos += length
    return out, consumed, joined if consumed == size and None not in out else None
