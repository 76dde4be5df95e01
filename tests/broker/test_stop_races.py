"""Two ways a stop could go wrong with connections served shielded (``Closing.serving``).

* A task of a listener's accept nursery failing (a bug in a connection's
  setup, an accept error that is not a lack of resources) cancels that
  nursery, but not the shielded connections in it: unless the stop's grace
  begins there too, they served on, the listener accepted no more, and the
  error never reached ``serve_broker``. It must stop the broker within the
  grace, raising the error, as before connections were shielded.
* Frames received together are handled one after another with a checkpoint
  between them; a stop that comes during that checkpoint must drop the next
  frame, not handle it (a Produce would be appended after the stop began).
"""

from __future__ import annotations

import socket

import pytest
import trio

import broker.connection as connection
import broker.server as server
from broker import closing
from broker.config import BrokerConfig

from ._admin_client import create_ok
from .test_graceful_close import RECORDS, _produce, _served


def _config(tmp_path) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": str(tmp_path / "data"), "listeners": "PLAINTEXT://127.0.0.1:0",
                                    "node.id": "1", "prometheus.port": "0"})  # fmt: skip


async def test_a_failing_task_of_the_accept_nursery_stops_the_broker_within_the_grace(tmp_path, monkeypatch):
    calls, real = [], server._set_buffers

    def set_buffers(sock, config):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("injected: a bug in a connection's setup")
        return real(sock, config)

    monkeypatch.setattr(server, "_set_buffers", set_buffers)
    idle = None
    with trio.fail_after(20):
        with pytest.RaisesGroup(pytest.RaisesExc(RuntimeError, match="injected"), flatten_subgroups=True):
            async with trio.open_nursery() as nursery:
                broker = await nursery.start(server.serve_broker, _config(tmp_path))
                idle = socket.create_connection(broker.bound[0])  # served, idle: it must not hold the broker
                await trio.sleep(0.2)
                began = trio.current_time()
                socket.create_connection(broker.bound[0]).close()  # its task fails
                await trio.sleep_forever()
    took = trio.current_time() - began
    idle.close()
    assert took < closing.STOP_GRACE_SECONDS + 2.0, took


async def test_a_stop_during_the_checkpoint_between_pipelined_frames_drops_the_next_one(tmp_path, monkeypatch):
    after_stop, real = [], connection.dispatch

    async def dispatch(broker, conn, frame):
        if conn.closing is not None and conn.closing.stopping:
            after_stop.append(int.from_bytes(frame[4:8], "big"))  # its correlation id
        return await real(broker, conn, frame)

    monkeypatch.setattr(connection, "dispatch", dispatch)
    with trio.fail_after(30):
        async with _served(tmp_path) as (broker, scope, stopped), trio.open_nursery() as nursery:
            await create_ok(broker, "t", 1)
            log = broker.topics.manager.get_log("t", 0)
            sock = socket.create_connection(broker.bound[0])
            data = b"".join(_produce(cid) for cid in range(2000))
            nursery.start_soon(trio.to_thread.run_sync, sock.sendall, data)
            while log.log_end_offset < 200 * RECORDS:
                await trio.sleep(0)  # runs between the connection's frames: the stop lands in a checkpoint
            scope.cancel()
            await stopped.wait()
            sock.close()
    assert after_stop == []
