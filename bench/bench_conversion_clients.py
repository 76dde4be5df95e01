"""Down-conversion as a real consumer sees it, run by hand: ``python bench/bench_conversion_clients.py``.

``bench_conversion`` times the broker alone over raw sockets. Here the same
librdkafka consumer (confluent-kafka) reads one topic of 1 KiB records twice:
as a modern client (Fetch v11+, records sent as stored) and with
``api.version.request=false`` + ``broker.version.fallback=0.9.0`` (Fetch v1,
every batch down-converted to magic 0 by the broker; for any fallback of 0.10
or later librdkafka negotiates with ApiVersions: tests/e2e/test_old_clients.py). The client's own work
(decompressing, parsing each message, handing it to Python) is in both rows;
that is what an application reading from the broker gets. Uncompressed and
lz4 topics; best of ``TRIALS``. Prints records/s and the ratio converted /
native (goal >= 0.5), and the broker's ``fetchmessageconversions`` count for
each row, which proves the old consumer's rows were down-converted.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_broker import consume, produce  # noqa: E402
from tests.e2e.harness import BrokerProcess  # noqa: E402

RECORDS, SIZE, TRIALS = 100_000, 1024, 3
OLD = {"api.version.request": False, "broker.version.fallback": "0.9.0", "log_level": 3}  # 3: no deprecation notes


def _conversions(broker: BrokerProcess, topic: str) -> float:
    key = ("kafka_server_brokertopicmetrics_fetchmessageconversions_total", (("topic", topic),))
    return broker.scrape().get(key, 0.0)


def _fill(bootstrap: str, topic: str, codec: str) -> None:
    value = os.urandom(SIZE // 2) + bytes(SIZE // 2)  # half random: lz4 saves about half
    produce(bootstrap, topic, RECORDS, SIZE, "1", extra={"compression.type": codec}, value=value)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp)).start()
        try:
            bootstrap = f"127.0.0.1:{broker.port}"
            for codec in ("none", "lz4"):
                topic = f"conv-{codec}"
                _fill(bootstrap, topic, codec)
                for label, extra in (("modern (Fetch v11+)", {}), ("0.9.0 (Fetch v1, magic 0)", OLD)):
                    before = _conversions(broker, topic)
                    best = min(consume(bootstrap, topic, RECORDS, extra) for _ in range(TRIALS))
                    rows.append((codec, label, best, _conversions(broker, topic) - before))
        finally:
            broker.kill()
    print(f"{'codec':<7}{'consumer':<30}{'records/s':>12}{'MB/s':>9}{'ratio':>8}{'conversions':>13}")
    for i, (codec, label, seconds, converted) in enumerate(rows):
        ratio = "" if i % 2 == 0 else f"{rows[i - 1][2] / seconds:.2f}"
        speed = f"{RECORDS / seconds:>12,.0f}{RECORDS * SIZE / seconds / 1e6:>9.1f}"
        print(f"{codec:<7}{label:<30}{speed}{ratio:>8}{converted:>13,.0f}")
    print(f"best of {TRIALS}; ratio = converted / native throughput of the same librdkafka consumer (goal >= 0.5)")


if __name__ == "__main__":
    main()
