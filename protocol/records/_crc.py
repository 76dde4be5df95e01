"""CRC-32 (IEEE) of legacy messages: the C accelerator's when it is built, else zlib's.

Both give the same values (``tests/protocol/records/test_downconvert_c.py``
checks the C one against zlib at every length around its 16/64-byte steps);
the C one folds with PCLMULQDQ on x86-64, several times faster on the large
values of compressed wrappers. Same call as ``zlib.crc32(data, value=0)``.
"""

from __future__ import annotations

import zlib

try:
    from ._cdownconvert import crc32
except ImportError:  # built without a C compiler
    crc32 = zlib.crc32

__all__ = ["crc32"]
