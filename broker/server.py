"""The trio server: listeners, one task per connection, background duties, shutdown.

``serve_broker(config, task_status=...)`` follows trio's ``nursery.start``
protocol: it starts the metrics endpoint, opens the storage in a worker
thread (recovering after an unclean stop; the endpoint shows Kafka's recovery
gauges meanwhile), binds every listener only then (port 0 picks a free port;
``broker.bound`` tells which; an address that cannot be bound ends the start
with a ``BindError`` naming the listener), starts the periodic tasks, then reports the
``Broker`` as started. Each accepted connection knows its listener (what Metadata
advertises to it) and gets Kafka's ``socket.send.buffer.bytes`` /
``socket.receive.buffer.bytes``, within the connection limits of
``connection_quotas.py``; on an SSL or SASL_SSL listener its stream
is wrapped in TLS with the listener's context. Cancelling it is a graceful shutdown:
listeners close; connections take no further request, finish the request and
the answer under way (a waiting one answers at once: ``Broker.stop_waits``)
and end so that clients read every answer written, all
within one grace period from the stop (``closing.py``, started by
``stop_at_cancel``); then the storage writes its checkpoints and
clean-shutdown marker.

A listener that checks signed OAUTHBEARER tokens has its JWKS endpoint
fetched before anything is opened (one that cannot be read stops the start
with a ``ConfigError``), then refreshed by a task of its own (``oauth_jwks.py``).

Periodic duties, all driven from here so storage stays free of timers:
retention of the logs without compact every ``log.retention.check.interval.ms`` (a
compacted log's is the cleaner's, as in Kafka), the idle-segment roll
check (KIP-354: a compacted log with ``max.compaction.lag.ms`` must roll its
active segment on time even with no appends) every second, checkpoint
writes every ``log.flush.offset.checkpoint.interval.ms``, and removal of
``.deleted`` files whose delay has passed. Groups are rebuilt from
``__consumer_offsets`` before the listeners open, and the group
coordinator's timers run as one more task. The log cleaner's threads start
with the server and stop before the storage closes (``broker.cleaning``), as
do moves of partitions between log dirs still copying (their copies stay,
and the next start begins those moves again; ``broker.log_dir_moves``).
Once a disk failure has taken every log dir offline, or the first one, which
holds the metadata (``storage.log_dir_failure``), the server stops with
``AllLogDirsFailed``, as Kafka halts; ``__main__`` exits with status 1.
"""

from __future__ import annotations

import errno
import logging
import socket
from typing import Any

import trio

from storage import LogDirsFailed

from .acl_model import ipv4_unmapped, java_host_address
from .cleaning import start_cleaner, stop_cleaner
from .closing import Closing, stop_at_cancel
from .connection import Connection
from .core import Broker
from .connection_quotas import ConnectionQuotas
from .dispatch import load_handlers
from .lifecycle import BindError, host_port
from .listeners import Listener, served_listeners, with_current_tls
from .sasl_config import jwks_endpoints, new_authenticator
from .tls_stream import TlsStream

log = logging.getLogger("minibroker")
_LISTEN_BACKLOG = 0xFFFF  # as trio's own listeners: the kernel caps it at net.core.somaxconn
_ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}  # out of a resource: retry


async def serve_broker(config: Any, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    broker, listeners, endpoints = await _open_broker(config)
    broker.loop_idle.start()
    trio.lowlevel.add_instrument(broker.loop_idle)
    try:
        async with trio.open_nursery() as nursery:
            bound = []
            quotas = broker.connection_quotas = ConnectionQuotas(config, [listener.name for listener in listeners])
            closing = Closing()
            closing.on_stop.append(broker.stop_waits)
            nursery.start_soon(stop_at_cancel, closing)
            broker.metrics.add_state_collector(lambda: quotas.metric_samples(broker.clock()))
            for listener in listeners:
                sockets = await _bind(listener)
                bound += [(listener.name, *s.socket.getsockname()[:2]) for s in sockets]
                nursery.start_soon(_accept_loop, broker, listener, sockets, (quotas, closing))
            broker.set_bound(bound)
            broker.tls_contexts.update({listener.name: listener.tls for listener in listeners if listener.tls})
            nursery.start_soon(_periodic, broker)
            nursery.start_soon(_watch_log_dirs, broker)
            for endpoint in endpoints:
                nursery.start_soon(endpoint.run)
            nursery.start_soon(broker.groups.run)
            nursery.start_soon(broker.transactions.run)
            start_cleaner(broker)
            broker.log_dir_moves.resume_interrupted()
            broker.start_metrics()
            task_status.started(broker)
    finally:
        trio.lowlevel.remove_instrument(broker.loop_idle)
        with trio.CancelScope(shield=True):
            await broker.log_dir_moves.stop()
            await stop_cleaner(broker)
            broker.close()


async def _open_broker(config: Any) -> tuple[Broker, list[Listener], list]:
    """The broker with its logs, groups and transactions loaded; the listeners to serve; their JWKS endpoints."""
    load_handlers()
    listeners = config.served or served_listeners(config)  # checked once by load (its warnings logged once)
    endpoints = jwks_endpoints(listeners)
    for endpoint in endpoints:  # signed OAUTHBEARER tokens: their JWKS, before anything is opened (ConfigError)
        await endpoint.load()
    broker = await Broker.open_serving(config)  # the metrics endpoint first, then the logs (a worker thread)
    try:
        listeners = with_current_tls(config, listeners)  # the keystores of stored dynamic configs, applied by open
        broker.groups.load()
        broker.transactions.load()
    except BaseException:  # the endpoint and the logs open already: closed
        broker.close()
        raise
    return broker, listeners, endpoints


async def _bind(listener: Listener) -> list[trio.SocketListener]:
    """The listener's listening sockets; ``BindError`` naming it if its address cannot be bound (as Kafka's
    ``SocketServer.openServerSocket`` fails), which ends the start; the broker's logs are then closed."""
    try:
        sockets = None if listener.host else await _every_interface(listener.port)
        if sockets is None:
            sockets = await trio.open_tcp_listeners(listener.port, host=await _listen_address(listener.host))
    except OSError as exc:
        raise BindError("Socket server", f"listener {listener.name}", listener.host or "0.0.0.0", listener.port,
                        exc) from None  # fmt: skip
    for sock in sockets:
        log.info("Awaiting socket connections on %s.", host_port(*sock.socket.getsockname()[:2]))
    return sockets


async def _every_interface(port: int) -> list[trio.SocketListener] | None:
    """An empty host: one socket for every interface, as Kafka's ``InetSocketAddress(port)``, IPv6's wildcard
    taking IPv4 too, so both families share the port (port 0 included: one socket per family would get a
    port each, and the advertised one would miss a family). None on a machine without IPv6."""
    if not socket.has_ipv6:
        return None
    sock = None
    try:
        sock = trio.socket.socket(trio.socket.AF_INET6, trio.socket.SOCK_STREAM)
        sock.setsockopt(trio.socket.IPPROTO_IPV6, trio.socket.IPV6_V6ONLY, 0)
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        await sock.bind(("::", port))
        sock.listen(_LISTEN_BACKLOG)
    except OSError as exc:
        if sock is not None:
            sock.close()
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT):  # IPv6 turned off
            return None
        raise
    return [trio.SocketListener(sock)]


async def _listen_address(host: str) -> str | None:
    """The one address a named host is bound at, as Kafka's ``InetSocketAddress(host, port)`` takes one (Java
    returns IPv4 addresses first): a ``localhost:0`` listener bound at both 127.0.0.1 and ::1 would get a port
    for each, and its advertised port would miss one family. None for every interface (an empty host)."""
    if not host:
        return None
    infos = await trio.socket.getaddrinfo(host, None, type=trio.socket.SOCK_STREAM)
    return min(infos, key=lambda info: info[0] != trio.socket.AF_INET)[4][0]


async def _accept_loop(broker: Broker, listener: Listener, sockets: list, shared: tuple[ConnectionQuotas, Closing],
                       ) -> None:  # fmt: skip
    try:
        async with trio.open_nursery() as nursery:
            # The connections run shielded (``Closing.serving``): a task failing here cancels this nursery but
            # not them, so the stop's grace begins here too and ends them.
            nursery.start_soon(stop_at_cancel, shared[1])
            for sock in sockets:
                nursery.start_soon(_accept_from, broker, listener, sock, shared, nursery)
    finally:  # cancelled (shutdown): the listening sockets close with the loop
        for sock in sockets:
            sock.socket.close()


async def _accept_from(broker: Broker, listener: Listener, sock: trio.SocketListener,
                       shared: tuple[ConnectionQuotas, Closing], nursery: trio.Nursery) -> None:  # fmt: skip
    """Accept while the listener has a free slot (``max.connections``); serve each connection in ``nursery``.

    The slot is checked before ``accept()`` (a full listener leaves new connections in the kernel's backlog)
    and again after it, as Kafka's acceptor waits for a slot once it has accepted: while this loop sat in
    ``accept()``, another listener may have taken the last broker-wide slot."""
    quotas, _closing = shared
    while True:
        await quotas.wait_for_slot(listener.name)
        try:
            stream = await sock.accept()
        except OSError as exc:
            if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                raise
            log.error("accepting on %s failed (%s); retrying in 100 ms", listener.name, exc)
            await trio.sleep(0.1)
            continue
        try:
            address = stream.socket.getpeername()
            ip, port = ipv4_unmapped(address[0]), address[1]  # Kafka's quotas see IPv4 clients as IPv4
        except OSError:
            address, ip, port = (), "?", 0
        now = broker.clock()
        try:
            await _wait_to_admit(quotas, listener.name, now)
        except BaseException:  # shutting down: the accepted connection is closed unserved
            stream.socket.close()
            raise
        ip_wait = quotas.ip_throttle(listener.name, ip, broker.quotas.connection_rate(ip), now)
        if ip_wait:  # past the address's connection_creation_rate quota: closed, unserved, after the wait
            nursery.start_soon(_close_after, stream, ip, ip_wait)
            continue
        over = quotas.admit(listener.name, ip)  # counted before the next accept, so its slot check sees it
        host = java_host_address(ip, address[3] if len(address) > 3 else 0)  # ACLs' and groups' form (Kafka's)
        nursery.start_soon(_serve_connection, broker, stream, listener, shared, (ip, port, over, host))


async def _wait_to_admit(quotas: ConnectionQuotas, listener: str, now: float) -> None:
    """Past a connection creation rate, this connection and the listener wait; then, until there is a slot."""
    wait_ms = quotas.accept_throttle(listener, now)
    if wait_ms:
        await trio.sleep(wait_ms / 1000)
    await quotas.wait_for_slot(listener)


async def _close_after(stream: trio.SocketStream, ip: str, wait_ms: int) -> None:
    log.debug("throttling %s for %d ms: past its connection_creation_rate quota", ip, wait_ms)
    await trio.sleep(wait_ms / 1000)
    await trio.aclose_forcefully(stream)


async def _serve_connection(broker: Broker, stream: trio.SocketStream, listener: Listener,
                            shared: tuple[ConnectionQuotas, Closing], admitted: tuple[str, int, int | None, str],
                            ) -> None:  # fmt: skip
    (quotas, closing), (ip, port, over, host) = shared, admitted
    try:
        if over is not None:
            log.info("Rejected connection from %s, address already has the configured maximum of %d connections.",
                     ip, over)  # fmt: skip
            await trio.aclose_forcefully(stream)
            return
        try:
            _set_buffers(stream.socket, broker.config)
        except OSError:
            pass
        await _serve_admitted(broker, stream, listener, f"{host}:{port}", closing)
    finally:
        stream.socket.close()  # closed already, unless the setup failed before the connection served
        with trio.CancelScope(shield=True):
            await quotas.release(listener.name, ip)


async def _serve_admitted(broker: Broker, stream: trio.SocketStream, listener: Listener, peer: str,
                          closing: Closing) -> None:  # fmt: skip
    connection = Connection(broker, stream, peer, listener.name, listener.protocol, closing=closing)
    if listener.tls is not None:  # SSL, SASL_SSL: TLS first (the handshake is the connection's first step)
        connection.stream = TlsStream(stream, broker.tls_contexts.get(listener.name, listener.tls))
    if listener.sasl is not None:  # SASL_*: nothing but the handshake until the client has logged in
        connection.auth = new_authenticator(listener.sasl, broker.scram, broker.clock)
    metrics = broker.metrics
    metrics.connections.labels(listener.name).inc()
    metrics.connections_created.labels(listener.name).inc()
    try:
        await connection.serve()
    finally:
        metrics.connections.labels(listener.name).dec()
        metrics.connections_closed.labels(listener.name).inc()


def _set_buffers(sock, config: Any) -> None:
    """``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes`` as Kafka applies them (-1: the OS's)."""
    for option, size in ((socket.SO_SNDBUF, config.socket_send_buffer_bytes),
                         (socket.SO_RCVBUF, config.socket_receive_buffer_bytes)):  # fmt: skip
        if size != -1:
            sock.setsockopt(socket.SOL_SOCKET, option, size)


class AllLogDirsFailed(LogDirsFailed):
    """Every log dir, or the first (the metadata's), is offline: the broker stops (Kafka halts with status 1)."""


async def _watch_log_dirs(broker: Broker) -> None:
    """When a log dir fails, long-polling fetches are woken to answer KAFKA_STORAGE_ERROR at once (Kafka's
    DelayedFetch completes on an offline partition); once none is online, or the metadata dir (the first) is
    not, the broker stops (Kafka's LogManager / ReplicaManager.handleLogDirFailure). The storage's hook may run on a worker thread (a group-commit fsync),
    hence the trio token."""
    failures, token, failed = broker.topics.manager.failures, trio.lowlevel.current_trio_token(), trio.Event()

    def on_dir_failure(_root) -> None:
        try:
            token.run_sync_soon(broker.wake_fetches)
            if failures.all_offline or failures.metadata_offline:
                token.run_sync_soon(failed.set)
        except trio.RunFinishedError:  # a worker thread's fsync after the server ended
            pass

    failures.on_dir_failure = on_dir_failure
    if not (failures.all_offline or failures.metadata_offline):
        await failed.wait()
    if failures.all_offline:
        dirs = ", ".join(str(d) for d in failures.dirs)
        why = f"all log dirs in {dirs} have failed"
    else:
        why = f"the metadata log dir {failures.dirs[0]} has failed"
    log.critical("Stopping the broker because %s, as Kafka halts", why)
    raise AllLogDirsFailed(errno.EIO, why)


async def _periodic(broker: Broker) -> None:
    """Run the broker's timed duties; checkpoint writes (fsyncs) go to a worker thread."""
    while True:
        await trio.sleep(broker.tick_interval_s)
        try:
            if broker.tick():
                await trio.to_thread.run_sync(broker.topics.write_checkpoints)
        except Exception:  # a duty failing must not take the broker down
            log.exception("periodic broker duty failed")
