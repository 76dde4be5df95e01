"""The C accelerator of down-conversion: used on valid payloads, declines on anything unusual, same bytes.

``test_downconvert_fused`` compares both implementations against the row
encoder on random batches; here are the edges that random batches rarely hit:
the accelerator must actually take valid payloads (or the speed claim is
empty), must hand every odd payload back to the Python loop (which raises the
decoder's error), and must compute CRC-32 exactly as zlib does.
"""

from __future__ import annotations

import os
import platform
import random
import shutil
import struct
import zlib
from pathlib import Path

import crc32c
import pytest

from protocol.records import Codec, RecordBatchBuilder, RecordBatchView, down_convert
from protocol.records import _downconvert_runs
from protocol.records.varint import encode_varint, encode_varlong
from tests.protocol.records.helpers import python_only

if shutil.which("cc"):  # a compiler is here, so setup must have built the accelerator
    from protocol.records import _cdownconvert as cdc
else:
    cdc = pytest.importorskip("protocol.records._cdownconvert")

NO_FETCH_OFFSET = -(1 << 63)


def payload_of(records, base_offset=100, **kw) -> tuple[bytes, int, int]:
    builder = RecordBatchBuilder(base_offset=base_offset, **kw)
    for i, (key, value, headers, attributes) in enumerate(records):
        builder.append(key, value, timestamp=1_700_000_000_000 + i, headers=headers, attributes=attributes)
    view = RecordBatchView(builder.build())
    return bytes(view.records_payload()), view.records_count, view.base_timestamp


def both(data: bytes, count: int, *args):
    """(C result, Python result) of emitting ``data``; the C one is None when it declines."""
    c = cdc.emit(data, count, *args)
    parts: list = []
    with python_only():
        totals = _downconvert_runs.emit_records(parts, data, count, args[:3], *args[3:])
    return c, (b"".join(parts), *totals)


RECORDS = [
    (b"k1", b"v" * 10, (), 0),
    (None, b"null key", (), 0),
    (b"", b"", (), 0),  # empty key, empty value: not a tombstone
    (b"k4", None, (), 0),  # null value: tombstone
    (b"k5", b"payload", (), 1),  # KIP-87 flag: written with a null value
    (b"k6", b"with headers", (("h", b"x"),), 0),
]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("fetch_offset", [NO_FETCH_OFFSET, 102, 106])
@pytest.mark.parametrize("append_time", [None, 1_800_000_000_000])
def test_every_record_shape_is_taken_and_matches_python(magic, fetch_offset, append_time):
    data, count, base_ts = payload_of(RECORDS)
    c, py = both(data, count, 100, base_ts, append_time, magic, 0, fetch_offset, 3)
    assert c is not None
    assert c == py
    assert c[4] is False  # one record has headers: the caller must run the full scan


def test_nothing_written_reports_what_the_python_loop_reports():
    data, count, base_ts = payload_of(RECORDS[:2])
    c, py = both(data, count, 100, base_ts, None, 1, 0, 10_000, 0)
    assert c == py == (b"", 0, -1, -(1 << 64), True)


def test_big_payload_releases_the_gil_and_matches():
    records = [(b"key-%d" % i, os.urandom(700), (), 0) for i in range(200)]  # > 64 KiB of records
    data, count, base_ts = payload_of(records)
    assert len(data) >= 1 << 16
    c, py = both(data, count, 100, base_ts, None, 1, 0, NO_FETCH_OFFSET, 0)
    assert c == py


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def _fields(ts_delta: int = 0, offset_delta: int = 0, key: bytes = b"k", value: bytes = b"v") -> bytes:
    """attributes, deltas, key, value, no headers"""
    head = b"\x00" + encode_varlong(ts_delta) + encode_varint(offset_delta)
    return head + encode_varint(len(key)) + key + encode_varint(len(value)) + value + b"\x00"


ODD = {
    "truncated": _record(_fields())[:-1],
    "trailing byte": _record(_fields()) + b"\x00",
    "record shorter than its fields": _record(_fields()[:-2]),
    "key past its record": _record(_fields(key=b"kk")[:-4]) + b"\x00\x00",
    "varint of six bytes": b"\x80\x80\x80\x80\x80\x01" + _fields(),
    "zero length": b"\x00" + _fields(),
}


@pytest.mark.parametrize("name", list(ODD))
def test_odd_payloads_are_handed_back(name):
    assert cdc.emit(ODD[name], 1, 0, 0, None, 1, 0, NO_FETCH_OFFSET, 0) is None


def test_count_not_matching_the_records_is_handed_back():
    data = _record(_fields()) * 2
    assert cdc.emit(data, 2, 0, 0, None, 1, 0, NO_FETCH_OFFSET, 0) is not None
    for count in (0, 1, 3):
        assert cdc.emit(data, count, 0, 0, None, 1, 0, NO_FETCH_OFFSET, 0) is None


def test_offset_overflow_is_handed_back_and_a_timestamp_wraps_as_in_python():
    data = _record(_fields(ts_delta=10, offset_delta=5))
    top = (1 << 63) - 1
    assert cdc.emit(data, 1, top - 2, 0, None, 1, 0, NO_FETCH_OFFSET, 0) is None  # offset overflows
    c, py = both(data, 1, 0, top - 5, None, 1, 0, NO_FETCH_OFFSET, 0)  # timestamp: Long.MAX + 5 wraps
    assert c == py and c[3] == -(1 << 63) + 4
    assert struct.unpack_from(">q", c[0], 18)[0] == -(1 << 63) + 4  # after offset, size, CRC, magic, attributes


@pytest.mark.parametrize("runs", [False, True], ids=["scalar", "runs"])
@pytest.mark.parametrize("base_ts, deltas", [(-(1 << 63) + 10, (0, -100)), ((1 << 63) - 500, (0, 1000))],
                         ids=["below-min", "above-max"])  # fmt: skip
@pytest.mark.parametrize("magic", [0, 1])
def test_wrapped_timestamps_are_byte_identical_in_c_and_python(runs, base_ts, deltas, magic, monkeypatch):
    """Two records (the scalar loop), or 20 alike records whose timestamps all wrap (the column-wise runs)."""
    deltas = (deltas[1],) * 20 if runs else deltas
    data = b"".join(_record(_fields(ts_delta=d, offset_delta=i)) for i, d in enumerate(deltas))
    taken = []
    real_run = _downconvert_runs._emit_run
    monkeypatch.setattr(_downconvert_runs, "_emit_run", lambda *a: taken.append(a[3]) or real_run(*a))
    c, py = both(data, len(deltas), 0, base_ts, None, magic, 0, NO_FETCH_OFFSET, 0)
    assert c is not None and c == py
    assert taken == ([20] if runs else [])
    wrapped = [(base_ts + d + (1 << 63)) % (1 << 64) - (1 << 63) for d in deltas]
    assert c[3] == max(wrapped)
    if magic:
        messages = [c[0][i * 36 : (i + 1) * 36] for i in range(len(deltas))]  # 26 + key (4 + 1) + value (4 + 1)
        assert [struct.unpack_from(">q", m, 18)[0] for m in messages] == wrapped


def test_down_convert_uses_the_accelerator(monkeypatch):
    calls = []
    monkeypatch.setattr(_downconvert_runs, "C_EMIT", lambda *a: calls.append(a[1]) or cdc.emit(*a))
    builder = RecordBatchBuilder(compression=Codec.GZIP, base_offset=0)  # LZ4 and uncompressed: test_lz4_wrappers_c
    for i in range(50):
        builder.append(b"k", b"v%d" % i, timestamp=i)
    out = down_convert(builder.build(), target_magic=1, fetch_offset=0)
    assert calls == [50] and out.converted_count == 50


CRC_PATHS = {3: "AVX-512 and VPCLMULQDQ", 2: "AVX2 and VPCLMULQDQ", 1: "PCLMULQDQ and SSE4.1", 0: "nothing"}


@pytest.fixture(params=list(CRC_PATHS), ids=["avx512", "avx2", "pclmul", "tables"])
def crc_path(request):
    """Each CRC path in turn: 512-bit folding (AVX-512), 256-bit (AVX2), 128-bit (PCLMULQDQ), slice-by-8
    tables; a path this CPU lacks is skipped (set_fold would quietly take the next one down)."""
    was = cdc.set_fold(request.param)
    if cdc.set_fold(request.param) != request.param:
        cdc.set_fold(was)
        pytest.skip(f"this CPU lacks {CRC_PATHS[request.param]} for CRC path {request.param}")
    yield request.param
    cdc.set_fold(was)


def test_crc_path_levels_are_capped_and_restored():
    was = cdc.set_fold(0)
    try:
        assert cdc.set_fold(99) == 0
        best = cdc.set_fold(-1)
        assert best in (0, 1, 2, 3) and cdc.set_fold(best) == 0
    finally:
        cdc.set_fold(was)


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        pytest.skip("no /proc/cpuinfo to read the CPU's flags from")
    line = next((line for line in text.splitlines() if line.startswith("flags")), None)
    if line is None or platform.machine() != "x86_64":
        pytest.skip("the folding paths are for x86-64 CPUs")
    return set(line.split(":", 1)[1].split())


def test_the_widest_path_the_cpu_has_is_the_one_in_use():
    """An AVX2 CPU with VPCLMULQDQ but no AVX-512 (Zen 3, Alder Lake) takes the 256-bit path, not the 128-bit."""
    flags = cpu_flags()
    expected = 0
    if {"pclmulqdq", "sse4_1"} <= flags:
        expected = 1
        if "vpclmulqdq" in flags:
            expected = 3 if "avx512f" in flags else 2 if "avx2" in flags else 1
    in_use = cdc.set_fold(99)
    assert cdc.set_fold(in_use) == expected == in_use


def x_to_the(e: int) -> int:
    """x^e mod P for zlib's CRC-32 polynomial P, as an ordinary (not reflected) 32-bit polynomial."""
    r = 1
    for _ in range(e):
        r <<= 1
        if r >> 32:
            r ^= 0x1_04C1_1DB7
    return r


def reflected33(v: int) -> int:
    """A polynomial of degree < 33 with its bits in reverse order, as the folding multiplies them."""
    return int(f"{v:033b}"[::-1], 2)


@pytest.mark.parametrize("bits", [128, 512, 1024, 2048])
def test_fold_constants_are_x_to_the_distance_mod_p(bits):
    """Folding a 128-bit lane `bits` further on multiplies its high half by x^(bits-32) mod P and its low half
    (the first 8 bytes, the higher powers in the reflected order) by x^(bits+32) mod P, both bit-reflected in 33
    bits (-32 and +32 rather than 0 and +64: where the reflected products land); the C source holds each pair."""
    source = (Path(cdc.__file__).parent / "_ccrc32.c").read_text()
    pair = f"_mm_set_epi64x(0x{reflected33(x_to_the(bits - 32)):09x}, 0x{reflected33(x_to_the(bits + 32)):09x})"
    assert pair in source


@pytest.mark.parametrize(
    "n", [*range(0, 20), 63, 64, 65, 79, 80, 127, 128, 129, 143, 144, 191, 192, 200, 255, 256, 257, 271, 320,
          383, 384, 385, 511, 512, 1000, 1050, 4096 + 48, 65_537]
)  # around each path's step (16, 64, 128 and 256 bytes) and where each takes over
@pytest.mark.parametrize("misalign", [0, 3])
def test_crc32_is_zlibs(n, misalign, crc_path):
    rng = random.Random(n)
    data = memoryview(rng.randbytes(n + misalign))[misalign:]
    assert cdc.crc32(data) == zlib.crc32(data)
    start = rng.getrandbits(32)
    assert cdc.crc32(data, start) == zlib.crc32(data, start)


def test_crc32_chained_updates_are_one_crc(crc_path):
    rng = random.Random(7)
    data = rng.randbytes(5000)
    for _ in range(200):
        cut = rng.randrange(len(data) + 1)
        assert cdc.crc32(data[cut:], cdc.crc32(data[:cut])) == zlib.crc32(data), cut


def test_crc32_is_zlibs_for_many_lengths_and_offsets(crc_path):
    rng = random.Random(2026)
    data = rng.randbytes(9000)
    for _ in range(300):
        start, n = rng.randrange(64), rng.randrange(9000 - 64)
        piece = memoryview(data)[start : start + n]
        seed = rng.getrandbits(32)
        assert cdc.crc32(piece, seed) == zlib.crc32(piece, seed), (start, n)


@pytest.mark.parametrize(
    "n", [*range(0, 17), 767, 768, 769, 775, 776, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 8192 + 775,
          6 * 8192 + 768 + 9, 200_003]
)  # the three-stretch steps of 3 x 8 KiB and 3 x 256 bytes, and what is left after them
@pytest.mark.parametrize("hardware", [True, False], ids=["sse42", "table"])
def test_crc32c_is_the_crc32c_packages(n, hardware):
    rng = random.Random(n)
    data = memoryview(rng.randbytes(n + 5))[5:]  # misaligned
    assert cdc.crc32c(data, 0, hardware) == crc32c.crc32c(data)
    head = rng.randrange(n + 1)
    assert cdc.crc32c(data[head:], cdc.crc32c(data[:head], 0, hardware), hardware) == crc32c.crc32c(data)
