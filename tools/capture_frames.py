"""Capture golden Kafka frames from real clients talking to real peer brokers.

Usage (from the repository root, with the project venv, which has the clients)::

    .venv/bin/python tools/capture_frames.py \\
        --noida /tmp/peers/bin/noida-db --tansu /tmp/peers/bin/tansu \\
        --out tests/fixtures/frames

How it works:

1. A ``RecordingProxy`` (``capture_proxy.py``) listens on 127.0.0.1:0.
2. For each peer, the peer broker is started on 127.0.0.1 at a free port, in
   memory or in a fresh temporary data directory, and the proxy is pointed at
   it.  Tansu is told to advertise the proxy's address; noida-db always
   advertises its own port, so the proxy swaps that ``host + port`` for its own
   in the forwarded copy of each response (the recorded copy is untouched).
   Either way every later connection of the clients also goes through the
   proxy.
3. For each scenario (``capture_scenarios.py``) the topic is created with
   recording off, then the scenario runs as a subprocess with recording on and
   labelled with its client, settings and peer.
4. ``fixture_writer.write`` deduplicates, caps and writes the ``.bin`` files
   and ``manifest.json``.

A scenario's stdout (which steps worked, which failed) is echoed so that the
README's table can be checked against a fresh run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from capture_proxy import CapturedFrame, CaptureContext, RecordingProxy
from capture_scenarios import SCENARIOS
from fixture_writer import write

HERE = Path(__file__).resolve().parent
NOIDA = "noida-db 0.2.3"
TANSU = "tansu 0.6.0"


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_listening(port: int, timeout: float = 20.0) -> None:
    """Block until 127.0.0.1:``port`` accepts connections."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


class Peer:
    """One peer broker process that this tool started and will stop."""

    def __init__(self, label: str, binary: str) -> None:
        self.label = label
        self.binary = binary
        self.process: subprocess.Popen | None = None
        self.workdir = Path(tempfile.mkdtemp(prefix="capture-peer-"))

    def command(self, port: int, proxy_port: int) -> list[str]:
        if self.label == NOIDA:
            return [self.binary, "start", "--only", "kafka", "--kafka-port", str(port),
                    "--host", "127.0.0.1", "--data-dir", str(self.workdir / "data")]
        return [self.binary, "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
                "--advertised-listener-url", f"tcp://127.0.0.1:{proxy_port}",
                "--storage-engine", "memory://tansu/"]

    def start(self, proxy: RecordingProxy) -> None:
        """Start the broker and point ``proxy`` at it."""
        port = free_port()
        log = open(self.workdir / "peer.log", "wb")  # noqa: SIM115 - lives with the process
        self.process = subprocess.Popen(self.command(port, proxy.port), stdout=log,
                                        stderr=subprocess.STDOUT, cwd=self.workdir)
        wait_listening(port)
        proxy.upstream = ("127.0.0.1", port)
        proxy.rewrite = None
        if self.label == NOIDA:
            host = b"127.0.0.1"
            proxy.rewrite = (host + port.to_bytes(4, "big"), host + proxy.port.to_bytes(4, "big"))

    def stop(self) -> None:
        """Stop the broker (SIGINT, then SIGKILL) and remove its data."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_scenario(args: list[str], timeout: float) -> str:
    """Run ``capture_scenarios.py`` with ``args``; return its output."""
    command = [sys.executable, str(HERE / "capture_scenarios.py"), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        return done.stdout + done.stderr[-2000:]
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        return out + f"\n*** scenario timed out after {timeout}s"


def capture_peer(proxy: RecordingProxy, peer: Peer, names: list[str]) -> None:
    """Run every scenario in ``names`` against ``peer`` through ``proxy``."""
    bootstrap = f"127.0.0.1:{proxy.port}"
    peer.start(proxy)
    try:
        for name in names:
            scenario = SCENARIOS[name]
            topic = "cap-" + name.replace(".", "_")
            proxy.context = None
            print(run_scenario(["setup", bootstrap, topic], 60), end="")
            proxy.context = CaptureContext(scenario.client, scenario.settings, peer.label)
            print(f"=== {peer.label} / {name}", flush=True)
            print(run_scenario([name, bootstrap, topic], scenario.timeout), flush=True)
            proxy.context = None
            time.sleep(1)
    finally:
        peer.stop()


def write_log(frames: list[CapturedFrame], path: Path) -> None:
    """One JSON line per frame (no bytes): who, which api/version, size."""
    with path.open("w") as log:
        for frame in frames:
            line = {"peer": frame.context.peer, "client": frame.context.client,
                    "settings": frame.context.settings, "connection": frame.connection,
                    "direction": frame.direction, "api_key": frame.api_key,
                    "api_version": frame.api_version, "correlation_id": frame.correlation_id,
                    "size": len(frame.data)}
            log.write(json.dumps(line) + "\n")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--noida", help="path of the noida-db binary (skip noida if absent)")
    parser.add_argument("--tansu", help="path of the tansu binary (skip tansu if absent)")
    parser.add_argument("--out", type=Path, default=HERE.parent / "tests" / "fixtures" / "frames")
    parser.add_argument("--log", type=Path, help="also write one JSON line per captured frame here")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated scenario names (default: all)")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    names = [n for n in args.scenarios.split(",") if n]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(f"unknown scenarios {unknown}; known: {list(SCENARIOS)}")
    peers = [Peer(label, path) for label, path in ((NOIDA, args.noida), (TANSU, args.tansu)) if path]
    proxy = RecordingProxy()
    proxy.start()
    try:
        for peer in peers:
            capture_peer(proxy, peer, names)
    finally:
        proxy.stop()
    if args.log:
        write_log(proxy.frames(), args.log)
    entries = write(proxy.frames(), args.out)
    size = sum((args.out / name).stat().st_size for name in entries)
    print(f"wrote {len(entries)} frames, {size} bytes, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
