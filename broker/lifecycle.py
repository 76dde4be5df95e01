"""The broker process as an operator sees it: stop signals, start and stop lines, bind failures.

**Signals.** SIGTERM, SIGINT and SIGHUP each stop the broker gracefully, as
Kafka's do: its ``LoggingSignalHandler`` logs the signal for those three and
the JVM then runs the shutdown hook, which shuts the server down. The first
one is logged as Kafka logs it ("Terminating process due to signal SIGTERM");
the stop begins once the broker serves (one that comes while the logs load
waits for that). Any later one changes nothing: the JVM runs its shutdown
hooks once and a repeated signal does not cut them short, so here too the
grace, the flush and the clean-shutdown marker always complete; the first
repeat is logged, the rest are not. From just before the trio loop runs until
the process ends none of the three takes its default action (death, status
128+n): inside the loop trio's receiver gets them (``StopSignals.watch``);
before its receiver opens and after it closes ``StopSignals`` keeps them in
a Python handler of its own (one that comes before is acted on by the loop;
one that comes after, when all is written, is only logged). A graceful stop
ends with status 0, whichever signal asked for it.

**Lines.** Once the broker serves it logs what Kafka's KRaft broker logs
when it is up, the lines CI log-wait strategies look for (testcontainers'
KafkaContainer waits for "Transitioning from RECOVERY to RUNNING" in Java
and "Kafka Server started" in Python, in KRaft mode), then our own ready
line, which names each listener with its bound address and the metrics
endpoint: ``broker 1 serving on PLAINTEXT://127.0.0.1:9092; metrics on
127.0.0.1:9404``. The stop logs BrokerServer's state transitions and its
"shutting down" / "shut down completed".

**Bind failures.** ``BindError`` is a listener or the metrics endpoint that
could not be bound (a port in use, a host that does not resolve): the start
ends with one line naming it and the address, status 1, as Kafka's socket
server fails ("Socket server failed to bind to host:port: reason.").
"""

from __future__ import annotations

import logging
import signal
from contextlib import contextmanager
from typing import Any, AsyncIterator, Callable, Iterator

import trio

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
log = logging.getLogger("minibroker")


class BindError(Exception):
    """``what`` (a listener, the metrics endpoint) could not bind ``host:port``; ``where`` names its config."""

    def __init__(self, what: str, where: str, host: str, port: int, cause: OSError) -> None:
        reason = cause.strerror or str(cause)
        super().__init__(f"{what} failed to bind to {host_port(host, port)} ({where}): {reason}.")


def host_port(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets as in a listener URL."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class StopSignals:
    """The three stop signals, received from ``install`` (just before the loop) until the process ends."""

    def __init__(self) -> None:
        self.first: str | None = None  # the signal that stopped the broker
        self._repeat_logged = False
        self._early: list[int] = []  # signals that came before the loop's receiver opened
        self._loop_over = False

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._outside_loop)
        log.info("Registered signal handlers for %s", ", ".join(s.name[3:] for s in STOP_SIGNALS))

    def _outside_loop(self, signum: int, _frame: Any) -> None:
        if self._loop_over:
            self.note(signum)
        else:
            self._early.append(signum)

    def note(self, signum: int) -> bool:
        """Log ``signum``; True if it is the first, the one that stops the broker."""
        name = signal.Signals(signum).name
        if self.first is None:
            self.first = name
            log.info("Terminating process due to signal %s", name)
            return True
        if not self._repeat_logged:
            self._repeat_logged = True
            log.info("Signal %s: the shutdown that %s began goes on", name, self.first)
        return False

    @contextmanager
    def receiving(self) -> Iterator[AsyncIterator[int]]:
        """Trio's receiver of the three; when it closes, they go back to ``_outside_loop`` (a signal still
        pending in it is delivered there too)."""
        with trio.open_signal_receiver(*STOP_SIGNALS) as receiver:
            try:
                yield receiver
            finally:
                self._loop_over = True

    async def watch(self, receiver: AsyncIterator[int], started: trio.Event, serving: trio.CancelScope,
                    on_stop: Callable[[], None]) -> None:  # fmt: skip
        """At the first signal, once ``started`` is set: ``on_stop()`` and cancel ``serving``. Log the later ones."""
        for signum in self._early:
            self.note(signum)
        self._early.clear()
        if self.first is None:
            async for signum in receiver:
                if self.note(signum):
                    break
        await started.wait()
        on_stop()
        serving.cancel()
        async for signum in receiver:
            self.note(signum)


def log_started(broker: Any) -> None:
    """Kafka's lines of a broker up, then our ready line (listeners and metrics endpoint, bound)."""
    node = broker.config.node_id
    log.info("[BrokerLifecycleManager id=%d] The broker is unfenced. Transitioning from RECOVERY to RUNNING.", node)
    log.info("[BrokerServer id=%d] Transition from STARTING to STARTED", node)
    listeners = ", ".join(f"{name}://{host_port(host, port)}" for name, host, port in broker.bound_listeners)
    endpoint = broker.metrics.http_address()
    metrics = f"metrics on {host_port(*endpoint)}" if endpoint else "no metrics endpoint"
    log.info("[KafkaRaftServer nodeId=%d] Kafka Server started", node)
    log.info("broker %d serving on %s; %s", node, listeners, metrics)  # last: all of the above is out when seen


def log_starting(config: Any) -> None:
    log.info("[BrokerServer id=%d] Transition from SHUTDOWN to STARTING", config.node_id)


def log_stopping(config: Any) -> None:
    log.info("[BrokerServer id=%d] Transition from STARTED to SHUTTING_DOWN", config.node_id)
    log.info("[BrokerServer id=%d] shutting down", config.node_id)


def log_stopped(config: Any) -> None:
    log.info("[BrokerServer id=%d] shut down completed", config.node_id)
    log.info("[BrokerServer id=%d] Transition from SHUTTING_DOWN to SHUTDOWN", config.node_id)
