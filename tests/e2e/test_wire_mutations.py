"""Every served API's requests, cut and bent (``wire_mutations``), against a real broker process.

Kafka's rule for bad input: an answer with an error code, or a closed
connection; never a crash, a hang or a leak. Each mutated request of the
oldest and newest version of each API goes to the broker on its own
connection (four at a time). Each must be answered or the connection
closed within 10 s, the broker's log must show no traceback, its memory must
stay where it was, and a new connection still gets ApiVersions and Metadata.
The full campaign (more versions, random byte flips, records payloads,
SASL) stays out of the suite; its findings are in this file's neighbours.
"""

from __future__ import annotations

import socket
import struct
from concurrent.futures import ThreadPoolExecutor

import pytest

from broker.dispatch import REGISTRY, load_handlers
from protocol import API_BY_KEY, message_class
from protocol.records import RecordBatchBuilder

from .harness import raw_call, recv_exactly
from .wire_mutations import mutations, request_pieces

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _outcome(port: int, payload: bytes) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        try:
            head = s.recv(4)
        except ConnectionResetError:
            return "closed"
        if not head:
            return "closed"
        size = struct.unpack(">i", head + recv_exactly(s, 4 - len(head)))[0]
        recv_exactly(s, size)
        return "answered"


def _rss_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) // 1024 for line in status if line.startswith("VmRSS:"))


def _cases() -> list[bytes]:
    load_handlers()
    builder = RecordBatchBuilder()
    builder.append(b"k", b"v", timestamp=1_700_000_000_000)
    records = builder.build()
    cases = []
    for key, h in sorted(REGISTRY.items()):
        for version in sorted({h.min_version, h.max_version}):
            cases += mutations(request_pieces(key, version, records))
    return cases


def test_mutated_requests_of_every_api_are_answered_or_closed(broker):
    cases = _cases()
    before = _rss_mb(broker.proc.pid)
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda payload: _outcome(broker.port, payload), cases))
    assert set(outcomes) == {"answered", "closed"} and len(cases) > 5000
    log = broker.log_text()
    assert "Traceback" not in log and "unexpected error" not in log
    assert _rss_mb(broker.proc.pid) < before + 100
    hello = message_class(API_BY_KEY[18], True)(client_software_name="t", client_software_version="1")
    versions = raw_call(broker.port, 18, 3, hello)
    assert versions.error_code == 0 and versions.api_keys
    assert raw_call(broker.port, 3, 12, message_class(API_BY_KEY[3], True)(topics=None)).brokers
