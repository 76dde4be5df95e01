"""The bad-input rule: any bytes give a decoded object or one of our exceptions.

Random frames, truncations and byte flips of valid requests are fed to the
framer and every request/response decoder. Anything other than a
``KafkaProtocolError`` (IndexError, struct.error, UnicodeDecodeError,
MemoryError, RecursionError...) fails the test, and pytest-timeout catches a
decoder that loops.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import API_BY_KEY, NEED_DATA, FrameBuffer, KafkaProtocolError, decode_request, decode_response
from protocol.codec import decode_body

# No per-example deadline (it flakes on a loaded CI machine); pytest-timeout still catches a decoder that loops.
_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _request_prefix(api_key: int, version: int) -> bytes:
    api = API_BY_KEY[api_key]
    header = struct.pack(">hhih", api_key, version, 1, 3) + b"cli"
    if api.request_header_version(version) >= 2:
        header += b"\x00"
    return header


@_SETTINGS
@given(data=st.binary(max_size=300))
def test_random_request_frames(data):
    try:
        decode_request(data)
    except KafkaProtocolError:
        pass


@pytest.mark.parametrize("api_key", sorted(API_BY_KEY))
@_SETTINGS
@given(data=st.data())
def test_random_bodies_after_a_valid_header(api_key, data):
    api = API_BY_KEY[api_key]
    version = data.draw(st.integers(api.min_version, api.max_version))
    body = data.draw(st.binary(max_size=200))
    try:
        decode_request(_request_prefix(api_key, version) + body)
    except KafkaProtocolError:
        pass
    try:
        decode_body(api, version, body, False)
    except KafkaProtocolError:
        pass


@_SETTINGS
@given(chunks=st.lists(st.binary(max_size=64), max_size=20), limit=st.integers(0, 4096))
def test_framer_never_fails_except_on_size(chunks, limit):
    fb = FrameBuffer(max_frame_size=limit)
    try:
        for chunk in chunks:
            fb.receive_data(chunk)
            while fb.next_frame() is not NEED_DATA:
                pass
    except KafkaProtocolError:
        pass


def test_response_decoder_rejects_truncation():
    api = API_BY_KEY[18]
    with pytest.raises(KafkaProtocolError):
        decode_response(b"\x00\x00", api, 0)
