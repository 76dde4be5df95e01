"""``serve --kafka-env``: the environment of an apache/kafka docker-compose service configures the broker.

The broker process starts from ``config/docker.properties`` (what the image
runs) with the ``environment:`` block of the single-node example of the
apache/kafka image (KRaft roles, a CONTROLLER listener, two client
listeners, CLUSTER_ID ...), ports made free ones on 127.0.0.1. Each client
listener advertises its own address, the cluster id is CLUSTER_ID, the JVM's
variables are left alone, a variable naming no key stops the start naming
it, and a log dir formatted with another cluster id is refused.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from ..broker._admin_client import req
from .harness import _BOUND, ROOT, free_port, raw_call

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]
CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"


def _environment(tmp_path, host_port: int, internal_port: int) -> dict[str, str]:
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT_HOST://localhost:{host_port},PLAINTEXT://broker:{internal_port}",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@broker:29093",
        "KAFKA_LISTENERS": f"CONTROLLER://:29093,PLAINTEXT_HOST://127.0.0.1:{host_port},"
                           f"PLAINTEXT://127.0.0.1:{internal_port}",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "CLUSTER_ID": CLUSTER_ID,
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_LOG_DIRS": str(tmp_path / "kraft-combined-logs"),
        "KAFKA_HEAP_OPTS": "-Xmx1G -Xms1G",  # the JVM's: not a key
        "KAFKA_PROMETHEUS_HOST": "127.0.0.1",
        "KAFKA_PROMETHEUS_PORT": "0",
    }  # fmt: skip


def _serve(env: dict[str, str], args: tuple[str, ...] = ()) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_") and k != "CLUSTER_ID"}
    return subprocess.Popen([sys.executable, "-m", "broker", "serve", "config/docker.properties", "--kafka-env",
                             *args], cwd=ROOT, env={**clean, **env, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)  # fmt: skip


def _lines_until_serving(proc: subprocess.Popen) -> list[str]:
    """The broker's output up to its ready line."""
    lines = []
    for line in proc.stdout:  # type: ignore[union-attr]
        lines.append(line)
        if "serving on" in line:
            return lines
    raise AssertionError("the broker exited before serving:\n" + "".join(lines))


def _serving(proc: subprocess.Popen) -> list[int]:
    for line in proc.stdout:  # type: ignore[union-attr]
        if "serving on" in line:
            return [int(p) for p in _BOUND.findall(line)]
    raise AssertionError("the broker exited before serving")


def test_an_apache_kafka_compose_environment_configures_the_broker(tmp_path):
    host_port, internal_port = free_port(), free_port()
    proc = _serve(_environment(tmp_path, host_port, internal_port))
    try:
        assert _serving(proc) == [host_port, internal_port]  # the CONTROLLER listener is not bound
        for port, host in ((host_port, "localhost"), (internal_port, "broker")):
            metadata = raw_call(port, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
            assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [(1, host, port)]
            assert metadata.cluster_id == CLUSTER_ID
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)  # the rest of its output; closes the pipe
    assert proc.returncode == 0
    meta = (tmp_path / "kraft-combined-logs" / "meta.properties").read_text()
    assert f"cluster.id={CLUSTER_ID}" in meta


@pytest.mark.parametrize(("change", "message"), [
    ({"KAFKA_NUM_PARTITIONS": "many"},
     "Invalid value many for configuration num.partitions: Not a number of type INT (set by KAFKA_NUM_PARTITIONS)"),
    ({"CLUSTER_ID": "short"}, "CLUSTER_ID: 'short' is not a cluster id"),
])  # fmt: skip
def test_bad_variables_stop_the_start_naming_them(tmp_path, change, message):
    proc = _serve({**_environment(tmp_path, free_port(), free_port()), **change})
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1 and message in output


def test_kubernetes_and_other_images_variables_are_ignored_as_kafka_ignores_them(tmp_path):
    """A Kubernetes Service named kafka gives the pod KAFKA_PORT=tcp://..., KAFKA_SERVICE_HOST ... and other
    images' compose files set KAFKA_CFG_* or KAFKA_CONFLUENT_*: Kafka, which gets them all as keys from the
    apache/kafka image, ignores them, so the broker starts, warning about each."""
    host_port, internal_port = free_port(), free_port()
    extra = {"KAFKA_PORT": "tcp://10.96.0.12:9092", "KAFKA_SERVICE_HOST": "10.96.0.12", "KAFKA_SERVICE_PORT": "9092",
             "KAFKA_PORT_9092_TCP": "tcp://10.96.0.12:9092", "KAFKA_PORT_9092_TCP_ADDR": "10.96.0.12",
             "KAFKA_PORT_9092_TCP_PORT": "9092", "KAFKA_PORT_9092_TCP_PROTO": "tcp",
             "KAFKA_CFG_NODE_ID": "0", "KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE": "false"}  # fmt: skip
    proc = _serve({**_environment(tmp_path, host_port, internal_port), **extra})
    lines = []
    try:
        lines = _lines_until_serving(proc)
        metadata = raw_call(host_port, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
        assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [(1, "localhost", host_port)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    output = "".join(lines)
    assert "KAFKA_PORT sets port, which is not a Kafka broker config: ignored (Kafka removed it; use listeners)" in output
    for variable in extra:
        assert f"{variable} sets " in output


def test_a_log_dir_formatted_with_another_cluster_id_is_refused(tmp_path):
    logs = tmp_path / "kraft-combined-logs"
    logs.mkdir()
    (logs / "meta.properties").write_text("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\n")
    proc = _serve(_environment(tmp_path, free_port(), free_port()))
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"Expected {CLUSTER_ID}, but read MkU3OEVBNTcwNTJENDM2Qk" in output
