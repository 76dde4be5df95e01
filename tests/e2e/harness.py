"""Run the real broker as a child process for end-to-end tests.

``BrokerProcess`` starts ``python -m broker serve config/server.properties``
with overrides that put it on ``127.0.0.1:0`` with its data under a test
directory, waits for the "serving on" log line to learn the bound port (or
for the process's exit: then it fails at once, or starts it again with a new
metrics port when another process took that one meanwhile), and can stop it
with SIGTERM (clean shutdown), kill it with SIGKILL (crash) and start it again
on the same data (``LimitedBroker``: under a file size limit, the disk-failure
hook of the tests). Metrics go to a free local port picked just
before start: ``prometheus.port=0`` disables the endpoint, so the broker
cannot be asked for a port of the system's choosing (which it could report,
as it reports its listeners), and the race with a parallel test is left to
the retry above.
``raw_call`` sends one request with our own encoder over a plain socket and
decodes the answer (for the calls no Python client makes).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request

ROOT = Path(__file__).resolve().parents[2]
# the ready line: "broker 1 serving on PLAINTEXT://127.0.0.1:9092, SSL://[::1]:9093; metrics on 127.0.0.1:9404"
_SERVING = re.compile(r"serving on \w+://127\.0\.0\.1:(\d+)")
_BOUND = re.compile(r"\w+://(?:127\.0\.0\.1|\[::1\]):(\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    def __init__(self, data_dir: Path, overrides: dict[str, str] | None = None, args: list[str] | None = None,
                 env: dict[str, str] | None = None, config: Path | None = None) -> None:  # fmt: skip
        self.data_dir = data_dir
        self.config = config or ROOT / "config" / "server.properties"  # the properties file ``serve`` reads
        self.overrides = dict(overrides or {})
        self.args = list(args or [])  # more command-line arguments of ``serve`` (``--add-scram``)
        self.env = dict(env or {})  # more environment variables (``KAFKA_*`` with ``--kafka-env``)
        self.metrics_port = free_port()
        self.port: int | None = None
        self.ports: list[int] = []  # every bound listener, in the order of ``listeners``
        self.proc: subprocess.Popen | None = None
        self.output: list[str] = []
        self._pump_thread: threading.Thread | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def scrape(self) -> dict:
        """Every sample of the metrics endpoint: ``{(name, sorted label items): value}``."""
        text = urllib.request.urlopen(self.metrics_url, timeout=10).read().decode()
        return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples}  # fmt: skip

    def logins(self, listener: str) -> tuple[float, float]:
        """(successful, failed) authentications counted on ``listener``, from the metrics endpoint."""
        samples = self.scrape()
        return tuple(samples.get((f"kafka_server_socket_server_metrics_{outcome}_authentication_total",
                                  (("listener", listener),)), 0.0) for outcome in ("successful", "failed"))  # fmt: skip

    def _command(self) -> list[str]:
        props = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(self.data_dir),
            "prometheus.host": "127.0.0.1",
            "prometheus.port": str(self.metrics_port),
            **self.overrides,
        }
        cmd = [sys.executable, "-m", "broker", "serve", str(self.config)]
        for key, value in props.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd + self.args

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        for attempt in range(3):
            mark = len(self.output)
            if self._spawn(timeout):
                return self
            self._settle_exit()
            self.kill()
            # The metrics port was free when picked, but another process (a parallel test) took it first.
            if "Address already in use" not in "".join(self.output[mark:]) or attempt == 2:
                break
            self.metrics_port = free_port()
        raise RuntimeError("broker did not start:\n" + "".join(self.output[-50:]))

    def _spawn(self, timeout: float) -> bool:
        """Start the process; True once it serves, False if it exited or ``timeout`` passed first."""
        self.port = None
        self.proc = subprocess.Popen(
            self._command(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        found = threading.Event()
        self._pump_thread = threading.Thread(target=self._pump, args=(self.proc, found), daemon=True)
        self._pump_thread.start()
        return found.wait(timeout) and self.port is not None

    def _settle_exit(self) -> None:
        """A broker whose output ended is exiting: wait for its own status (a kill in between would give -9)."""
        self._pump_thread.join(1)  # type: ignore[union-attr]
        if not self._pump_thread.is_alive():  # type: ignore[union-attr]
            try:
                self.proc.wait(5)  # type: ignore[union-attr]
            except subprocess.TimeoutExpired:
                pass

    def _pump(self, proc: subprocess.Popen, found: threading.Event) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            self.output.append(line)
            m = _SERVING.search(line)
            if m:
                self.port = int(m.group(1))
                self.ports = [int(p) for p in _BOUND.findall(line)]
                found.set()
        proc.stdout.close()  # type: ignore[union-attr]  # EOF: the broker exited
        found.set()  # wakes start() at once when the broker exits before serving

    def stop(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout)
        self._pump_thread.join(timeout)  # its last lines read: ``log_text`` holds the whole stop
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if self._pump_thread is not None:
            self._pump_thread.join(5)

    def restart(self) -> "BrokerProcess":
        self.metrics_port = free_port()
        return self.start()

    def log_text(self) -> str:
        return "".join(self.output)


class LimitedBroker(BrokerProcess):
    """A broker process whose files may not grow past ``file_limit`` bytes (``prlimit --fsize``): a write
    past it fails with EFBIG, as a full disk fails with ENOSPC (Python ignores SIGXFSZ)."""

    def __init__(self, data_dir: Path, file_limit: int, overrides: dict[str, str] | None = None) -> None:
        super().__init__(data_dir, overrides)
        self.file_limit = file_limit

    def _command(self) -> list[str]:
        return ["prlimit", f"--fsize={self.file_limit}", "--", *super()._command()]


def wait_until(predicate, timeout: float = 20.0, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def raw_call(target: int | socket.socket, api_key: int, version: int, body, client_id: str = "e2e"):
    """One request and its decoded answer body, on a new connection to ``127.0.0.1:<target>`` or on the
    open socket ``target``."""
    if isinstance(target, int):
        with socket.create_connection(("127.0.0.1", target), timeout=20) as sock:
            return raw_call(sock, api_key, version, body, client_id)
    target.sendall(encode_request(RequestHeader(api_key, version, 1, client_id), body))
    size = struct.unpack(">i", recv_exactly(target, 4))[0]
    return decode_response(recv_exactly(target, size), API_BY_KEY[api_key], version)[1]


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:  # a socket with a timeout may return less than MSG_WAITALL asks for
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data
