"""What the optional C accelerator ``_cdownconvert`` provides, with the pure-Python stand-ins.

* ``crc32``: CRC-32 (IEEE) of legacy messages; the C one folds with PCLMULQDQ
  on x86-64, several times zlib's speed on the large values of compressed
  wrappers, and gives the same values (``tests/protocol/records/
  test_downconvert_c.py`` checks it against zlib at every length around its
  16/64-byte steps). Same call as ``zlib.crc32(data, value=0)``.
* ``BUILT_EMIT``: the C down-conversion loop, or None when it was not built
  (``_downconvert_runs`` decides whether to use it).
* ``BUILT_PLAIN_ROWS``: the rows of a set of plain legacy messages, the input
  of up-conversion (``legacy.plain_rows`` and wrappers' inner sets try it first).
* ``BUILT_SCAN``: the Produce check of a v2 batch's records
  (``scan.scan_v2_records`` tries it first).
* ``BUILT_ENCODE_ROWS``: rows without headers written as v2 records (the
  builder's ``encode_rows`` tries it first: up-conversion's output), and
  ``BUILT_SCAN_ROWS``, the timestamps, order and null keys of such rows (the
  broker's Produce checks pass rows that cannot fail with it).
* ``BUILT_CHUNK``: the whole batches of a chunk of a log slice, LZ4 ones to
  legacy wrappers and uncompressed ones to messages, on two threads
  (``_cbatches``), and ``BUILT_CHUNK_START``, the same begun on the helper
  thread while the caller goes on; both None when the extension was not
  built. Without the system's ``liblz4.so.1`` (``LZ4_IN_C``) the LZ4 batches
  go the Python way.
* ``new_frame``: a ``bytearray`` of n bytes not zeroed first, for a received
  frame that is filled whole before anyone reads it (``framing.FrameBuffer``);
  ``bytearray`` itself without the extension.

The one place that imports the extension, so a build without a C compiler
changes nothing but speed.
"""

from __future__ import annotations

import zlib

try:
    from ._cdownconvert import crc32
    from ._cdownconvert import emit as BUILT_EMIT
    from ._cdownconvert import plain_rows as BUILT_PLAIN_ROWS
    from ._cdownconvert import scan as BUILT_SCAN
    from ._cdownconvert import encode_rows as BUILT_ENCODE_ROWS
    from ._cdownconvert import scan_rows as BUILT_SCAN_ROWS
    from ._cdownconvert import convert_chunk as BUILT_CHUNK
    from ._cdownconvert import convert_chunk_start as BUILT_CHUNK_START
    from ._cdownconvert import lz4_available
    from ._cdownconvert import uninitialized_bytearray as new_frame
except ImportError:  # built without a C compiler
    crc32 = zlib.crc32
    BUILT_EMIT = BUILT_CHUNK = BUILT_CHUNK_START = BUILT_PLAIN_ROWS = BUILT_SCAN = None
    BUILT_ENCODE_ROWS = BUILT_SCAN_ROWS = None
    new_frame = bytearray
    LZ4_IN_C = False
else:
    LZ4_IN_C = lz4_available()

__all__ = [
    "BUILT_CHUNK", "BUILT_CHUNK_START", "BUILT_EMIT", "BUILT_ENCODE_ROWS", "BUILT_PLAIN_ROWS", "BUILT_SCAN",
    "BUILT_SCAN_ROWS", "LZ4_IN_C", "crc32", "new_frame",
]  # fmt: skip
