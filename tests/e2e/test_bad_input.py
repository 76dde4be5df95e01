"""Bad input over real sockets: Kafka's answer for each, and the broker keeps serving.

Each case opens its own connection to a real broker process and sends bytes
a broken or hostile client might send. Frames Kafka refuses at the socket
layer close the connection with no answer (a frame not all sent yet is
waited for, as Kafka does); record problems get the partition-level error
code Kafka gives. After every case, a second connection still gets an
ApiVersions answer and earlier data is unchanged.
A record timestamp past Java's long range wraps as in Kafka: the batch is
stored, and Fetch (down-converted too) and the cleaner go on working.
"""

from __future__ import annotations

import socket
import struct
import time
import zlib

import crc32c
import pytest

from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request, message_class
from protocol.records import Codec, RecordBatchBuilder, iter_batches

from .harness import recv_exactly, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]


def _connect(broker) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    return s




def _roundtrip(s: socket.socket, api_key: int, version: int, body, correlation_id: int = 7):
    s.sendall(encode_request(RequestHeader(api_key, version, correlation_id, "bad-input-test"), body))
    size = struct.unpack(">i", recv_exactly(s, 4))[0]
    return decode_response(recv_exactly(s, size), API_BY_KEY[api_key], version)


def _is_closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True  # a timeout is no close: it propagates and fails the test


def _still_serving(broker) -> None:
    with _connect(broker) as s:
        _, body = _roundtrip(s, 18, 0, message_class(API_BY_KEY[18], True)())
        assert body.error_code == 0 and body.api_keys


def _create(broker, name: str, **configs: str) -> None:
    api = API_BY_KEY[19]
    req = message_class(api, True)
    topic = req.CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                               configs=[req.CreatableTopic.CreatableTopicConfig(name=k.replace("_", "."), value=v)
                                        for k, v in configs.items()])  # fmt: skip
    with _connect(broker) as s:
        _, body = _roundtrip(s, 19, 5, req(topics=[topic], timeout_ms=5000))
        assert body.topics[0].error_code == 0, body


def _produce(broker, topic: str, records: bytes, acks: int = 1, version: int = 9):
    api = API_BY_KEY[0]
    req = message_class(api, True)
    part = req.TopicProduceData.PartitionProduceData(index=0, records=records)
    body = req(acks=acks, timeout_ms=5000, topic_data=[req.TopicProduceData(name=topic, partition_data=[part])])
    with _connect(broker) as s:
        _, resp = _roundtrip(s, 0, version, body)
    return resp.responses[0].partition_responses[0]


def _batch(n: int = 3, key: bytes | None = b"k", value_size: int = 10, codec=Codec.NONE) -> bytearray:
    b = RecordBatchBuilder(compression=codec)
    for i in range(n):
        b.append(key, b"v" * value_size, timestamp=1_700_000_000_000 + i)
    return bytearray(b.build())


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">i", 104_857_601),  # over socket.request.max.bytes
        struct.pack(">i", -5),  # negative length
        struct.pack(">ihhih", 30, 3, 1, 1, -1) + b"\x7f\xee" * 10,  # a valid Metadata v1 header, garbage body
        struct.pack(">i", 11) + struct.pack(">hhih", 3, 5, 1, -1) + b"\x00",  # truncated body (a whole frame)
        struct.pack(">i", 10) + struct.pack(">hhih", 999, 0, 1, -1),  # unknown api key
        struct.pack(">i", 10) + struct.pack(">hhih", 0, 99, 1, -1),  # unsupported produce version
    ],
    ids=["too-large", "negative", "garbage", "truncated", "unknown-key", "bad-version"],
)
def test_refused_frames_close_the_connection(broker, frame):
    with _connect(broker) as s:
        s.sendall(frame)
        assert _is_closed(s)
    _still_serving(broker)


def test_a_frame_not_yet_all_sent_is_waited_for(broker):
    """Bytes short of the announced size are no error: as Kafka's NetworkReceive, the broker waits for the
    rest (up to connections.max.idle.ms) and then answers the whole request."""
    frame = encode_request(RequestHeader(18, 0, 5, "x"), message_class(API_BY_KEY[18], True)())
    with _connect(broker) as s:
        s.sendall(frame[:9])
        s.settimeout(1.0)
        with pytest.raises(socket.timeout):
            s.recv(1)
        s.settimeout(10)
        s.sendall(frame[9:])
        size = struct.unpack(">i", recv_exactly(s, 4))[0]
        corr, body = decode_response(recv_exactly(s, size), API_BY_KEY[18], 0)
    assert corr == 5 and body.error_code == 0 and body.api_keys


def test_api_versions_too_new_gets_v0_unsupported_version(broker):
    with _connect(broker) as s:
        s.sendall(encode_request(RequestHeader(18, 99, 5, "x"), message_class(API_BY_KEY[18], True)()))
        size = struct.unpack(">i", recv_exactly(s, 4))[0]
        corr, body = decode_response(recv_exactly(s, size), API_BY_KEY[18], 0)
    assert corr == 5 and body.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version) for k in body.api_keys] == [(18, 0)]


def test_record_errors_get_kafka_codes_and_leave_data_alone(broker):
    _create(broker, "plain")
    _create(broker, "compacted", cleanup_policy="compact")
    _create(broker, "small", max_message_bytes="200")
    good = _produce(broker, "plain", bytes(_batch()))
    assert good.error_code == 0 and good.base_offset == 0
    corrupt = _batch()
    corrupt[-1] ^= 0x55
    assert _produce(broker, "plain", bytes(corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
    assert _produce(broker, "compacted", bytes(_batch(key=None))).error_code == ErrorCode.INVALID_RECORD
    assert _produce(broker, "plain", bytes(_batch()), acks=2).error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert _produce(broker, "small", bytes(_batch(value_size=500))).error_code == ErrorCode.MESSAGE_TOO_LARGE
    again = _produce(broker, "plain", bytes(_batch()))
    assert again.error_code == 0 and again.base_offset == 3  # nothing was appended by the failures
    _still_serving(broker)


def _legacy(values: list[bytes], codec=Codec.NONE) -> bytes:
    b = RecordBatchBuilder(magic=1, compression=codec)
    for i, value in enumerate(values):
        b.append(b"k", value, timestamp=1_700_000_000_000 + i, offset=i)
    return b.build()


def test_produce_v2_with_more_than_one_batch_is_invalid_record_and_stores_nothing(broker):
    _create(broker, "multi")
    two_v2 = bytes(_batch(2) + _batch(2))
    assert _produce(broker, "multi", two_v2, version=2).error_code == ErrorCode.INVALID_RECORD
    two_wrappers = _legacy([b"a", b"b"], Codec.GZIP) + _legacy([b"c"], Codec.GZIP)
    assert _produce(broker, "multi", two_wrappers, version=2).error_code == ErrorCode.INVALID_RECORD
    assert _fetch_values(broker, "multi") == []
    plain = b"".join(_legacy([value]) for value in (b"x", b"y", b"z"))  # many plain messages: accepted
    ok = _produce(broker, "multi", plain, version=2)
    assert ok.error_code == 0 and ok.base_offset == 0
    assert _fetch_values(broker, "multi") == [b"x", b"y", b"z"]
    _still_serving(broker)


def test_codec_failures_get_kafkas_codes(broker):
    """Found by fuzzing: attributes naming codec id 5-7 are UNKNOWN_SERVER_ERROR (Kafka's
    ``CompressionType.forId`` throws IllegalArgumentException), so is gzip data gzip cannot read (its stream's
    IOException becomes a plain KafkaException), a zstd wrapper of magic 1 is INVALID_RECORD
    (``DeepRecordsIterator``), and nothing is stored."""
    _create(broker, "codecs")
    garbage = _batch(codec=Codec.GZIP)[:61] + b"\x1f\x8b" + b"garbage" * 5
    struct.pack_into(">i", garbage, 8, len(garbage) - 12)
    for codec_id, batch in ((5, _batch()), (7, _batch()), (Codec.GZIP, garbage)):
        batch[22] |= codec_id
        struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
        assert _produce(broker, "codecs", bytes(batch)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    zstd_wrapper = bytearray(_legacy([b"a"], Codec.GZIP))
    zstd_wrapper[17] = (zstd_wrapper[17] & ~0x07) | Codec.ZSTD  # the attributes byte: codec bits only
    struct.pack_into(">I", zstd_wrapper, 12, zlib.crc32(bytes(zstd_wrapper[16:])))
    assert _produce(broker, "codecs", bytes(zstd_wrapper), version=2).error_code == ErrorCode.INVALID_RECORD
    assert _fetch_values(broker, "codecs") == []
    _still_serving(broker)


def _produce_frame(topic: str, records: bytes, correlation_id: int) -> bytes:
    req = message_class(API_BY_KEY[0], True)
    part = req.TopicProduceData.PartitionProduceData(index=0, records=records)
    body = req(acks=1, timeout_ms=5000, topic_data=[req.TopicProduceData(name=topic, partition_data=[part])])
    return encode_request(RequestHeader(0, 9, correlation_id, "pieces"), body)


def _fetch_batches(broker, topic: str, version: int) -> list:
    """The batches (or legacy entries) a Fetch of ``version`` answers from offset 0, its error code checked."""
    api = API_BY_KEY[1]
    req = message_class(api, True)
    part = req.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=8 << 20)
    body = req(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20,
               topics=[req.FetchTopic(topic=topic, partitions=[part])])  # fmt: skip
    with _connect(broker) as s:
        _, resp = _roundtrip(s, 1, version, body)
    p = resp.responses[0].partitions[0]
    assert p.error_code == 0
    return list(iter_batches(memoryview(bytes(p.records))))


def _fetch_values(broker, topic: str) -> list[bytes]:
    return [r.value for batch in _fetch_batches(broker, topic, 11) for r in batch]


def test_large_frames_in_uneven_pieces_are_stored_whole_and_in_order(broker):
    """Large frames are received straight into their buffers: pieces of any size, pipelined frames behind."""
    _create(broker, "pieces")
    big = [bytes(_batch(n=600, value_size=1000)), bytes(_batch(n=300, value_size=700))]
    stream = _produce_frame("pieces", big[0], 1) + _produce_frame("pieces", bytes(_batch(n=2)), 2)
    stream += _produce_frame("pieces", big[1], 3)
    with _connect(broker) as s:
        pos = 0
        for step in (3, 70_000, 1, 200_000, 9, 500_000, len(stream)):
            s.sendall(stream[pos : pos + step])
            pos += step
        answers = []
        for _ in range(3):
            size = struct.unpack(">i", recv_exactly(s, 4))[0]
            answers.append(decode_response(recv_exactly(s, size), API_BY_KEY[0], 9))
    parts = [body.responses[0].partition_responses[0] for _, body in answers]
    assert [corr for corr, _ in answers] == [1, 2, 3]
    assert [(p.error_code, p.base_offset) for p in parts] == [(0, 0), (0, 600), (0, 602)]
    assert _fetch_values(broker, "pieces") == [b"v" * 1000] * 600 + [b"v" * 10] * 2 + [b"v" * 700] * 300


def test_a_large_frame_cut_short_stores_nothing(broker):
    _create(broker, "cut")
    frame = _produce_frame("cut", bytes(_batch(n=400, value_size=1000)), 1)
    with _connect(broker) as s:
        s.sendall(frame[: len(frame) // 2])
    _still_serving(broker)
    assert _fetch_values(broker, "cut") == []



_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _below_long_min() -> bytes:
    """Records ``k``: ``v`` and ``w``, ``baseTimestamp`` Long.MIN + 10 and deltas 0 and -100 (the second wraps to
    Long.MAX - 89 in Kafka's long arithmetic), ``maxTimestamp`` = base, as a crafted client may send it."""
    b = RecordBatchBuilder()
    b.append(b"k", b"v", timestamp=1000)
    b.append(b"k", b"w", timestamp=900)
    batch = bytearray(b.build())
    struct.pack_into(">qq", batch, 27, _LONG_MIN + 10, _LONG_MIN + 10)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_timestamp_below_long_min_wraps_and_the_partition_stays_readable_and_cleanable(broker_factory):
    """As in Kafka, base + delta wraps to 64 bits: the batch is stored with the wrapped max timestamp, Fetch v3
    (down-converted to magic 1) and v12 answer, and the cleaner compacts the partition."""
    broker = broker_factory(log_cleaner_backoff_ms="100")
    _create(broker, "wrapped", cleanup_policy="compact", segment_bytes="1024", min_cleanable_dirty_ratio="0.01")
    assert _produce(broker, "wrapped", _below_long_min()).error_code == 0
    stored = _fetch_batches(broker, "wrapped", 12)
    assert [(b.magic, b.max_timestamp) for b in stored] == [(2, _LONG_MAX - 89)]
    assert [(r.timestamp, r.value) for r in stored[0]] == [(_LONG_MIN + 10, b"v"), (_LONG_MAX - 89, b"w")]
    old = [(b.magic, r.offset, r.timestamp, r.value) for b in _fetch_batches(broker, "wrapped", 3) for r in b]
    assert old == [(1, 0, _LONG_MIN + 10, b"v"), (1, 1, _LONG_MAX - 89, b"w")]
    _create(broker, "wrapped-gzip", compression_type="gzip")  # a rebuild: Kafka's builder refuses the timestamp
    refused = _produce(broker, "wrapped-gzip", _below_long_min())
    assert (refused.error_code, refused.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)

    def cleaned() -> bool:
        time.sleep(0.2)  # each append rolls a segment (segment.bytes): the wrapped batch gets cleaned
        assert _produce(broker, "wrapped", bytes(_batch(n=1, value_size=600))).error_code == 0
        return [r.offset for b in _fetch_batches(broker, "wrapped", 12) for r in b][0] > 1

    wait_until(cleaned, timeout=30, interval=0.1)
    assert "uncleanable" not in broker.log_text() and "Traceback" not in broker.log_text()
    assert broker.scrape()[("kafka_log_logcleanermanager_uncleanable_partitions_count",
                            (("logDirectory", str(broker.data_dir)),))] == 0  # fmt: skip
    _still_serving(broker)
