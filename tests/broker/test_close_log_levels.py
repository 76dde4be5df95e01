"""How loud a connection closed for bad input is logged, as Kafka logs it.

Kafka's ``Selector`` warns ("Unexpected error from ...; closing connection") of a frame whose size it
refuses (``InvalidReceiveException``), and its ``SocketServer.processChannelException`` logs an
ERROR ("Closing socket for ... because of error") for a request it cannot parse or does not serve.
A client that just goes away is not worth a line above INFO.
"""

from __future__ import annotations

import logging
import struct

import pytest
import trio

from broker.config import BrokerConfig
from broker.server import serve_broker


async def _send_then_wait_close(port: int, data: bytes) -> None:
    client = trio.socket.socket()
    with client:
        await client.connect(("127.0.0.1", port))
        await client.send(data)
        while await client.recv(4096):  # the broker closes it
            pass


@pytest.mark.parametrize(
    "data, level",
    [
        (struct.pack(">i", 200 << 20), logging.WARNING),  # over socket.request.max.bytes
        (struct.pack(">i", -5), logging.WARNING),
        (struct.pack(">ihhih", 10, 9999, 0, 1, -1), logging.ERROR),  # an API key nobody has
        (struct.pack(">ihhih", 10, 0, 99, 1, -1), logging.ERROR),  # Produce v99
        (struct.pack(">ihhi", 8, 18, 3, 1), logging.ERROR),  # header cut short
    ],
)
async def test_a_connection_closed_for_bad_input_is_logged_at_kafkas_level(tmp_path, caplog, data, level):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0",
                                      "node.id": "1", "prometheus.port": "0"})  # fmt: skip
    caplog.set_level(logging.INFO, logger="broker.connection")
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve_broker, config)
            await _send_then_wait_close(broker.advertised[1], data)
            nursery.cancel_scope.cancel()
    closes = [r.levelno for r in caplog.records if r.getMessage().startswith("closing connection from")]
    assert closes == [level]
