"""What an operator or a CI script sees of the broker process, as they would of Kafka's.

* SIGTERM, SIGINT and SIGHUP each stop the broker gracefully (status 0, the
  clean-shutdown marker written), logged as Kafka's ``LoggingSignalHandler``
  logs them; a signal repeated during the stop does not cut it short.
* A listener or metrics address that cannot be bound ends the start with one
  line naming it and the address, status 1, no traceback, the logs closed.
* The lines log-waiting tools look for once the broker serves, and a readable
  "serving on" line with each listener and the metrics endpoint.
* ``process_*`` series in the scrape, no ``*_created`` series.
* ``--version``.
"""

from __future__ import annotations

import importlib.metadata
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from ..broker._admin_client import req
from .harness import ROOT, BrokerProcess, raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
MARKER = ".kafka_cleanshutdown"


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT, signal.SIGTERM])
def test_each_stop_signal_stops_the_broker_gracefully_and_is_logged_as_kafka_logs_it(broker, signum):
    broker.proc.send_signal(signum)
    assert broker.proc.wait(30) == 0
    broker.kill()  # joins the output pump: the whole log read
    text = broker.log_text()
    assert f"Terminating process due to signal {signum.name}" in text
    assert "Registered signal handlers for TERM, INT, HUP" in text
    assert "[BrokerServer id=1] shut down completed" in text
    assert (broker.data_dir / MARKER).exists()


def test_a_signal_repeated_during_the_stop_does_not_cut_it_short(broker):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=20) as idle:
        raw_call(idle, 18, 3, req(18, client_software_name="e2e", client_software_version="1"))
        # the client keeps its connection open: the stop waits its full grace (one second) for it
        broker.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        broker.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        broker.proc.send_signal(signal.SIGINT)
        assert broker.proc.wait(30) == 0
    broker.kill()
    text = broker.log_text()
    assert text.count("Terminating process due to signal") == 1
    assert len(re.findall(r"Signal SIG(TERM|INT): the shutdown that SIGTERM began goes on", text)) == 1  # logged once
    assert "[BrokerServer id=1] shut down completed" in text
    assert (broker.data_dir / MARKER).exists()


def _serve(tmp_path, *overrides: str) -> subprocess.CompletedProcess:
    props = [f"log.dirs={tmp_path / 'data'}", "prometheus.port=0", *overrides]
    args = [arg for prop in props for arg in ("--override", prop)]
    return subprocess.run([sys.executable, "-m", "broker", "serve", "config/server.properties", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def _listening_socket() -> socket.socket:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    return taken


def test_a_listener_port_in_use_ends_the_start_with_one_line_and_the_logs_closed_cleanly(tmp_path):
    first = BrokerProcess(tmp_path / "data").start()
    producer = Producer({"bootstrap.servers": first.bootstrap})
    producer.produce("kept", value=b"v")
    assert producer.flush(30) == 0
    assert first.stop() == 0
    with _listening_socket() as taken:
        port = taken.getsockname()[1]
        result = _serve(tmp_path, f"listeners=PLAINTEXT://127.0.0.1:{port}")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert (f"Socket server failed to bind to 127.0.0.1:{port} (listener PLAINTEXT): Address already in use."
            in output), output  # fmt: skip
    assert "Traceback" not in output and "serving on" not in output
    assert "clean-shutdown marker found" in output  # the logs were loaded before the bind ...
    assert (tmp_path / "data" / MARKER).exists()  # ... and closed cleanly after it failed
    again = BrokerProcess(tmp_path / "data").start()
    try:
        assert "clean-shutdown marker found" in again.log_text() and "recovering" not in again.log_text()
    finally:
        again.kill()


def test_a_listener_host_that_does_not_resolve_is_named(tmp_path):
    result = _serve(tmp_path, "listeners=PLAINTEXT://nonexistent.invalid:0")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert re.search(r"Socket server failed to bind to nonexistent\.invalid:0 \(listener PLAINTEXT\): \S", output)
    assert "Traceback" not in output


def test_a_metrics_port_in_use_is_named_by_its_keys(tmp_path):
    with _listening_socket() as taken:
        port = taken.getsockname()[1]
        result = _serve(tmp_path, "prometheus.host=127.0.0.1", f"prometheus.port={port}")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert (f"Metrics endpoint failed to bind to 127.0.0.1:{port} (prometheus.host, prometheus.port): "
            "Address already in use." in output), output  # fmt: skip
    assert "Traceback" not in output


def test_the_lines_log_waiting_tools_look_for_are_logged_once_the_broker_serves(broker_factory):
    broker = broker_factory(listeners="PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                            listener_security_protocol_map="PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT")  # fmt: skip
    text = broker.log_text()
    # testcontainers-python's KafkaContainer in KRaft mode, and testcontainers-java's (KafkaHelper.WAIT_STRATEGY)
    assert re.search(r".*Kafka Server started.*", text)
    assert re.search(r".*Transitioning from RECOVERY to RUNNING.*", text)
    assert "[BrokerServer id=1] Transition from STARTING to STARTED" in text
    first, second = broker.ports
    assert (f"broker 1 serving on PLAINTEXT://127.0.0.1:{first}, OTHER://127.0.0.1:{second}; "
            f"metrics on 127.0.0.1:{broker.metrics_port}") in text  # fmt: skip
    assert text.index("Kafka Server started") < text.index("serving on")  # the harness waits for the last
    assert re.search(rf"Awaiting socket connections on 127\.0\.0\.1:{first}\.", text)


def test_the_scrape_has_process_series_and_no_created_series(broker):
    samples = {name: value for (name, _labels), value in broker.scrape().items()}
    assert samples["process_open_fds"] > 0 and samples["process_max_fds"] > 0
    assert samples["process_resident_memory_bytes"] > 0 and samples["process_cpu_seconds_total"] > 0
    assert "process_start_time_seconds" in samples
    assert [name for name in samples if name.endswith("_created")] == []


@pytest.mark.parametrize("args", [["--version"], ["serve", "--version"], ["serve", "x.properties", "--version"]])
def test_version_prints_the_package_version(args):
    result = subprocess.run([sys.executable, "-m", "broker", *args], cwd=ROOT, capture_output=True, text=True,
                            timeout=30)  # fmt: skip
    assert (result.returncode, result.stdout) == (0, importlib.metadata.version("minibroker") + "\n")
