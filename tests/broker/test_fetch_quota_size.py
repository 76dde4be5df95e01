"""What a Fetch counts against ``consumer_byte_rate``: the whole answer, as Kafka's ``KafkaApis.handleFetchRequest``
records ``fetchContext.getResponseSize`` (``FetchResponse.sizeOf`` for the version: 4 bytes of header and the
body, partitions in error included, records before any down-conversion; for an incremental fetch only the
partitions it answers, measured without touching the session). A fetch refused for its session goes through
the same check with an empty answer's size, and over the quota it is answered as Kafka's
``SessionErrorContext`` answers then: empty, no error, session id 0, the size taken back.
"""

from __future__ import annotations

import pytest

from broker.dispatch import dispatch
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request

from ._admin_client import broker, collect, create_ok, fake_connection, req, sub  # noqa: F401  (broker: a fixture)
from ._admin_client import produce as produce_at
from .test_client_quotas import CLIENT, alter, produce

MEASURE = ("consumer_byte_rate", "", CLIENT)


async def raw_fetch(broker, version: int, topics: dict, session_id: int = 0, epoch: int = -1):  # noqa: F811
    """``(the answer's frame, the answer)`` of a Fetch of ``{topic: {partition: offset}}``."""
    T = sub(1, "FetchTopic")
    body = req(1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=session_id, session_epoch=epoch,
               topics=[T(topic=topic, partitions=[T.FetchPartition(partition=p, fetch_offset=o,
                                                                   partition_max_bytes=1 << 20)
                                                  for p, o in parts.items()]) for topic, parts in topics.items()])
    frame = bytearray(encode_request(RequestHeader(1, version, 11, CLIENT), body)[4:])
    data = await collect(await dispatch(broker, fake_connection(throttle=None), frame))  # fmt: skip
    return data, decode_response(data[4:], API_BY_KEY[1], version)[1]


def kafka_size(frame: bytes, version: int) -> int:
    """Kafka's ``FetchResponse.sizeOf``: the frame without its size prefix, nor the flexible header's tags."""
    return len(frame) - 4 - (1 if version >= 12 else 0)


def measured(broker) -> float:  # noqa: F811
    return sum(sample[1] for sample in broker.quotas.measures[MEASURE].samples)


@pytest.mark.parametrize("version", [4, 11, 12])
async def test_the_whole_answer_counts_as_kafka_sizes_it(broker, version):  # noqa: F811
    await create_ok(broker, "w")
    await produce(broker, "w", 3_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1e9})])
    frame, resp = await raw_fetch(broker, version, {"w": {0: 0, 5: 0}})  # partition 5 is UNKNOWN_TOPIC_OR_PARTITION
    assert [p.error_code for p in resp.responses[0].partitions] == [ErrorCode.NONE,
                                                                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    records = len(resp.responses[0].partitions[0].records)
    assert records > 3_000 and measured(broker) == kafka_size(frame, version) > records + 50


async def test_an_incremental_fetch_counts_what_it_answers_and_leaves_the_session_alone(broker):  # noqa: F811
    await create_ok(broker, "s", partitions=2)
    await produce(broker, "s", 2_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1e9})])
    full_frame, full = await raw_fetch(broker, 12, {"s": {0: 0, 1: 0}}, epoch=0)
    session = full.session_id
    assert session and measured(broker) == kafka_size(full_frame, 12)
    quiet_frame, quiet = await raw_fetch(broker, 12, {"s": {0: 2}}, session, 1)  # caught up: nothing to answer
    assert quiet.responses == [] and measured(broker) == kafka_size(full_frame, 12) + kafka_size(quiet_frame, 12)
    await produce_at(broker, "s", [1], partition=1)  # one record: partition 1's high watermark moves to 1
    _frame, news = await raw_fetch(broker, 12, {"s": {1: 1}}, session, 2)  # the client says it has it already
    # answered for its new high watermark alone: measuring the answer first left what the session knew alone
    assert [(p.partition_index, p.high_watermark, len(p.records)) for t in news.responses for p in t.partitions] == [
        (1, 1, 0)]  # fmt: skip


async def test_down_converted_records_count_at_their_stored_size(broker):  # noqa: F811
    await create_ok(broker, "d")
    await produce(broker, "d", 5_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1e9})])
    _frame, stored = await raw_fetch(broker, 4, {"d": {0: 0}})
    before = measured(broker)
    frame, converted = await raw_fetch(broker, 2, {"d": {0: 0}})  # message format 1: another size
    stored_size, converted_size = (len(r.responses[0].partitions[0].records) for r in (stored, converted))
    assert stored_size != converted_size
    assert measured(broker) - before == kafka_size(frame, 2) - converted_size + stored_size


async def test_a_session_error_is_measured_and_over_the_quota_answered_empty(broker):  # noqa: F811
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1e9})])
    frame, lost = await raw_fetch(broker, 12, {}, session_id=12345, epoch=1)
    assert (lost.error_code, lost.throttle_time_ms) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert measured(broker) == kafka_size(frame, 12)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1.0})])  # ~20 bytes in 10 s: over
    before = measured(broker)
    _frame, over = await raw_fetch(broker, 12, {}, session_id=12345, epoch=1)
    assert (over.error_code, over.session_id, over.responses) == (ErrorCode.NONE, 0, [])
    assert over.throttle_time_ms > 0 and measured(broker) == before  # its size taken back
    _frame, opening = await raw_fetch(broker, 12, {"w": {0: 0}}, epoch=0)  # throttled: no session is made
    assert (opening.session_id, opening.responses, len(broker.fetch_sessions.sessions)) == (0, [], 0)


async def test_the_answer_is_built_once_measured_then_sent(broker, monkeypatch):  # noqa: F811
    """Kafka's ``handleFetchRequest`` sizes the answer and sends it; here the one answer object is measured (its
    session id still 0), then gets the session id it opens and goes out: one build per Fetch, not two."""
    import broker.handlers.fetch as fetch_handler

    builds, real = [], fetch_handler._response
    monkeypatch.setattr(fetch_handler, "_response", lambda *args: builds.append(1) or real(*args))
    await create_ok(broker, "once")
    await produce(broker, "once", 2_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 1e9})])
    frame, resp = await raw_fetch(broker, 12, {"once": {0: 0}}, epoch=0)  # opens a session
    assert len(builds) == 1
    assert resp.session_id != 0 and resp.throttle_time_ms == 0 and len(resp.responses[0].partitions[0].records) > 2_000
    assert measured(broker) == kafka_size(frame, 12)  # the session id set after measuring changes no size
