"""Writing answers to a plain socket, with Kafka's idle expiry for a client that reads nothing.

Kafka's ``Selector`` counts a channel as used only when it is ready, to read
or to write: a client that sends requests but never reads its answers leaves
its channel unwritable, and it is closed once it has been so for
``connections.max.idle.ms``. Here the bytes go straight to the kernel while
it takes them (``os.write``: no checkpoint when nothing has to wait), and
each wait for room in the socket's send buffer is bounded by that time: a
client that takes no byte for that long is gone (``StalledClient``, which
closes the connection as any ``CloseConnection`` does). A client that reads,
however slowly, makes room and restarts the bound, as Kafka's idle time
restarts with every ready event.
"""

from __future__ import annotations

import os

import trio

from .dispatch import CloseConnection


class StalledClient(CloseConnection):
    """The client read nothing of its answers for ``connections.max.idle.ms``."""


async def wait_writable(sock: trio.socket.SocketType, idle_s: float) -> None:
    """Until ``sock`` takes bytes again; ``StalledClient`` after ``idle_s`` without."""
    with trio.move_on_after(idle_s) as waited:
        await sock.wait_writable()
    if waited.cancelled_caught:
        raise StalledClient(f"it read no answer for connections.max.idle.ms ({idle_s * 1000:.0f} ms)")


async def send_plain(sock: trio.socket.SocketType, data, idle_s: float) -> None:
    """All of ``data`` to ``sock``: written while the kernel takes it, waiting (``wait_writable``) in between."""
    view = memoryview(data).cast("B")
    fd = sock.fileno()
    while True:
        try:
            sent = os.write(fd, view)
        except BlockingIOError:
            sent = 0
        except OSError as exc:  # as SocketStream.send_all reports it
            raise trio.BrokenResourceError(str(exc)) from exc
        if sent == len(view):
            return
        view = view[sent:]
        await wait_writable(sock, idle_s)
