"""Frames captured from real clients (and peer brokers) decode and re-encode byte for byte.

Fixtures live in ``tests/fixtures/frames/<api>_<request|response>_v<N>_<n>.bin``
with the size prefix included (see ``tests/fixtures/README.md`` for how they
were captured). Each request must decode through the framer and
``decode_request`` to the api/version its name says, and ``encode_request`` of
the decoded objects must give back the identical frame; the same for
responses with ``decode_response``/``encode_response``. A mutated copy of
each frame (truncated, one byte flipped) must decode or fail only with our
own exceptions.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from protocol import (
    API_BY_KEY,
    NEED_DATA,
    FrameBuffer,
    KafkaProtocolError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

FRAMES = Path(__file__).resolve().parent.parent / "fixtures" / "frames"
NAME = re.compile(r"^(?P<api>[a-z_]+)_(?P<dir>request|response)_v(?P<version>\d+)_(?P<n>\d+)\.bin$")
_SNAKE = {re.sub(r"(?<!^)(?=[A-Z])", "_", api.name).lower(): api for api in API_BY_KEY.values()}


def _fixtures(direction: str) -> list[Path]:
    if not FRAMES.exists():
        return []
    found = []
    for path in sorted(FRAMES.glob("*.bin")):
        m = NAME.match(path.name)
        if m and m["dir"] == direction and m["api"] in _SNAKE:
            api = _SNAKE[m["api"]]
            if api.min_version <= int(m["version"]) <= api.max_version:
                found.append(path)
    return found


def _one_frame(data: bytes) -> bytes:
    fb = FrameBuffer()
    fb.receive_data(data)
    frame = fb.next_frame()
    assert frame is not NEED_DATA and fb.next_frame() is NEED_DATA
    return bytes(frame)


@pytest.mark.parametrize("path", _fixtures("request"), ids=lambda p: p.name)
def test_request_fixture_round_trips(path):
    data = path.read_bytes()
    m = NAME.match(path.name)
    request = decode_request(_one_frame(data))
    assert request.api is _SNAKE[m["api"]]
    assert request.version == int(m["version"])
    assert encode_request(request.header, request.body) == data


MANIFEST = json.loads((FRAMES / "manifest.json").read_text()) if FRAMES.exists() else {}


def _oracle(path: Path) -> str:
    """What kafka-python's own decoder made of this frame at capture time."""
    return MANIFEST.get(path.name, {}).get("kafka_python_decode", "ok")


@pytest.mark.parametrize("path", _fixtures("response"), ids=lambda p: p.name)
def test_response_fixture_round_trips(path):
    data = path.read_bytes()
    m = NAME.match(path.name)
    api, version = _SNAKE[m["api"]], int(m["version"])
    verdict = _oracle(path)
    if verdict.startswith("error"):
        # A peer's malformed answer (tansu's truncated ListOffsets v0): we must refuse it too.
        with pytest.raises(KafkaProtocolError):
            decode_response(_one_frame(data), api, version)
        return
    if verdict == "ok as v0":
        # An UNSUPPORTED_VERSION answer to a too-new ApiVersions is in v0 layout (KIP-511).
        version = 0
    correlation_id, body = decode_response(_one_frame(data), api, version)
    assert encode_response(api, version, correlation_id, body) == data


def test_there_are_fixtures_from_every_real_client():
    clients = {entry["client"].split()[0] for entry in MANIFEST.values()}
    assert {"kafka-python", "confluent-kafka", "kcat", "aiokafka"} <= clients, clients
    assert len(_fixtures("request")) >= 100


def test_old_client_settings_gave_old_versions():
    seen = {(e["client"].split()[0], e["settings"], e["api_key"], e["api_version"]) for e in MANIFEST.values()}
    assert ("kafka-python", "api_version=(0, 9)", 0, 1) in seen  # Produce v1, magic 0
    assert ("kafka-python", "api_version=(0, 10, 1)", 0, 2) in seen  # Produce v2, magic 1
    assert any(c == "confluent-kafka" and k == 1 and v == 0 for c, _, k, v in seen)  # Fetch v0


@pytest.mark.parametrize("path", _fixtures("request"), ids=lambda p: p.name)
def test_mutated_fixtures_never_crash(path):
    frame = _one_frame(path.read_bytes())
    rng = random.Random(path.name)
    for _ in range(40):
        mutated = bytearray(frame[: rng.randint(0, len(frame))])
        if mutated and rng.random() < 0.7:
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        try:
            decode_request(mutated)
        except KafkaProtocolError:
            pass
