"""Client quotas (``broker/quotas.py``): Kafka's measure and throttle time, its eight levels, its checks,
the store, and AlterClientQuotas / DescribeClientQuotas / Produce / Fetch driven in-process."""

from __future__ import annotations

import math

import pytest
import trio

from broker.quotas import ClientQuotas, QuotaRefused, check_op, entity_of
from broker.sampled_stat import Samples
from protocol import ErrorCode, RequestHeader, encode_request
from protocol.records import RecordBatchBuilder
from storage import StorageError

from ._admin_client import broker, call, create_ok, fake_connection, req, sub  # noqa: F401  (broker: a fixture)

CLIENT = "admin-test"  # the client id ``call`` sends
U, C, DU, DC = ("user", "alice"), ("client-id", "app"), ("user", None), ("client-id", None)


# -- the measure -------------------------------------------------------------------------


def test_the_rate_spans_at_least_ten_windows_and_the_throttle_is_kafkas():
    samples = Samples()
    samples.record(20_000, 0)
    assert samples.window_ms(0) == 10_000 and samples.rate(0) == 2_000
    samples.record(5_000, 4_500)  # a new sample: 4.5 s elapsed, still 10 s as the window
    assert samples.window_ms(4_500) == 10_500 and samples.rate(4_500) == pytest.approx(25_000 / 10.5)
    assert samples.rate(11_000) == pytest.approx(5_000 / 10.5)  # the first sample is 11 s old: dropped
    short = Samples(3, 1000)  # quota.window.num=3: at least 2 s
    short.record(4_000, 0)
    assert short.window_ms(0) == 2_000 and short.rate(0) == 2_000
    quotas = ClientQuotas(None, {((C[0], "app"),): {"producer_byte_rate": 1_000.0}})
    assert quotas.record("producer_byte_rate", "u", "app", 5_000, 0) == 0  # 500 B/s
    assert quotas.record("producer_byte_rate", "u", "app", 15_000, 0) == 10_000  # (2000 - 1000) / 1000 * 10 s
    assert quotas.record("producer_byte_rate", "u", "other", 50_000, 0) == 0  # no quota for that client id
    assert quotas.record("consumer_byte_rate", "u", "app", 50_000, 0) == 0 and not any(
        key == "consumer_byte_rate" for key, _u, _c in quotas.measures)  # no such quota anywhere: not measured
    assert ("producer_byte_rate", "", "other") in quotas.measures
    quotas.record("producer_byte_rate", "u", "app", 1, 70_000)  # a minute on: measures gone quiet are dropped
    assert list(quotas.measures) == [("producer_byte_rate", "", "app")] and quotas.throttles == {}




def test_kafka_keeps_one_sample_more_than_it_measures_until_its_last_event_is_old():
    """Kafka's SampledStat keeps ``quota.window.num + 1`` samples, and drops one only when its last event is
    ``quota.window.num`` windows old: a steady client is measured over about 11.5 s here, not 10.5 s, and
    its throttle is three times longer than it would be over the shorter span."""
    quotas = ClientQuotas(None, {((C[0], "app"),): {"producer_byte_rate": 1_000.0}})
    for t in (0, 900, *range(1_000, 12_000, 1_000)):  # 12 samples: 2 kB in the first, 1 kB in each other
        assert quotas.record("producer_byte_rate", "u", "app", 1_000, t, check=False) == 0
    measure = quotas.measures[("producer_byte_rate", "", "app")]
    assert measure.window_ms(11_500) == 11_500 and measure.rate(11_500) == pytest.approx(13_000 / 11.5)
    assert quotas.record("producer_byte_rate", "u", "app", 0, 11_500) == 1_500  # (13 kB / 11.5 s - 1 kB/s) * 11.5 s
    assert measure.window_ms(11_901) == 10_901  # the first sample's last event is 11 s old: it starts over
    assert measure.rate(11_901) == pytest.approx(11_000 / 10.901)

def test_one_sample_measures_over_at_least_a_millisecond():
    """quota.window.num=1 (Kafka allows it): Rate.windowSize is never below 1 ms, so a first record at the
    start of its window measures over 1 ms instead of dividing by nothing."""
    single = Samples(1, 1000)
    single.record(4, 0)
    assert single.window_ms(0) == 1 and single.rate(0) == 4_000
    quotas = ClientQuotas(None, {((C[0], "app"),): {"producer_byte_rate": 1_000.0}}, samples=1)
    assert quotas.record("producer_byte_rate", "u", "app", 2, 0) == 1  # (2000 - 1000) / 1000 * 1 ms
    assert quotas.record("producer_byte_rate", "u", "app", 100, 500) == 0  # 102 B over 500 ms

def test_the_first_of_kafkas_eight_levels_that_holds_the_key_wins():
    levels = [((C, U), ("alice", "app")), ((DC, U), ("alice", "app")), ((U,), ("alice", "")),
              ((C, DU), ("alice", "app")), ((DC, DU), ("alice", "app")), ((DU,), ("alice", "")),
              ((C,), ("", "app")), ((DC,), ("", "app"))]  # fmt: skip
    quotas = ClientQuotas(None, {entity: {"consumer_byte_rate": float(i + 1)} for i, (entity, _) in enumerate(levels)})
    for i, (entity, tags) in enumerate(levels):
        assert quotas.quota("consumer_byte_rate", "alice", "app") == (float(i + 1), tags)
        del quotas.quotas[entity]
    assert quotas.quota("consumer_byte_rate", "alice", "app") == (None, ("", "app"))
    assert quotas.fetch_limit("alice", "app") is None


def test_a_client_without_a_client_id_gets_only_user_quotas():
    """Kafka's quotaLimit reads no client-id entity, default or combined, for an empty (or null) client id."""
    quotas = ClientQuotas(None, {(DC,): {"producer_byte_rate": 1.0}, (DC, U): {"producer_byte_rate": 2.0},
                                 (DC, DU): {"producer_byte_rate": 3.0}})  # fmt: skip
    assert quotas.quota("producer_byte_rate", "alice", "")[0] is None
    assert quotas.record("producer_byte_rate", "alice", "", 1e6, 0) == 0
    quotas.quotas[(DU,)] = {"producer_byte_rate": 4.0}
    assert quotas.quota("producer_byte_rate", "alice", "") == (4.0, ("alice", ""))
    quotas.quotas[(U,)] = {"producer_byte_rate": 5.0}
    assert quotas.quota("producer_byte_rate", "alice", "") == (5.0, ("alice", ""))


@pytest.mark.parametrize(("pairs", "message"), [
    ([], "Invalid empty client quota entity"),
    ([("user", "a"), ("user", "b")], "Invalid client quota entity, duplicate entity entry user"),
    ([("group", "g")], "Unhandled client quota entity type: group"),
    ([("client-id", "")], "Empty client-id not supported"),
    ([("ip", "10.0.0.1"), ("user", "a")], "IP entity shouldnot be combined with User or ClientId"),
    ([("ip", "no-such-host.invalid")], "no-such-host.invalid is not a valid IP or resolvable host."),
])  # fmt: skip
def test_entities_are_checked_as_kafka_checks_them(pairs, message):
    with pytest.raises(QuotaRefused, match=message):
        entity_of(pairs)


@pytest.mark.parametrize(("entity", "key", "value", "message"), [
    ([U], "producer_byte_rate", 0.0, "Quota producer_byte_rate must be greater than 0"),
    ([U], "producer_byte_rate", 10.5, "producer_byte_rate cannot be a fractional value."),
    ([U], "producer_byte_rate", 2.0**64, "Proposed value for producer_byte_rate is too large for a LONG."),
    ([U], "connection_creation_rate", 5.0, "Invalid configuration key connection_creation_rate"),
    ([("ip", None)], "producer_byte_rate", 5.0, "Invalid configuration key producer_byte_rate"),
    ([("ip", "10.0.0.1")], "connection_creation_rate", 2.5, "connection_creation_rate cannot be a fractional value."),
    ([C], "controller_mutation_rate", 0.5 - 1, "Quota controller_mutation_rate must be greater than 0"),
])  # fmt: skip
def test_values_are_checked_as_kafka_checks_them(entity, key, value, message):
    with pytest.raises(QuotaRefused, match=message.replace("(", r"\(").replace(".", r"\.")):
        check_op(entity_of(entity), key, value)


async def test_the_store_survives_a_reload_and_a_damaged_one_stops_the_start(tmp_path):
    quotas = ClientQuotas.load(str(tmp_path))
    await quotas.alter([(entity_of([U, C]), {"producer_byte_rate": 1024.0}),
                        (entity_of([DC]), {"consumer_byte_rate": 9.0})])
    await quotas.alter([(entity_of([DC]), {"consumer_byte_rate": None})])
    assert ClientQuotas.load(str(tmp_path)).quotas == {(C, U): {"producer_byte_rate": 1024.0}}
    (tmp_path / "__client_quotas.json").write_text("[{]")
    with pytest.raises(StorageError, match="__client_quotas.json is damaged"):
        ClientQuotas.load(str(tmp_path))


# -- the APIs ------------------------------------------------------------------------------


def entity(*pairs):
    Entry = sub(49, "EntryData")
    return [Entry.EntityData(entity_type=k, entity_name=v) for k, v in pairs]


async def alter(broker, changes: list, validate_only=False):
    Entry = sub(49, "EntryData")
    entries = [Entry(entity=entity(*pairs), ops=[Entry.OpData(key=k, value=v or 0.0, remove=v is None)
                                                 for k, v in ops.items()]) for pairs, ops in changes]  # fmt: skip
    resp = await call(broker, 49, 1, req(49, entries=entries, validate_only=validate_only))
    return [(e.error_code, e.error_message) for e in resp.entries]


async def describe(broker, components: list, strict=False):
    Comp = sub(48, "ComponentData")
    body = req(48, components=[Comp(entity_type=k, match_type=t, match=m) for k, t, m in components], strict=strict)
    resp = await call(broker, 48, 1, body)
    assert resp.error_code == ErrorCode.NONE
    return [({e.entity_type: e.entity_name for e in entry.entity}, {v.key: v.value for v in entry.values})
            for entry in resp.entries]  # fmt: skip


async def test_alter_then_describe_with_kafkas_filters(broker):
    answers = await alter(broker, [([U], {"producer_byte_rate": 1024.0}), ([U, DC], {"consumer_byte_rate": 2048.0}),
                                   ([C], {"connection_creation_rate": 10.0}), ([DU], {"producer_byte_rate": 512.0})])
    assert answers[0] == answers[1] == answers[3] == (ErrorCode.NONE, None)
    assert answers[2] == (ErrorCode.INVALID_REQUEST, "Invalid configuration key connection_creation_rate")
    everything = await describe(broker, [])
    assert sorted((e for e, _ in everything), key=repr) == sorted([{"user": "alice"}, {"user": "alice", "client-id": None},
                                                       {"user": None}], key=repr)  # fmt: skip
    assert await describe(broker, [("user", 0, "alice")], strict=True) == [({"user": "alice"}, {"producer_byte_rate": 1024.0})]
    assert [e for e, _ in await describe(broker, [("user", 0, "alice")])] == [
        {"client-id": None, "user": "alice"}, {"user": "alice"}]  # fmt: skip
    assert [e for e, _ in await describe(broker, [("user", 1, None)])] == [{"user": None}]
    assert [e for e, _ in await describe(broker, [("user", 2, None), ("client-id", 1, None)])] == [
        {"client-id": None, "user": "alice"}]  # fmt: skip
    assert await describe(broker, [], strict=True) == []
    assert sorted((e for e, _ in await describe(broker, [("user", 2, None)], strict=True)), key=repr) == [
        {"user": "alice"}, {"user": None}]  # any user, the default one too (Kafka's ClientQuotasImage)
    assert await alter(broker, [([U], {"producer_byte_rate": None})]) == [(ErrorCode.NONE, None)]
    assert await alter(broker, [([DU], {"producer_byte_rate": 1.0})], validate_only=True) == [(ErrorCode.NONE, None)]
    assert await describe(broker, [("user", 0, "alice")], strict=True) == []
    assert await describe(broker, [("user", 1, None)]) == [({"user": None}, {"producer_byte_rate": 512.0})]



async def test_duplicates_in_an_alter_are_answered_as_kafkas_controller_answers_them(broker):
    """Kafka's ClientQuotaControlManager: an entry naming a key twice, or an entity an earlier entry named, is
    "Ignoring duplicate entity ..." and not applied (an earlier entry of that entity is, and the one answer
    for the entity is the error); a type given twice within an entity is a map entry, the last name wins."""
    Entry = sub(49, "EntryData")
    ops = [Entry.OpData(key="producer_byte_rate", value=10.0), Entry.OpData(key="producer_byte_rate", value=20.0)]
    entries = [Entry(entity=entity(U, C), ops=ops),
               Entry(entity=entity(("user", "bob")), ops=[Entry.OpData(key="consumer_byte_rate", value=5.0)]),
               Entry(entity=entity(("user", "bob")), ops=[Entry.OpData(key="producer_byte_rate", value=6.0)]),
               Entry(entity=entity(("user", "x"), ("user", "carol")), ops=[Entry.OpData(key="request_percentage",
                                                                                          value=50.0)])]  # fmt: skip
    resp = await call(broker, 49, 1, req(49, entries=entries))
    duplicate = "Ignoring duplicate entity ClientQuotaEntity(entries={%s})"
    answers = [({e.entity_type: e.entity_name for e in a.entity}, a.error_code, a.error_message) for a in resp.entries]
    assert answers == [
        ({"user": "alice", "client-id": "app"}, ErrorCode.INVALID_REQUEST, duplicate % "client-id=app, user=alice"),
        ({"user": "bob"}, ErrorCode.INVALID_REQUEST, duplicate % "user=bob"),
        ({"user": "carol"}, ErrorCode.NONE, None)]  # fmt: skip
    assert broker.quotas.quotas == {(("user", "bob"),): {"consumer_byte_rate": 5.0},
                                    (("user", "carol"),): {"request_percentage": 50.0}}  # fmt: skip


async def test_changes_that_cannot_be_stored_are_answered_as_a_storage_error(broker, monkeypatch):
    def full(changes):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(broker.quotas, "alter", full)
    assert await alter(broker, [([U], {"producer_byte_rate": 1.0}), ([DU], {"producer_byte_rate": 0.5})]) == [
        (ErrorCode.KAFKA_STORAGE_ERROR, "quotas not stored: [Errno 28] No space left on device"),
        (ErrorCode.INVALID_REQUEST, "producer_byte_rate cannot be a fractional value.")]  # fmt: skip

async def produce(broker, topic: str, size: int, version: int = 9, connection=None):
    builder = RecordBatchBuilder()
    for i in range(size // 1000):
        builder.append(b"k%d" % i, b"v" * 1000, timestamp=1)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=0, records=builder.build())
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    return await call(broker, 0, version, body, connection=connection)


async def test_produce_over_the_quota_is_answered_with_a_throttle_and_mutes_the_connection(broker):
    await create_ok(broker, "q")
    await alter(broker, [([C[0:1] + (CLIENT,)], {"producer_byte_rate": 2_000.0})])
    first = fake_connection(throttle=None)
    assert (await produce(broker, "q", 15_000, connection=first)).throttle_time_ms == 0  # 1.5 kB/s over 10 s
    resp = await produce(broker, "q", 15_000, connection=first)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE  # appended all the same
    assert 4_000 < resp.throttle_time_ms < 6_000  # about (3 kB/s - 2 kB/s) / 2 kB/s * 10 s
    assert first.throttle == resp.throttle_time_ms  # muted that long once the answer is out
    old = fake_connection(throttle=None)
    assert (await produce(broker, "q", 2_000, version=5, connection=old)).throttle_time_ms > 0
    assert old.throttle > 0  # v5 too (test_quota_muting: every version is answered at once)
    other = fake_connection(throttle=None)
    samples = dict(((name, tuple(labels)), value) for name, _h, _l, rows in broker.quotas.metric_samples(broker.clock())
                   for labels, value in rows)  # fmt: skip
    assert samples[("kafka_server_produce_throttle_time", ("", CLIENT))] > 0
    later = {name: rows for name, _h, _l, rows in broker.quotas.metric_samples(broker.clock() + 45_000)}
    assert later["kafka_server_produce_throttle_time"][0][1] > 0  # an Avg over Kafka's 2 metric samples of 30 s
    idle = {name: rows for name, _h, _l, rows in broker.quotas.metric_samples(broker.clock() + 61_000)}
    assert math.isnan(idle["kafka_server_produce_throttle_time"][0][1])  # Kafka's Avg of no event: NaN, not 0
    assert samples[("kafka_server_produce_byte_rate", ("", CLIENT))] > 2_000
    assert other.throttle is None



async def test_a_produce_counts_its_header_and_body_not_the_length_prefix(broker):
    """Kafka records ``request.sizeInBytes``: the request header and body, without the 4-byte size in front."""
    await create_ok(broker, "s")
    await alter(broker, [([("client-id", CLIENT)], {"producer_byte_rate": 1e9})])
    builder = RecordBatchBuilder()
    builder.append(b"k", b"v" * 100, timestamp=1)
    Data = sub(0, "TopicProduceData")
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name="s", partition_data=[
        Data.PartitionProduceData(index=0, records=builder.build())])])  # fmt: skip
    await call(broker, 0, 9, body)
    frame = encode_request(RequestHeader(0, 9, 11, CLIENT), body)
    assert [s[1] for s in broker.quotas.measures[("producer_byte_rate", "", CLIENT)].samples] == [len(frame) - 4]

async def fetch(broker, topic: str, max_bytes: int, connection, min_bytes: int = 1, max_wait_ms: int = 0):
    T = sub(1, "FetchTopic")
    body = req(1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes, topics=[T(topic=topic, partitions=[
        T.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=max_bytes)])])  # fmt: skip
    return await call(broker, 1, 11, body, connection=connection)


async def test_a_fetch_over_the_quota_is_answered_empty_and_its_bytes_are_not_counted(broker):
    await create_ok(broker, "f")
    for _ in range(5):
        await produce(broker, "f", 10_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 2_000.0})])  # one fetch: 20 kB at most
    conn = fake_connection(throttle=None)
    first = await fetch(broker, "f", 15_000, conn)  # with its header, under the 20 kB the window allows
    got = len(first.responses[0].partitions[0].records)
    assert 10_000 < got <= 15_000 and first.throttle_time_ms == 0 and conn.throttle is None
    second = await fetch(broker, "f", 15_000, conn)
    assert second.responses == [] and second.throttle_time_ms > 0 and conn.throttle == second.throttle_time_ms
    rate = broker.quotas.measures[("consumer_byte_rate", "", CLIENT)].rate(broker.clock())
    assert rate == pytest.approx(got / 10, rel=0.05)  # the empty answer's bytes were taken back


async def test_min_bytes_is_capped_at_what_the_quota_lets_one_fetch_return(broker):
    await create_ok(broker, "m")
    for _ in range(5):
        await produce(broker, "m", 10_000)
    await alter(broker, [([("client-id", CLIENT)], {"consumer_byte_rate": 2_000.0})])  # one fetch: 20 kB at most
    with trio.fail_after(5):
        start = trio.current_time()
        resp = await fetch(broker, "m", 1_000_000, fake_connection(throttle=None), min_bytes=1_000_000,
                           max_wait_ms=3000)  # fmt: skip
        assert trio.current_time() - start < 2  # Kafka's fetchMinBytes = min(min_bytes, fetchMaxBytes)
    # the records the window allows and the answer's header are over the quota: answered empty, as in Kafka
    assert resp.responses == [] and resp.throttle_time_ms > 0


def test_an_address_gets_its_own_connection_rate_quota_else_the_default_ip_one():
    quotas = ClientQuotas(None, {(("ip", "10.0.0.1"),): {"connection_creation_rate": 5.0},
                                 (("ip", "localhost"),): {"connection_creation_rate": 7.0},
                                 (("ip", None),): {"connection_creation_rate": 2.0}})  # fmt: skip
    assert quotas.connection_rate("10.0.0.1") == 5.0
    assert quotas.connection_rate("127.0.0.1") == 7.0  # a host name counts for its addresses
    assert quotas.connection_rate("10.9.9.9") == 2.0
    assert ClientQuotas(None, {}).connection_rate("10.0.0.1") is None
