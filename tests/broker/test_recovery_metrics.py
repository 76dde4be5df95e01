"""The metrics endpoint while the logs load at start: Kafka's LogManager recovery gauges.

A Kafka process's JMX is up while ``LogManager.loadLogs`` runs, and shows
``remainingLogsToRecover{dir}`` and ``remainingSegmentsToRecover{dir,
threadNum}`` until the last log is loaded. Here a broker is served
(``serve_broker``) on logs left by a crash (no clean-shutdown marker, no
recovery points: every segment is recovered) with
``num.recovery.threads.per.data.dir`` of 1 and of 3, and the first segment
recovery of each loading thread is held until the test has scraped the
endpoint over HTTP: the endpoint answers, the counts are those of a load that
has not finished one log, one segment count per thread (threadNum 0 to n-1,
each the count of the log it holds), no state gauge is there yet and the broker
has not reported itself started (no listener open). Once the load is let go, the recovery gauges are
gone and the state gauges are there. The endpoint is bound on port 0
(prometheus-client's ``start_http_server`` wrapped to ask for it).
"""

from __future__ import annotations

import os
import threading
import urllib.request

import pytest
import trio
from prometheus_client import start_http_server
from prometheus_client.parser import text_string_to_metric_families

import broker.metrics
from broker.config import BrokerConfig
from broker.server import serve_broker
from storage import LogManager
from storage.segment import Segment

from ..storage.lead_helpers import Clock, append

pytestmark = pytest.mark.timeout(60)
LOGS = "kafka_log_logmanager_remaininglogstorecover"
SEGMENTS = "kafka_log_logmanager_remainingsegmentstorecover"


def _crashed_logs(data, partitions: int = 3) -> list[int]:
    """Logs of topic t left as a crash leaves them; the segment count of each partition."""
    lm = LogManager.open([data], {}, Clock())
    lm.create_topic("t", partitions, {"segment.bytes": "700"})
    for p in range(partitions):
        for _ in range(20):
            append(lm.get_log("t", p))
    counts = [len(lm.get_log("t", p).segments) for p in range(partitions)]
    lm.close()
    (data / ".kafka_cleanshutdown").unlink()
    (data / "recovery-point-offset-checkpoint").unlink()
    return counts


def _scrape(port: int) -> dict[tuple[str, tuple], float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip


def _named(samples: dict, name: str) -> dict[tuple, float]:
    return {labels: value for (n, labels), value in samples.items() if n == name}


def _hold_first_recoveries(monkeypatch, threads: int) -> tuple[threading.Event, threading.Event]:
    """(entered, release): each thread's first segment recovery waits for ``release``; ``entered`` is set
    once ``threads`` of them wait."""
    entered, release, lock, holding = threading.Event(), threading.Event(), threading.Lock(), set()
    real = Segment.recover

    def held(self, *args, **kwargs):
        with lock:
            first = threading.get_ident() not in holding
            holding.add(threading.get_ident())
            if len(holding) == threads:
                entered.set()
        if first:
            release.wait(10)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Segment, "recover", held)
    return entered, release


def _endpoint_on_port_0(monkeypatch) -> list:
    servers: list = []

    def on_port_0(_port, addr, registry):
        server, thread = start_http_server(0, addr=addr, registry=registry)
        servers.append(server)
        return server, thread

    monkeypatch.setattr(broker.metrics, "start_http_server", on_port_0)
    return servers


@pytest.mark.parametrize("threads", [1, 3])
async def test_the_endpoint_shows_recovery_progress_while_the_logs_load(tmp_path, monkeypatch, threads):
    data = tmp_path / "data"
    segments = _crashed_logs(data)
    assert min(segments) >= 3
    entered, release = _hold_first_recoveries(monkeypatch, threads)
    servers = _endpoint_on_port_0(monkeypatch)
    config = BrokerConfig.from_props({
        "log.dirs": str(data), "listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1",
        "prometheus.host": "127.0.0.1", "prometheus.port": "9404",  # bound on 0 by the wrapper
        "num.recovery.threads.per.data.dir": str(threads),
    })  # fmt: skip
    started: list = []
    with trio.fail_after(40):
        async with trio.open_nursery() as nursery:

            async def serve() -> None:
                started.append(await nursery.start(serve_broker, config))

            nursery.start_soon(serve)
            try:
                assert await trio.to_thread.run_sync(entered.wait, 10)
                assert servers, "the metrics endpoint is not up while the logs load"
                port = servers[0].server_address[1]
                during = await trio.to_thread.run_sync(_scrape, port)
            finally:
                release.set()
            d = os.path.abspath(data)
            assert _named(during, LOGS) == {(("dir", d),): 3.0}
            shown = _named(during, SEGMENTS)  # the n threads hold the first n logs, in some order
            assert sorted(shown) == [(("dir", d), ("threadNum", str(t))) for t in range(threads)]
            assert sorted(shown.values()) == sorted(float(n) for n in segments[:threads])
            assert _named(during, "kafka_server_replicamanager_partitioncount") == {}  # no state gauge yet
            assert started == []  # not serving: no listener is open
            while not started:
                await trio.sleep(0.01)
            after = await trio.to_thread.run_sync(_scrape, port)
            assert _named(after, LOGS) == {} and _named(after, SEGMENTS) == {}
            assert _named(after, "kafka_server_replicamanager_partitioncount") == {(): 3.0}
            nursery.cancel_scope.cancel()
