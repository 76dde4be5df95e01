"""Broker-side cost of format conversion (KIP-724), run by hand: ``python bench/bench_conversion.py``
(``--help`` lists the options).

Starts the real broker process and drives it over raw sockets with our own
protocol encoder, so the client costs the same for every row and only the
broker's work differs:

* produce 1 KiB records as Produce v9 (magic 2, stored in place) vs Produce v2
  (magic 1, up-converted to v2 by the broker);
* consume the same topic with Fetch v11 (sendfile, no conversion) vs Fetch v3
  (down-converted to magic 1);

each uncompressed and lz4, best of ``--repeats`` rounds (5; native and
converted reads alternate round by round) of 30,000 records (``--batches``
of 100 records: 300, or ``BENCH_BATCHES`` from the environment; 1000 gives
100,000, whose native reads last tens of milliseconds instead of about ten,
so one quick round weighs less). Prints records/s and MB/s and the ratio
converted / native (goal >= 0.5).

Consume time is the wire time: from sending each Fetch to holding its whole
response, which is the broker's work plus the transfer. The consumer then
finds the next fetch offset by walking entry headers (``offset``/``size``, and
``lastOffsetDelta`` of v2 batches); that walk is timed apart and shown in its
own column, not counted: in Python it costs per *entry*, and a legacy message
set has one entry per record against one per 100 records in v2, so it would
bill the format to the broker (a C client parses both per record anyway).
With ``--parse-views`` it builds a batch view per entry instead.

Every round starts on warm memory: four times its record bytes are written to a scratch file and
deleted first, untimed (``bench/timing.py`` ``warm_pages``: on a VM that hands freed memory back to
the host, a first touch of cold pages cost 10x more, and fell on whichever round met it).

Each row also shows the ratio of the median rounds (the best native round is often a lucky one, as
fast as the machine gets, which the converted read, longer and busier, rarely matches), and for
consume rows the cores the broker and the client kept busy together (their CPU time over the wire
time; the client's walk left out). Near 2 on a 2-core machine, the read is bound by the CPU they
share, not by waiting.

A raw limit closes the table: a Fetch v3 answer from an lz4 topic is an lz4
wrapper per batch, so the broker must LZ4-compress every converted byte once
(the native read sends stored bytes). The line times only that, on one core,
best of ``REPEATS``: liblz4's default (fast) mode over the round's converted
messages in Kafka's independent 64 KiB blocks, and shows the converted lz4 row
as a fraction of it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import socket
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

import lz4.block

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request, message_class  # noqa: E402
from protocol.records import Codec, RecordBatchBuilder, iter_batches  # noqa: E402
from bench.peers import cpu_seconds_exact  # noqa: E402
from bench.timing import best_time, warm_pages  # noqa: E402
from tests.e2e.harness import BrokerProcess  # noqa: E402

RECORD = 1024
PER_BATCH = 100
BATCHES = int(os.environ.get("BENCH_BATCHES", "300"))
REPEATS = 5
PRODUCE, FETCH, CREATE = API_BY_KEY[0], API_BY_KEY[1], API_BY_KEY[19]
PARSE_VIEWS = False  # --parse-views
_PREFIX, _INT32 = struct.Struct(">qi"), struct.Struct(">i")
# The batches carry fixed old timestamps: with Kafka's 168 h retention a broker up past its first
# retention check would delete them under a long run, and the consume loop would never catch up.
_BROKER_SETTINGS = {"prometheus.port": "0", "log.retention.ms": "-1"}
T = TypeVar("T")


class Client:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.corr = 0

    def call(self, api, version: int, body):
        self.corr += 1
        self.sock.sendall(encode_request(RequestHeader(api.key, version, self.corr, "bench"), body))
        size = struct.unpack(">i", self._exact(4))[0]
        return decode_response(self._exact(size), api, version)[1]

    def _exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)


def _batch(magic: int, codec: Codec, seed: int) -> bytes:
    b = RecordBatchBuilder(magic=magic, compression=codec)
    rng = random.Random(seed)
    for i in range(PER_BATCH):
        payload = rng.randbytes(RECORD // 2) + bytes(RECORD // 2)  # half random: lz4 saves about half
        b.append(f"key-{seed}-{i}".encode(), payload, timestamp=1_700_000_000_000 + i)
    return b.build()


def produce(client: Client, topic: str, version: int, magic: int, codec: Codec) -> float:
    req = message_class(PRODUCE, True)
    batches = [_batch(magic, codec, i) for i in range(BATCHES)]
    started = time.perf_counter()
    for data in batches:
        part = req.TopicProduceData.PartitionProduceData(index=0, records=data)
        body = req(acks=1, timeout_ms=30000, topic_data=[req.TopicProduceData(name=topic, partition_data=[part])])
        resp = client.call(PRODUCE, version, body)
        assert resp.responses[0].partition_responses[0].error_code == 0, resp
    return time.perf_counter() - started


def consume(client: Client, topic: str, version: int, total: int) -> tuple[float, float]:
    """``(wire seconds, client walk seconds)`` to read ``total`` records from offset 0."""
    offset, wire, walk = 0, 0.0, 0.0
    while offset < total:
        body = _fetch_body(topic, offset)
        started = time.perf_counter()
        resp = client.call(FETCH, version, body)
        received = time.perf_counter()
        data = bytes(resp.responses[0].partitions[0].records or b"")
        if PARSE_VIEWS:
            batches = list(iter_batches(memoryview(data)))
            offset = batches[-1].next_offset if batches else offset
        else:
            offset = _next_offset(data, offset)
        wire, walk = wire + received - started, walk + time.perf_counter() - received
    return wire, walk


def _fetch_body(topic: str, offset: int):
    """A Fetch of partition 0 of ``topic`` from ``offset``: up to 4 MiB of it, 8 MiB in all."""
    req = message_class(FETCH, True)
    part = req.FetchTopic.FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=4 << 20)
    return req(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=8 << 20,
               topics=[req.FetchTopic(topic=topic, partitions=[part])])  # fmt: skip


def _next_offset(data: bytes, offset: int) -> int:
    """The offset after the last complete entry of ``data`` (``offset`` if there is none)."""
    pos, end = 0, len(data)
    while end - pos >= 17:
        base, size = _PREFIX.unpack_from(data, pos)
        if pos + 12 + size > end:
            break
        last = base + _INT32.unpack_from(data, pos + 23)[0] if data[pos + 16] == 2 else base
        offset, pos = last + 1, pos + 12 + size
    return offset


def converted_messages(client: Client, topic: str, total: int) -> bytes:
    """The legacy message set a Fetch v3 of all ``total`` records of uncompressed ``topic`` returns."""
    offset, out = 0, []
    while offset < total:
        data = bytes(client.call(FETCH, 3, _fetch_body(topic, offset)).responses[0].partitions[0].records or b"")
        offset, out = _next_offset(data, offset), out + [data]
    return b"".join(out)


def lz4_raw_seconds(data: bytes) -> float:
    """Best time of LZ4-compressing ``data`` once, default mode, independent 64 KiB blocks, one core, with
    the system's liblz4 as the broker's C path uses it (python-lz4 where it is missing)."""
    blocks = [data[i : i + 65536] for i in range(0, len(data), 65536)]
    try:
        lib = ctypes.CDLL("liblz4.so.1")
    except OSError:
        return best_time(lambda: [lz4.block.compress(b, store_size=False) for b in blocks], REPEATS)
    out = ctypes.create_string_buffer(1 << 17)
    return best_time(lambda: [lib.LZ4_compress_default(b, out, len(b), len(out)) for b in blocks], REPEATS)


def _create(client: Client, name: str, codec: str) -> None:
    req = message_class(CREATE, True)
    cfg = [req.CreatableTopic.CreatableTopicConfig(name="compression.type", value=codec)]
    client.call(CREATE, 5, req(topics=[req.CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                                                          configs=cfg)], timeout_ms=5000))  # fmt: skip


def _cpu_of(pid: int) -> Callable[[], float]:
    """A reader of the CPU seconds (every thread, to the nanosecond) process ``pid`` has used so far."""
    return lambda: cpu_seconds_exact([pid])


def _timed(cpu: Callable[[], float], fn: Callable[[], T]) -> tuple[T, float, float]:
    """``fn()``'s result, the broker's CPU seconds and this process's (the client's) while it ran."""
    before, client = cpu(), time.process_time()
    result = fn()
    return result, cpu() - before, time.process_time() - client


def _rows(client: Client, cpu: Callable[[], float], scratch: Path) -> list[tuple]:
    """``(path, version, best seconds, client walk seconds or None, broker CPU s per round, median seconds,
    busy cores or None)`` per row. Each produce round starts on warm memory (``warm_pages`` in ``scratch``)."""
    rows = []
    total = PER_BATCH * BATCHES
    for codec in (Codec.NONE, Codec.LZ4):
        name = "uncompressed" if codec is Codec.NONE else "lz4"
        for label, version, magic in (("v9", 9, 2), ("v2 (up-convert)", 2, 1)):
            topic = f"bench-{name}-{version}"
            _create(client, topic, "producer")
            runs = [_warm_then_timed(cpu, lambda: produce(client, topic, version, magic, codec), scratch, total)
                    for _ in range(REPEATS)]
            rows.append((f"produce {name}", label, min(r[0] for r in runs), None, sum(r[1] for r in runs) / REPEATS,
                         statistics.median(r[0] for r in runs), None))  # fmt: skip
        rows += _consume_rows(client, cpu, f"bench-{name}-9", name, total, scratch)
    return rows


def _warm_then_timed(cpu: Callable[[], float], fn: Callable[[], T], scratch: Path, records: int):
    """``_timed(cpu, fn)`` after four times the round's record bytes were written and deleted (untimed)."""
    warm_pages(scratch, 4 * records * RECORD)
    return _timed(cpu, fn)


def _consume_rows(client: Client, cpu: Callable[[], float], topic: str, name: str, total: int,
                  scratch: Path) -> list[tuple]:
    """Native and converted reads of ``topic`` in alternate rounds, so a slower spell of the machine
    (a shared VM's speed drifts by 2x) falls on both; best and median round of each, mean broker CPU, and
    the cores broker and client kept busy (median; the client's walk, which is not timed, left out)."""
    def timed(version: int) -> tuple:
        return _warm_then_timed(cpu, lambda: consume(client, topic, version, total), scratch, total)

    rounds = [(timed(11), timed(3)) for _ in range(REPEATS)]
    out = []
    for i, label in enumerate(("v11", "v3 (down-convert)")):
        wire, walk = min((r[i][0] for r in rounds), key=lambda t: t[0])
        busy = statistics.median((r[i][1] + r[i][2] - r[i][0][1]) / r[i][0][0] for r in rounds)
        out.append((f"consume {name}", label, wire, walk, sum(r[i][1] for r in rounds) / REPEATS,
                    statistics.median(r[i][0][0] for r in rounds), busy))  # fmt: skip
    return out


def _parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=BATCHES,
                        help=f"batches of {PER_BATCH} records per topic (default: BENCH_BATCHES or 300)")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="rounds per row; the best and the median count")
    parser.add_argument("--parse-views", action="store_true",
                        help="the consumer builds a batch view per entry instead of walking entry headers")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    global BATCHES, REPEATS, PARSE_VIEWS
    args = _parse_args(argv)
    BATCHES, REPEATS, PARSE_VIEWS = args.batches, args.repeats, args.parse_views
    total = PER_BATCH * BATCHES
    mb = total * RECORD / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp), _BROKER_SETTINGS).start()
        try:
            client = Client(broker.port)
            rows = _rows(client, _cpu_of(broker.proc.pid), Path(tmp))
            raw = lz4_raw_seconds(converted_messages(client, "bench-uncompressed-9", total))
        finally:
            broker.kill()
    print(f"{'path':<22}{'version':<20}{'records/s':>12}{'MB/s':>9}{'ratio':>8}{'median ratio':>14}"
          f"{'client walk ms':>16}{'broker CPU ms':>15}{'busy cores':>12}")  # fmt: skip
    for i, (path, label, seconds, walk, cpu_s, median, busy) in enumerate(rows):
        ratio = "" if i % 2 == 0 else f"{rows[i - 1][2] / seconds:.2f}"
        median_ratio = "" if i % 2 == 0 else f"{rows[i - 1][5] / median:.2f}"
        shown = "" if walk is None else f"{walk * 1000:.1f}"
        cores = "" if busy is None else f"{busy:.2f}"
        print(f"{path:<22}{label:<20}{total / seconds:>12,.0f}{mb / seconds:>9.1f}{ratio:>8}{median_ratio:>14}"
              f"{shown:>16}{cpu_s * 1000:>15.1f}{cores:>12}")  # fmt: skip
    lz4_converted = next(r[2] for r in rows if r[0] == "consume lz4" and r[1].startswith("v3"))
    print(f"{'raw limit: LZ4-compress the converted messages once, one core':<62}{total / raw:>12,.0f}"
          f"{'':>9}{raw / lz4_converted:>8.2f}")  # fmt: skip
    print(f"best of {REPEATS} rounds; ratio = converted / native throughput (goal >= 0.5);")
    print("consume rows time the wire (request to whole response); the client's walk is not counted;")
    print(f"broker CPU ms: CPU time of the broker process (all threads) per round of {total:,} records (mean)")
    print("raw limit ratio = the lz4 v3 row / the raw limit (the part of the limit the whole converted read reaches)")
    print("median ratio = the same from the median rounds; busy cores = (broker CPU + client CPU) / wire time of")
    print("a consume round (median; the client's walk left out): near 2 on a 2-core machine, the read is CPU-bound")


if __name__ == "__main__":
    main()
