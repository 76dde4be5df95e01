"""An answer the broker cannot write, over a real socket: the request's error answer, and the connection lives.

JoinGroup v4 from a client whose id is 0x7fff bytes: the MEMBER_ID_REQUIRED answer would carry a member id
made of that client id and a UUID, past what a string may hold, so the broker answers Kafka's
``getErrorResponse`` with UNKNOWN_SERVER_ERROR instead; the same socket then gets its next answer, a new
connection too, and the broker's metrics count the UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

import socket

import pytest

from protocol import API_BY_KEY, ErrorCode, message_class

from .harness import raw_call, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _join_group():
    cls = message_class(API_BY_KEY[11], True)
    protocol = cls.JoinGroupRequestProtocol(name="range", metadata=b"")
    return cls(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
               protocol_type="consumer", protocols=[protocol])  # fmt: skip


def test_join_group_of_a_long_client_id_gets_its_error_answer_on_a_live_connection(broker):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=20) as sock:
        resp = raw_call(sock, 11, 4, _join_group(), client_id="c" * 0x7FFF)
        assert (resp.error_code, resp.generation_id, resp.member_id) == (ErrorCode.UNKNOWN_SERVER_ERROR, -1, "")
        again = raw_call(sock, 11, 4, _join_group(), client_id="short")  # same socket, next request
        assert again.error_code == ErrorCode.MEMBER_ID_REQUIRED and again.member_id.startswith("short-")
    assert raw_call(broker.port, 18, 0, message_class(API_BY_KEY[18], True)()).error_code == ErrorCode.NONE
    key = ("kafka_network_requestmetrics_errors_total", (("error", "UNKNOWN_SERVER_ERROR"), ("request", "JoinGroup")))
    assert wait_until(lambda: broker.scrape().get(key)) == 1
    assert any("JoinGroup v4" in line and "answering UNKNOWN_SERVER_ERROR" in line for line in broker.output)
