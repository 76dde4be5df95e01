"""The ``__consumer_offsets`` topic as Kafka lays it out, read back with real clients.

* commits are stored in Kafka's key/value layouts, in Kafka's partition for the
  group (``abs(hashCode(group)) % offsets.topic.num.partitions``), with
  tombstones after DeleteGroups; the topic is compacted;
* deleting a topic removes the group offsets of its partitions, as Kafka does.
"""

from __future__ import annotations

import time
import warnings

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KPTopicPartition
    from kafka.errors import NoError


from .groups import GROUP_CONFIG, create_topic, kp_consumer, kp_poll, produce_keys, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


class _Buf:
    """Kafka's non-flexible encodings, read by hand (independent of the broker's own codec)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def _take(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        assert len(out) == n, "truncated"
        self.pos += n
        return out

    def int16(self) -> int:
        return int.from_bytes(self._take(2), "big", signed=True)

    def int32(self) -> int:
        return int.from_bytes(self._take(4), "big", signed=True)

    def int64(self) -> int:
        return int.from_bytes(self._take(8), "big", signed=True)

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self._take(n).decode()

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n < 0 else self._take(n)

    def done(self) -> bool:
        return self.pos == len(self.data)


def _decode_offsets_record(key: bytes, value: bytes | None) -> tuple:
    """(kind, key fields, value fields or None) as Kafka's GroupMetadataManager lays them out."""
    k = _Buf(key)
    version = k.int16()
    if version in (0, 1):
        ident, kind = (k.string(), k.string(), k.int32()), "offset"
    elif version == 2:
        ident, kind = (k.string(),), "group"
    else:
        raise AssertionError(f"unknown key version {version}")
    assert k.done(), f"trailing key bytes: {key!r}"
    if value is None:
        return kind, ident, None
    v = _Buf(value)
    fields = _offset_value(v) if kind == "offset" else _group_value(v)
    assert v.done(), f"trailing value bytes: {value!r}"
    return kind, ident, fields


def _offset_value(v: _Buf) -> dict:
    """OffsetCommitValue v0-v3."""
    vv = v.int16()
    assert vv in (0, 1, 2, 3), f"OffsetCommitValue v{vv}"
    offset = v.int64()
    epoch = v.int32() if vv == 3 else -1
    fields = {"version": vv, "offset": offset, "leader_epoch": epoch, "metadata": v.string(),
              "commit_timestamp": v.int64()}  # fmt: skip
    if vv == 1:
        fields["expire_timestamp"] = v.int64()
    return fields


def _group_value(v: _Buf) -> dict:
    """GroupMetadataValue v0-v3 with its members."""
    vv = v.int16()
    assert vv in (0, 1, 2, 3), f"GroupMetadataValue v{vv}"
    fields = {"version": vv, "protocol_type": v.string(), "generation": v.int32(), "protocol": v.string(),
              "leader": v.string()}  # fmt: skip
    if vv >= 2:
        fields["current_state_timestamp"] = v.int64()
    members = []
    for _ in range(v.int32()):
        m = {"member_id": v.string()}
        if vv >= 3:
            m["group_instance_id"] = v.string()
        m["client_id"], m["client_host"] = v.string(), v.string()
        if vv >= 1:
            m["rebalance_timeout"] = v.int32()
        m["session_timeout"] = v.int32()
        m["subscription"], m["assignment"] = v.bytes_(), v.bytes_()
        members.append(m)
    fields["members"] = members
    return fields


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in (int.from_bytes(s.encode("utf-16-be")[i : i + 2], "big") for i in range(0, 2 * len(s), 2)):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _read_offsets_topic(bootstrap: str, partitions: int) -> list[tuple[int, int, bytes, bytes | None]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        tps = [KPTopicPartition("__consumer_offsets", p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps, timeout_ms=15000)
        out: list[tuple[int, int, bytes, bytes | None]] = []
        deadline = time.monotonic() + 20
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=200).values():
                out.extend((m.partition, m.offset, m.key, m.value) for m in msgs)
        assert all(consumer.position(tp) >= ends[tp] for tp in tps), "could not read __consumer_offsets to its end"
        return out
    finally:
        consumer.close()


def test_consumer_offsets_topic_holds_kafka_records(broker_factory):
    broker = broker_factory(offsets_topic_num_partitions="5", **GROUP_CONFIG)
    topic, group = "layout", "layout-members"
    tp = KPTopicPartition(topic, 0)
    create_topic(broker.bootstrap, topic, 1)
    produce_keys(broker.bootstrap, topic, [(0, f"l-{i}") for i in range(3)])
    started = int(time.time() * 1000)
    consumer = kp_consumer(broker.bootstrap, group, topic, client_id="layout-client")
    try:
        assert len(kp_poll(consumer, 3)) == 3
        consumer.commit({tp: OffsetAndMetadata(3, "layout-meta", -1)})
        member = consumer.group_metadata()
    finally:
        consumer.close()

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    internal = admin.list_topics(timeout=15).topics["__consumer_offsets"]
    assert sorted(internal.partitions) == list(range(5))
    (future,) = admin.describe_configs([ConfigResource("topic", "__consumer_offsets")]).values()
    assert future.result(15)["cleanup.policy"].value == "compact"

    # Kafka's partition for a group: abs(groupId.hashCode) % offsets.topic.num.partitions.
    mine = [r for r in _offsets_rows(broker) if r[3][0] == group]
    assert mine and {p for p, *_ in mine} == {abs(_java_string_hash(group)) % 5}
    _check_offset_record(mine, group, topic, started)
    _check_group_records(mine, topic, member)
    _check_delete_writes_tombstones(broker, group, topic)


def _offsets_rows(broker) -> list[tuple]:
    """Every record of ``__consumer_offsets``: (partition, offset, kind, key fields, value fields)."""
    return [(p, o, *_decode_offsets_record(k, v)) for p, o, k, v in _read_offsets_topic(broker.bootstrap, 5)]


def _check_offset_record(mine: list[tuple], group: str, topic: str, started: int) -> None:
    """One OffsetCommitValue for the partition: the offset, metadata, commit time and no expiry."""
    offsets = [fields for _p, _o, kind, ident, fields in mine if kind == "offset" and ident == (group, topic, 0)]
    assert len(offsets) == 1
    (committed,) = offsets
    assert (committed["offset"], committed["metadata"]) == (3, "layout-meta")
    assert started - 1000 <= committed["commit_timestamp"] <= int(time.time() * 1000) + 1000
    assert committed["version"] in (1, 3) and committed.get("expire_timestamp", -1) == -1


def _check_group_records(mine: list[tuple], topic: str, member) -> None:
    """GroupMetadataValues: one with the member and its assignment, then an empty later generation."""
    groups = [fields for _p, _o, kind, _ident, fields in mine if kind == "group"]
    stable = [g for g in groups if g["members"]]
    assert stable, groups  # written when the generation was synced: the member and its assignment
    (m,) = stable[-1]["members"]
    assert (stable[-1]["protocol_type"], stable[-1]["protocol"], stable[-1]["leader"]) == (
        "consumer", "range", member.member_id)  # fmt: skip
    assert (m["member_id"], m["client_id"], m["session_timeout"]) == (member.member_id, "layout-client", 6000)
    assert m["client_host"].endswith("127.0.0.1")
    assert m["assignment"] and topic.encode() in m["assignment"] and topic.encode() in m["subscription"]
    last = groups[-1]  # after LeaveGroup: empty, a later generation, the protocol type kept
    assert (last["protocol_type"], last["members"]) == ("consumer", [])
    assert last["generation"] > stable[-1]["generation"]


def _check_delete_writes_tombstones(broker, group: str, topic: str) -> None:
    """DeleteGroups writes tombstones: the latest record of every key of the group is null."""
    kadmin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        assert kadmin.delete_groups([group]) == {group: "OK"}
    finally:
        kadmin.close()
    latest: dict = {}
    for _p, _o, kind, ident, fields in _offsets_rows(broker):
        if ident[0] == group:
            latest[(kind, ident)] = fields
    assert latest == {("offset", (group, topic, 0)): None, ("group", (group,)): None}


def test_deleting_a_topic_removes_its_committed_offsets(broker_factory):
    """Kafka's ``GroupCoordinator.handleDeletedPartitions``: the offsets of a deleted topic are removed, so a
    topic created again under the same name is read from its start, not from the old topic's offsets."""
    broker = broker_factory(**GROUP_CONFIG)
    group = "topic-deletion"
    doomed = [KPTopicPartition("doomed", p) for p in (0, 1)]
    kept = KPTopicPartition("kept", 0)
    create_topic(broker.bootstrap, "doomed", 2)
    create_topic(broker.bootstrap, "kept", 1)
    produce_keys(broker.bootstrap, "doomed", [(i % 2, f"old-{i:02d}") for i in range(20)])
    produce_keys(broker.bootstrap, "kept", [(0, f"kept-{i:02d}") for i in range(10)])
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        offsets = {doomed[0]: OffsetAndMetadata(6, "", -1), doomed[1]: OffsetAndMetadata(6, "", -1),
                   kept: OffsetAndMetadata(4, "", -1)}  # fmt: skip
        assert admin.alter_group_offsets(group, offsets) == {tp: NoError for tp in offsets}
        assert set(admin.list_group_offsets(group)[group]) == {*doomed, kept}

        ck_admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        ck_admin.delete_topics(["doomed"])["doomed"].result(15)

        def remaining() -> dict:
            return {tp: om.offset for tp, om in admin.list_group_offsets(group)[group].items()}

        wait_until(lambda: remaining() == {kept: 4}, 10, "only the offsets of the remaining topic are left",
                   lambda: f"OffsetFetch: {remaining()}")  # fmt: skip
    finally:
        admin.close()

    create_topic(broker.bootstrap, "doomed", 2)
    again = produce_keys(broker.bootstrap, "doomed", [(i % 2, f"new-{i:02d}") for i in range(16)])
    consumer = kp_consumer(broker.bootstrap, group, "doomed")
    try:  # no committed offsets for the new topic: auto_offset_reset=earliest reads all of it
        got = kp_poll(consumer, 16, timeout=15)
        assert sorted(got) == sorted((p, o, k) for k, (p, o) in again.items())
    finally:
        consumer.close()
