"""Every served API and version, fed requests that decode but carry arbitrary values.

A client can send any value the schema allows: negative partition counts and
indexes, topic names with slashes or 300 characters, random UUIDs, timeouts of
2^31 ms, garbage in a records field. For each (API, version) the broker
serves, Hypothesis draws such requests (``tests/protocol/strategies.py``) and
feeds them through ``dispatch`` to a real broker with its group coordinator
running. Each must get a response that encodes with the request's correlation
id, or a deliberate ``CloseConnection``; an exception out of a handler is a
bug (a client would get UNKNOWN_SERVER_ERROR, the broker log "Unexpected
error handling request"), so here it fails the test instead. Waits a
request may ask for (``max_wait_ms`` and the group timeouts) are capped so
that long polls and rebalances end within the test's deadline, and so are
partition counts (CreateTopics, CreatePartitions) up to the 10,000 a request
may create: each new partition is a log of three files made in about 2 ms.
Counts past that bound stay as drawn (they are refused at once), and
``test_partition_limits.py`` creates logs until the files run out.

Besides one API at a time, runs of two to eight requests to any APIs go to one
broker, so a request meets the state earlier ones left (a deleted topic, a
trimmed log, a group mid-join); and groups of two to six requests start
together, as from separate connections, with topic creations, growths and
deletions drawn more often, so they meet each other's changes half made (the
steps of a creation let other requests in; ``TopicRegistry.changes``).

Values are biased towards what exists: strings are often the names of the
topics made up front (``fuzz`` with records in three partitions, a compacted
``fuzz-compact``, ``__consumer_offsets``) or a group, and integers often small
(partition indexes, offsets), so the handlers' paths past "unknown topic" are
reached too.
"""

from __future__ import annotations

import types
from unittest import mock

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.config import BrokerConfig
from broker.core import Broker
from broker import dispatch as dispatch_module
from broker.dispatch import REGISTRY, CloseConnection, dispatch, load_handlers
from broker.handlers._admin import MAX_PARTITIONS_PER_REQUEST
from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request

from protocol.schema import INT32, INT64, STRING

from ..protocol import strategies
from ._admin_client import collect, create_ok, now_ms, produce

load_handlers()
pytestmark = pytest.mark.usefixtures("log_levels_restored")  # a drawn BROKER_LOGGER change must not last
SERVED = [(key, v) for key, h in sorted(REGISTRY.items()) for v in range(h.min_version, h.max_version + 1)]
WAITS = ("max_wait_ms", "timeout_ms", "rebalance_timeout_ms", "session_timeout_ms")
COUNTS = ("count", "num_partitions")  # the partitions a CreatePartitions or CreateTopics topic asks for
SMALL_COUNT = 64


@pytest.fixture
def fuzz_broker(tmp_path):
    props = {"node.id": "1", "log.dirs": str(tmp_path / "data"), "prometheus.port": "0",
             "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1",
             "offsets.topic.num.partitions": "2"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    b.advertised = ("127.0.0.1", 9092)
    b.groups.load()
    trio.run(_fill, b)
    yield b
    b.close()


async def _fill(broker) -> None:
    await create_ok(broker, "fuzz", 3)
    await create_ok(broker, "fuzz-compact", 1, {"cleanup.policy": "compact"})
    for partition in range(3):
        await produce(broker, "fuzz", [now_ms()] * 5, partition)


def _requests(api_key: int, version: int):
    """Valid requests whose strings and integers lean towards the topics, groups and offsets that exist."""
    p = strategies.PRIMITIVES
    names = st.sampled_from(["fuzz", "fuzz-compact", "__consumer_offsets", "g", ""])
    known = {STRING: st.one_of(names, p[STRING]), INT32: st.one_of(st.integers(-1, 5), p[INT32]),
             INT64: st.one_of(st.integers(-2, 20), p[INT64])}  # fmt: skip
    with mock.patch.dict(p, known):
        return strategies.message(API_BY_KEY[api_key], version, True)


def _capped(body):
    for name in WAITS:
        value = getattr(body, name, None)
        if isinstance(value, int):
            setattr(body, name, max(min(value, 50), -1))
    for topic in getattr(body, "topics", None) or []:
        for name in COUNTS:
            value = getattr(topic, name, None)
            if isinstance(value, int) and SMALL_COUNT < value <= MAX_PARTITIONS_PER_REQUEST:
                setattr(topic, name, SMALL_COUNT)
    return body


@pytest.fixture(autouse=True)
def _handler_failures_fail(monkeypatch):
    """``dispatch`` answers a handler's unexpected failure with UNKNOWN_SERVER_ERROR; here it is a bug."""

    def fail(ctx, started, exc):
        raise AssertionError(f"{ctx.request.api.name} handler failed: {exc!r}") from exc

    monkeypatch.setattr(dispatch_module, "_failed", fail)


async def _answer(broker, api_key: int, version: int, body) -> None:
    await _answer_together(broker, [(api_key, version, body)])


async def _answer_together(broker, steps: list[tuple[int, int, object]], timeout: float = 10) -> None:
    """Each of ``steps`` dispatched at once, with the group coordinator running: an answer or a close."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(broker.groups.run)
        with trio.fail_after(timeout):
            async with trio.open_nursery() as requests:
                for api_key, version, body in steps:
                    requests.start_soon(_answer_one, broker, api_key, version, body)
        nursery.cancel_scope.cancel()


async def _answer_one(broker, api_key: int, version: int, body) -> None:
    api = API_BY_KEY[api_key]
    frame = bytearray(encode_request(RequestHeader(api_key, version, 77, "fuzz"), _capped(body))[4:])
    try:
        chunks = await dispatch(broker, types.SimpleNamespace(listener="PLAINTEXT", read_ahead={}), frame)
    except CloseConnection:
        return
    if not isinstance(chunks, list):
        return  # acks=0 (no response)
    data = await collect(chunks)
    correlation_id, _ = decode_response(data[4:], api, version)
    assert correlation_id == 77


@pytest.mark.parametrize(("api_key", "version"), SERVED, ids=[f"{API_BY_KEY[k].name}-v{v}" for k, v in SERVED])
def test_any_decodable_request_gets_an_answer_or_a_deliberate_close(fuzz_broker, api_key, version):
    @settings(max_examples=10, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
    @given(body=_requests(api_key, version))
    def run(body) -> None:
        trio.run(_answer, fuzz_broker, api_key, version, body)

    run()


TOPIC_CHANGES = [(key, v) for key, v in SERVED if key in (3, 19, 20, 37)]  # Metadata, Create/Delete, Partitions


def _steps(favoured: list[tuple[int, int]] | None = None):
    """One request of any served (API, version), drawn as above; half from ``favoured`` if given."""
    pairs = st.sampled_from(SERVED)
    if favoured is not None:
        pairs = st.one_of(pairs, st.sampled_from(favoured))
    return pairs.flatmap(lambda pair: st.tuples(st.just(pair[0]), st.just(pair[1]), _requests(*pair)))


def test_runs_of_requests_to_any_api_get_answers(fuzz_broker):
    """Requests that change state (create, delete, produce, join, commit, delete records...) followed by
    others that read it, on one broker: each still gets an answer or a deliberate close."""

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
    @given(steps=st.lists(_steps(), min_size=2, max_size=8))
    def run(steps) -> None:
        for api_key, version, body in steps:
            trio.run(_answer, fuzz_broker, api_key, version, body)

    run()


@pytest.mark.parametrize("version", [10, 11])
async def test_metadata_before_v12_refuses_topics_named_by_id_as_kafka_does(fuzz_broker, version):
    """Found by the fuzz above: a null name answered with a null name, which v10-11 cannot encode."""
    import uuid

    from ._admin_client import call, req, sub

    Topic = sub(3, "MetadataRequestTopic")
    some_id = uuid.uuid4()
    body = req(3, topics=[Topic(name=None, topic_id=some_id), Topic(name="fuzz", topic_id=uuid.UUID(int=0))],
               allow_auto_topic_creation=False)  # fmt: skip
    resp = await call(fuzz_broker, 3, version, body)
    assert [(t.error_code, t.name, t.topic_id, t.partitions) for t in resp.topics] == [
        (42, "", some_id, []), (42, "fuzz", uuid.UUID(int=0), [])]  # INVALID_REQUEST  # fmt: skip
    assert resp.brokers == []
    ok = await call(fuzz_broker, 3, version, req(3, topics=[Topic(name="fuzz")], allow_auto_topic_creation=False))
    assert [(t.error_code, t.name, len(t.partitions)) for t in ok.topics] == [(0, "fuzz", 3)]


def test_requests_started_together_get_answers(fuzz_broker):
    """Two to six requests at once, as from separate connections, topic changes drawn more often."""

    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
    @given(steps=st.lists(_steps(TOPIC_CHANGES), min_size=2, max_size=6))
    def run(steps) -> None:
        trio.run(_answer_together, fuzz_broker, steps, 20)

    run()
