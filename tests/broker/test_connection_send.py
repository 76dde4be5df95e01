"""``Connection.send_chunks``: small chunks joined, file regions by sendfile, big buffers sent as they are.

Whatever the mix, the peer must receive exactly the chunks' bytes in order.
"""

from __future__ import annotations

import os
import types

import pytest
import trio

from broker.connection import DIRECT_SEND_BYTES, Connection, FileRegion
from broker.converted_send import ConvertedRecords
from broker.request_metrics import AfterSent
from protocol.records import Codec, RecordBatchBuilder
from protocol.records.lazy_convert import BytesSource, start_down_conversion

from ._admin_client import collect


def _converted() -> ConvertedRecords:
    """Down-converted records long enough to be cut at their declared size."""
    data = b""
    for first in range(0, 2000, 50):
        b = RecordBatchBuilder(compression=Codec.NONE, base_offset=first)
        for i in range(50):
            b.append(b"k%d" % i, b"v" * 20, timestamp=1_700_000_000_000)
        data += b.build()
    return ConvertedRecords(start_down_conversion(BytesSource(data), target_magic=1, fetch_offset=0), lambda n: None,
                            lambda s: None)  # fmt: skip


async def test_mixed_chunks_arrive_whole_and_in_order(tmp_path):
    path = tmp_path / "segment"
    path.write_bytes(os.urandom(50_000))
    sent_total = []
    broker = types.SimpleNamespace(metrics=types.SimpleNamespace(bytes_sent=sent_total.append))
    big = os.urandom(DIRECT_SEND_BYTES + 17)
    with open(path, "rb") as f:
        region = FileRegion(f.fileno(), 1000, 40_000)
        converted = _converted()
        chunks = [b"\x00\x00\x00\x10", b"head", region, b"mid", big, memoryview(big)[5:DIRECT_SEND_BYTES + 9],
                  b"t", converted, b"end"]  # fmt: skip
        expected = await collect(chunks)
        assert len(expected) == sum(len(c) for c in chunks)
        a, b = trio.socket.socketpair()
        conn = Connection(broker, trio.SocketStream(a))
        received = bytearray()

        async def receive() -> None:
            while len(received) < len(expected):
                received.extend(await b.recv(1 << 16))

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(receive)
                await conn.send_chunks(chunks)
    a.close()
    b.close()
    assert bytes(received) == expected
    assert sent_total == [len(expected)]


async def test_request_times_are_recorded_when_the_peer_goes_away_mid_send():
    """Kafka records the metrics of the responses in flight on a connection that closes
    (``Processor.processDisconnected``)."""
    done = []
    broker = types.SimpleNamespace(metrics=types.SimpleNamespace(bytes_sent=lambda n: None))
    a, b = trio.socket.socketpair()
    b.close()
    conn = Connection(broker, trio.SocketStream(a))
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await conn.send_chunks([os.urandom(DIRECT_SEND_BYTES + 1), AfterSent(lambda: done.append(True))])
    a.close()
    assert done == [True]
