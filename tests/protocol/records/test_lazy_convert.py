"""KIP-283 sizing of down-conversion: the first batches at once, the rest in chunks, fitted to a declared size.

The whole-slice ``down_convert`` is the reference: the first output plus every
chunk converted must equal it byte for byte, and the fitted output (cut at the
declared size, or padded with an overflow entry) must read, with
kafka-python's reader, as a prefix of the records the slice holds.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from protocol.errors import CorruptRecordError, UnsupportedCompressionError
from protocol.records import Codec, RecordBatchBuilder, down_convert, iter_batches, valid_bytes
from protocol.records import lazy_convert
from protocol.records.lazy_convert import BytesSource, SizedOutput, fitted_pieces
from protocol.records.lazy_convert import start_down_conversion as _start

from .oracle import kp_read

TS0 = 1_700_000_000_000


def _batch(first_offset: int, n: int, codec: Codec = Codec.NONE, size: int = 30) -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=first_offset)
    for i in range(n):
        b.append(b"k%d" % (first_offset + i), bytes([i % 251]) * size, timestamp=TS0 + i)
    return b.build()


def _marker(offset: int) -> bytes:
    b = RecordBatchBuilder(base_offset=offset, is_control=True, is_transactional=True, producer_id=9)
    b.append(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x05", timestamp=TS0)
    return b.build()


def start_down_conversion(data: bytes, **kw):
    return _start(BytesSource(data), **kw)


def _chunks(conv) -> list[bytes]:
    return [bytes(c) for c in conv.iter_chunks()]


def _fitted(conv) -> bytes:
    """What ``ConvertedRecords.send`` writes."""
    return b"".join(bytes(piece) for piece, _ in fitted_pieces(conv))


def _whole_records(data: bytes, magic: int) -> list:
    return kp_read(down_convert(data, target_magic=magic, fetch_offset=0).records)


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name)
def test_first_batch_is_converted_whole_and_fixes_the_size(codec):
    first, rest = _batch(0, 10, codec), _batch(10, 10, codec) + _batch(20, 10, codec)
    conv = start_down_conversion(first + rest + _batch(30, 3)[:-5], target_magic=1, fetch_offset=0)
    assert conv.first == down_convert(first, target_magic=1, fetch_offset=0)
    assert conv.size == max(len(first + rest) + len(_batch(30, 3)) - 5, len(conv.first.records))
    assert b"".join(_chunks(conv)) == rest  # the partial trailing batch is not read
    assert conv.next_offset == 10


def test_a_first_batch_larger_than_the_slice_is_the_size():
    big = _batch(0, 40)  # v1 messages are longer than v2 records: the output outgrows the slice
    conv = start_down_conversion(big, target_magic=1, fetch_offset=0)
    assert len(conv.first.records) > len(big) and conv.size == len(conv.first.records)
    assert kp_read(_fitted(conv)) == _whole_records(big, 1)


def test_markers_before_the_first_data_are_stepped_over():
    data = _marker(0) + _marker(1) + _batch(2, 5) + _batch(7, 5)
    conv = start_down_conversion(data, target_magic=0, fetch_offset=0)
    assert conv.first == down_convert(_batch(2, 5), target_magic=0, fetch_offset=0)
    assert conv.next_offset == 7 and _chunks(conv) == [_batch(7, 5)]


@pytest.mark.parametrize(
    ("data", "next_offset"),
    [(b"", None), (_batch(0, 5)[:-1], None), (_marker(4) + _marker(5), 6), (_marker(4) + _batch(5, 3)[:40], 5)],
    ids=["empty", "partial", "markers", "marker-then-partial"],
)
def test_nothing_that_converts_declares_nothing(data, next_offset):
    conv = start_down_conversion(data, target_magic=1, fetch_offset=0)
    assert (conv.size, conv.first.records, _chunks(conv), conv.next_offset) == (0, b"", [], next_offset)
    assert _fitted(conv) == b""


def test_errors_in_the_first_batches_are_raised():
    with pytest.raises(UnsupportedCompressionError):
        start_down_conversion(_marker(0) + _batch(1, 3, Codec.ZSTD), target_magic=1, fetch_offset=0)
    corrupt = bytearray(_batch(0, 3))
    corrupt[-2] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        start_down_conversion(bytes(corrupt), target_magic=1, fetch_offset=0)
    with pytest.raises(CorruptRecordError):  # an entry length under 14
        start_down_conversion(struct.pack(">qi", 0, 3) + bytes(20), target_magic=1, fetch_offset=0)


def test_a_framing_error_later_ends_the_chunks_there():
    good = _batch(0, 3) + _batch(3, 3)
    conv = start_down_conversion(good + struct.pack(">qi", 6, 3) + bytes(20) + _batch(7, 3), target_magic=1,
                                 fetch_offset=0)  # fmt: skip
    assert _chunks(conv) == [_batch(3, 3)]


def test_a_later_zstd_chunk_is_padded_over_and_reported_when_it_comes_first():
    """A chunk that fails is not sent at all; the fetch that starts at it reports the error."""
    tail = _batch(4, 4) + _batch(8, 4, Codec.ZSTD) + _batch(12, 4)
    conv = start_down_conversion(_batch(0, 4) + tail, target_magic=1, fetch_offset=0)
    assert _chunks(conv) == [tail]
    with pytest.raises(UnsupportedCompressionError):
        conv.start(tail)()
    fitted = _fitted(conv)
    assert len(fitted) == conv.size and kp_read(fitted) == _whole_records(_batch(0, 4), 1)
    again = start_down_conversion(tail, target_magic=1, fetch_offset=4)
    assert kp_read(_fitted(again)) == _whole_records(_batch(4, 4), 1)
    with pytest.raises(UnsupportedCompressionError):
        start_down_conversion(tail[len(_batch(4, 4)) :], target_magic=1, fetch_offset=8)


@pytest.mark.parametrize(
    ("remaining", "expected"),
    [
        (0, b""),
        (5, struct.pack(">qi", -1, 61)[:5]),
        (12, struct.pack(">qi", -1, 61)),
        (100, struct.pack(">qi", -1, 101) + bytes(88)),
    ],
)
def test_overflow_entry(remaining, expected):
    out = SizedOutput(remaining)
    assert out.pad() == expected and out.remaining == 0


def test_fit_cuts_past_the_declared_size():
    out = SizedOutput(10)
    assert bytes(out.fit(b"abcdef")) == b"abcdef"
    assert bytes(out.fit(b"ghijklmn")) == b"ghij"
    assert (out.remaining, bytes(out.fit(b"xyz")), out.pad()) == (0, b"", b"")


_slices = st.lists(
    st.tuples(st.integers(1, 30), st.sampled_from([Codec.NONE, Codec.GZIP, Codec.LZ4]), st.integers(0, 300),
              st.booleans()),
    min_size=1, max_size=12,
)  # fmt: skip


_SLOW_OK = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]}
_A_SLICE = {"spec": _slices, "chunk_bytes": st.integers(1, 3000), "magic": st.sampled_from([0, 1]),
            "skip": st.integers(0, 5)}  # fmt: skip


def _slice_data(spec) -> tuple[bytes, bool]:
    """The batches (and markers) ``spec`` describes, and whether there is a marker among them."""
    data, offset = b"", 0
    for n, codec, size, marker in spec:
        data += _marker(offset) if marker else _batch(offset, n, codec, size)
        offset += 1 if marker else n
    return data, any(marker for *_, marker in spec)


@settings(max_examples=80, **_SLOW_OK)
@given(**_A_SLICE, cut=st.integers(0, 200))
def test_first_and_chunks_are_the_whole_conversion(monkeypatch, spec, chunk_bytes, magic, skip, cut):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", chunk_bytes)
    data, _ = _slice_data(spec)
    data = data[: max(len(data) - cut, 0)]
    conv = start_down_conversion(data, target_magic=magic, fetch_offset=skip)
    chunks = _chunks(conv)
    converted = [conv.start(c)() for c in chunks]
    whole = down_convert(data, target_magic=magic, fetch_offset=skip)
    assert b"".join([conv.first.records, *(c.records for c in converted)]) == whole.records
    assert conv.first.converted_count + sum(c.converted_count for c in converted) == whole.converted_count
    assert data[: valid_bytes(data)].endswith(b"".join(chunks))
    assert all(len(c) <= chunk_bytes or _one_entry(c) for c in chunks)
    fitted = _fitted(conv)
    assert len(fitted) == conv.size == (max(len(data), len(conv.first.records)) if whole.records else 0)
    read, expected = kp_read(fitted), kp_read(whole.records)
    assert read == expected[: len(read)] and len(read) >= len(kp_read(conv.first.records))


def _one_entry(chunk) -> bool:
    return valid_bytes(bytes(chunk)[:-1]) == 0


class _CountingSource(BytesSource):
    """Records every read, to show what is read when."""

    reads: list

    def read_at(self, position: int, size: int):
        piece = super().read_at(position, size)
        self.reads.append(len(piece))
        return piece


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name)
def test_only_the_first_batches_are_read_up_front_and_chunks_as_they_are_asked_for(monkeypatch, codec):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 4096)
    batches = [_batch(i * 5, 5, codec, size=200) for i in range(100)]
    source = _CountingSource(b"".join(batches))
    object.__setattr__(source, "reads", [])
    conv = _start(source, target_magic=1, fetch_offset=0)
    assert sum(source.reads) == lazy_convert.HEADER_SIZE_UP_TO_MAGIC + len(batches[0])
    source.reads.clear()
    chunks = conv.iter_chunks()
    next(chunks)
    assert sum(source.reads) == 4096  # one window, nothing more until the next chunk is asked for
    rest = list(chunks)
    assert len(rest) > 3 and max(source.reads) <= max(4096, max(len(b) for b in batches))
    assert b"".join(batches[1:]).startswith(bytes(next(conv.iter_chunks())))


def test_an_entry_larger_than_a_chunk_is_read_whole(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 100)
    batches = [_batch(0, 2), _batch(2, 30), _batch(32, 2)]
    conv = start_down_conversion(b"".join(batches), target_magic=0, fetch_offset=0)
    assert _chunks(conv) == batches[1:]


def _spy_begun(monkeypatch) -> list:
    begun: list = []
    start = lazy_convert.LazyDownConversion.start

    def spy(self, chunk):
        begun.append(bytes(chunk))
        return start(self, chunk)

    monkeypatch.setattr(lazy_convert.LazyDownConversion, "start", spy)
    return begun


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4], ids=lambda c: c.name)
def test_chunks_are_begun_ahead_of_the_piece_handed_out_and_not_far_past_the_size(monkeypatch, codec):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)  # one batch per chunk
    begun = _spy_begun(monkeypatch)
    batches = [_batch(i * 10, 10, codec, size=40) for i in range(12)]
    conv = start_down_conversion(b"".join(batches), target_magic=1, fetch_offset=0)
    pieces = fitted_pieces(conv)
    assert next(pieces)[0] == conv.first.records and begun == batches[1 : 1 + lazy_convert.CHUNKS_AHEAD]
    rest = list(pieces)
    used = sum(1 for _, count in rest if count)  # chunks whose output was (at least partly) sent
    assert used < 11 and used <= len(begun) <= used + 1  # v1 messages outgrow the slice before its end
    assert sum(len(p) for p, _ in rest) + len(conv.first.records) == conv.size


def test_chunks_begun_after_one_that_fails_are_not_sent(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)
    begun = _spy_begun(monkeypatch)
    batches = [_batch(0, 4, Codec.LZ4), _batch(4, 4, Codec.LZ4), _batch(8, 4, Codec.ZSTD)]
    batches += [_batch(12 + 4 * i, 4, Codec.LZ4) for i in range(6)]
    conv = start_down_conversion(b"".join(batches), target_magic=1, fetch_offset=0)
    fitted = _fitted(conv)
    assert begun == batches[1:4]  # the chunk after the zstd one was begun before that one failed
    assert len(fitted) == conv.size and kp_read(fitted) == _whole_records(b"".join(batches[:2]), 1)


def test_a_send_given_up_part_way_drops_its_begun_chunks(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)
    data = b"".join(_batch(i * 10, 10, Codec.LZ4, size=300) for i in range(8))
    for _ in range(5):
        pieces = fitted_pieces(start_down_conversion(data, target_magic=0, fetch_offset=0))
        next(pieces), next(pieces)
        del pieces  # the connection went: the chunks begun ahead are dropped unended
    assert kp_read(_fitted(start_down_conversion(data, target_magic=0, fetch_offset=0)))[:10] == _whole_records(
        _batch(0, 10, Codec.LZ4, size=300), 0
    )


# -- read-ahead: where the client resumes, and chunks begun before the answer ------------------------


def _holding(data: bytes, offset: int) -> int:
    """Index of the batch a read from ``offset`` starts at (past the end: the batch count)."""
    views = list(iter_batches(data))
    return next((i for i, view in enumerate(views) if view.next_offset > offset), len(views))


def _read(data: bytes, offset: int, limit: int) -> bytes:
    """What a log read from ``offset`` gives: from the batch holding it, ``limit`` bytes (that batch whole)."""
    start, views = 0, list(iter_batches(data))
    for view in views[: _holding(data, offset)]:
        start += view.size_in_bytes
    first = views[_holding(data, offset)].size_in_bytes if _holding(data, offset) < len(views) else 0
    return data[start : start + max(limit, first)]


def _client_next(fitted: bytes, fetch_offset: int) -> int:
    read = kp_read(fitted)
    return max(r[0] for r in read) + 1 if read else fetch_offset


@settings(max_examples=80, **_SLOW_OK)
@given(**_A_SLICE, limit=st.integers(1, 6000))
@example(spec=[(1, Codec.NONE, 0, False), (1, Codec.NONE, 0, True), (10, Codec.NONE, 0, False)], chunk_bytes=231,
         magic=0, skip=0, limit=301)  # a marker, then a batch the client got a few messages of: it resumes there
def test_resume_offset_lands_in_the_batch_the_client_fetches_next(monkeypatch, spec, chunk_bytes, magic, skip, limit):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", chunk_bytes)
    data, markers = _slice_data(spec)
    conv = start_down_conversion(_read(data, skip, limit), target_magic=magic, fetch_offset=skip)
    if not conv.first.records:
        return
    then = _holding(data, _client_next(_fitted(conv), skip))
    if conv.resume_offset is None:  # it asks again from this fetch's first batches
        assert then <= _holding(data, conv.next_offset - 1)
    elif markers:  # a marker just before a chunk's first entry is not seen: the guess may be past it
        assert _holding(data, conv.resume_offset) >= then
    else:
        assert _holding(data, conv.resume_offset) == then


@settings(max_examples=60, **_SLOW_OK)
@given(**_A_SLICE, limit=st.integers(1, 6000))
def test_chunks_begun_ahead_and_adopted_send_what_a_fresh_conversion_sends(monkeypatch, spec, chunk_bytes, magic,
                                                                          skip, limit):  # fmt: skip
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", chunk_bytes)
    data, _ = _slice_data(spec)
    conv = start_down_conversion(_read(data, skip, limit), target_magic=magic, fetch_offset=skip)
    fitted = _fitted(conv)  # sets resume_offset
    if not conv.first.records or conv.resume_offset is None:
        return
    ahead_slice, nxt = _read(data, conv.resume_offset, limit), _client_next(fitted, skip)
    if _read(data, nxt, limit) != ahead_slice or not ahead_slice:  # the broker drops it unless the region is the same
        return
    ahead = start_down_conversion(ahead_slice, target_magic=magic, fetch_offset=conv.resume_offset)
    if not ahead.first.records:
        return
    ahead.begin_ahead()
    adopting = start_down_conversion(ahead_slice, target_magic=magic, fetch_offset=nxt)
    assert adopting.adopt(ahead) and ahead.ahead is None
    fresh = start_down_conversion(ahead_slice, target_magic=magic, fetch_offset=nxt)
    event("adopted")
    assert _fitted(adopting) == _fitted(fresh)


def test_chunks_begun_ahead_are_not_begun_again(monkeypatch):
    monkeypatch.setattr(lazy_convert, "CHUNK_SOURCE_BYTES", 1)  # one batch per chunk
    batches = [_batch(i * 10, 10, Codec.LZ4, size=40) for i in range(6)]
    fresh = _fitted(start_down_conversion(b"".join(batches), target_magic=1, fetch_offset=0))
    begun = _spy_begun(monkeypatch)
    conv = start_down_conversion(b"".join(batches), target_magic=1, fetch_offset=0)
    conv.begin_ahead()
    assert begun == batches[1 : 1 + lazy_convert.CHUNKS_AHEAD]
    assert _fitted(conv) == fresh
    assert begun == batches[1 : 1 + len(begun)] and len(begun) > lazy_convert.CHUNKS_AHEAD  # each begun once


def test_adopt_refuses_another_place_magic_or_nothing_begun():
    data = b"".join(_batch(i * 10, 10, Codec.LZ4) for i in range(4))
    later = data[len(_batch(0, 10, Codec.LZ4)) :]
    ahead = start_down_conversion(data, target_magic=1, fetch_offset=0)
    assert not start_down_conversion(data, target_magic=1, fetch_offset=3).adopt(ahead)  # nothing begun yet
    ahead.begin_ahead()
    assert not start_down_conversion(data, target_magic=0, fetch_offset=3).adopt(ahead)
    assert not start_down_conversion(later, target_magic=1, fetch_offset=10).adopt(ahead)
    assert start_down_conversion(data, target_magic=1, fetch_offset=3).adopt(ahead) and ahead.ahead is None
