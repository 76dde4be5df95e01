"""Integrity of the golden frame fixtures, checked without our own codec.

The fixtures under ``tests/fixtures/frames`` are whole Kafka frames captured
from real clients and peer brokers by ``tools/capture_frames.py``.  These
tests only check that the files are what their names and ``manifest.json``
say: the size prefix matches the file, a request's header carries the api
key, version and correlation id of its name and manifest entry, a response
starts with its correlation id, the request/response cross references agree,
and the manifest and the directory list the same files.  API names are
checked against kafka-python's own ``ApiKey`` enum, an independent oracle.
Decoding the bodies is the codec's test, not this one.
"""

from __future__ import annotations

import json
import re
import struct
import warnings
from pathlib import Path

import pytest

with warnings.catch_warnings():
    # kafka-python's protocol package loads its schemas with a deprecated
    # importlib.resources call at import time; that is not our concern here.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_key import ApiKey

FRAMES = Path(__file__).resolve().parent.parent / "fixtures" / "frames"
MANIFEST: dict[str, dict] = json.loads((FRAMES / "manifest.json").read_text())
FILES = sorted(p.name for p in FRAMES.glob("*.bin"))
NAME = re.compile(r"^(?P<api>[a-z0-9_]+)_(?P<direction>request|response)_v(?P<version>\d+)_(?P<seq>\d{3})\.bin$")
MAX_TOTAL_BYTES = 2 * 1024 * 1024


def snake_case(camel: str) -> str:
    """``ListOffsets`` -> ``list_offsets``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()


def test_manifest_and_directory_list_the_same_files():
    assert FILES, "no fixtures"
    assert sorted(MANIFEST) == FILES


def test_fixture_set_stays_small():
    total = sum((FRAMES / name).stat().st_size for name in FILES)
    assert total < MAX_TOTAL_BYTES


def test_every_client_contributed_requests_and_responses():
    clients = {entry["client"] for entry in MANIFEST.values()}
    for client in clients:
        names = [n for n, e in MANIFEST.items() if e["client"] == client]
        assert any("_request_" in n for n in names), client
        assert any("_response_" in n for n in names), client


@pytest.mark.parametrize("name", FILES)
def test_size_prefix_matches_file_length(name: str):
    data = (FRAMES / name).read_bytes()
    assert len(data) >= 8
    (size,) = struct.unpack_from(">i", data)
    assert size == len(data) - 4


@pytest.mark.parametrize("name", FILES)
def test_name_matches_manifest(name: str):
    match = NAME.match(name)
    assert match, f"unexpected file name {name}"
    entry = MANIFEST[name]
    assert int(match["version"]) == entry["api_version"]
    assert match["api"] == snake_case(ApiKey(entry["api_key"]).name)
    assert entry["client"] and entry["settings"] and entry["peer"]


@pytest.mark.parametrize("name", [n for n in FILES if "_request_" in n])
def test_request_header_matches_name_and_manifest(name: str):
    data = (FRAMES / name).read_bytes()
    api_key, api_version, correlation_id = struct.unpack_from(">hhi", data, 4)
    entry = MANIFEST[name]
    assert (api_key, api_version, correlation_id) == (
        entry["api_key"], entry["api_version"], entry["correlation_id"])
    assert entry["peer"] in entry["sent_to"]
    assert set(entry["answered_by"]) <= set(entry["sent_to"])


@pytest.mark.parametrize("name", [n for n in FILES if "_response_" in n])
def test_response_starts_with_its_correlation_id(name: str):
    data = (FRAMES / name).read_bytes()
    (correlation_id,) = struct.unpack_from(">i", data, 4)
    assert correlation_id == MANIFEST[name]["correlation_id"]


def _partner_key(name: str) -> str:
    return "response" if "_request_" in name else "request"


PAIRED = [n for n in FILES if MANIFEST.get(n, {}).get(_partner_key(n))]


def test_some_requests_are_paired_with_their_responses():
    assert any("_request_" in n for n in PAIRED)


@pytest.mark.parametrize("name", PAIRED)
def test_request_and_response_cross_references_agree(name: str):
    entry = MANIFEST[name]
    other_key = _partner_key(name)
    partner = MANIFEST[entry[other_key]]
    back_key = "request" if other_key == "response" else "response"
    assert partner[back_key] == name, "the partner must point back"
    for field in ("api_key", "api_version", "correlation_id", "client", "settings", "peer"):
        assert partner[field] == entry[field], field
    if other_key == "response":
        assert entry["peer"] in entry["answered_by"]
