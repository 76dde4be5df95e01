"""The KIP-848 records of ``__consumer_offsets`` byte for byte, as Kafka's schemas lay them out.

Each expected value is written out by hand from Kafka's JSON schemas
(``ConsumerGroup*Key.json`` / ``*Value.json``): a key is its int16 type and
non-flexible strings (int16 length), a value its int16 version 0 and a
flexible body (compact strings and arrays: length + 1 as an unsigned
varint, a tagged-field section at the end of each struct). Each type is
also round-tripped, and ``records.parse_key`` dispatches to it.
"""

from __future__ import annotations

import uuid

import attrs
import pytest

from broker.groups import consumer_records as cr
from broker.groups import records as r
from broker.groups.consumer_group import ConsumerGroup
from broker.groups.consumer_member import ConsumerMember

TID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


def test_keys():
    assert cr.key(cr.GROUP, "g") == h("0003 0001 67")
    assert cr.key(cr.PARTITION_METADATA, "g") == h("0004 0001 67")
    assert cr.key(cr.MEMBER, "g", "m1") == h("0005 0001 67 0002 6d31")
    assert cr.key(cr.TARGET_EPOCH, "g") == h("0006 0001 67")
    assert cr.key(cr.TARGET_MEMBER, "g", "m1") == h("0007 0001 67 0002 6d31")
    assert cr.key(cr.CURRENT, "g", "m1") == h("0008 0001 67 0002 6d31")
    for type_ in (3, 4, 6):
        assert r.parse_key(cr.key(type_, "grp")) == cr.ConsumerKey(type_, "grp")
    for type_ in (5, 7, 8):
        assert r.parse_key(cr.key(type_, "grp", "m")) == cr.ConsumerKey(type_, "grp", "m")
    assert r.parse_key(h("0010 0001 67 0002 2e2a")) is None  # ConsumerGroupRegularExpression: not read


def test_group_metadata_value():
    plain = cr.GroupValue(epoch=7, metadata_hash=0)
    assert cr.encode(cr.GROUP, plain) == h("0000 00000007 00")  # a default tagged field is not written
    hashed = cr.GroupValue(epoch=7, metadata_hash=-2)
    wire = h("0000 00000007 01 00 08 fffffffffffffffe")  # one tagged field: tag 0, 8 bytes
    assert cr.encode(cr.GROUP, hashed) == wire and cr.parse_value(cr.GROUP, wire) == hashed
    with pytest.raises(ValueError):
        cr.parse_value(cr.GROUP, h("0001 00000007 00"))


def test_member_metadata_value():
    value = cr.MemberValue(instance_id=None, rack_id="r", client_id="c", client_host="/h",
                           subscribed_topic_names=["t"], subscribed_topic_regex=None, rebalance_timeout_ms=30_000,
                           server_assignor="uniform", classic_member_metadata=None)  # fmt: skip
    wire = h("0000" "00" "02 72" "02 63" "03 2f68" "02 02 74" "00" "00007530" "08 756e69666f726d" "00")
    assert cr.encode(cr.MEMBER, value) == wire and cr.parse_value(cr.MEMBER, wire) == value


def test_member_metadata_value_with_classic_protocols_as_kafka_writes_them():
    """A member of a classic consumer in a consumer group: Kafka's tag 0 (we never write it, but read it)."""
    classic = h("01" "00002710" "02" "06 72616e6765" "03 0102" "00" "00")  # present; session, [("range", 0x0102)]
    wire = h("0000" "05 696e7374" "00" "01" "01" "01" "00" "00000000" "00" "01 00") + bytes([len(classic)]) + classic
    got = cr.parse_value(cr.MEMBER, wire)
    assert (got.instance_id, got.client_id, got.subscribed_topic_names, got.server_assignor) == ("inst", "", [], None)
    assert got.classic_member_metadata.session_timeout_ms == 10_000
    (protocol,) = got.classic_member_metadata.supported_protocols
    assert (protocol.name, protocol.metadata) == ("range", b"\x01\x02")
    assert cr.encode(cr.MEMBER, got) == wire


def test_target_assignment_values():
    epoch = cr.TargetEpochValue(assignment_epoch=5)
    assert cr.encode(cr.TARGET_EPOCH, epoch) == h("0000 00000005 00")
    assert cr.parse_value(cr.TARGET_EPOCH, h("0000 00000005 00")) == epoch
    member = cr.TargetMemberValue(cr.listed({TID: frozenset({2, 0})}))
    wire = h("0000" "02" + TID.hex + "03 00000000 00000002" "00" "00")
    assert cr.encode(cr.TARGET_MEMBER, member) == wire
    assert cr.assignment(cr.parse_value(cr.TARGET_MEMBER, wire).topic_partitions) == {TID: frozenset({0, 2})}


def test_current_assignment_value():
    """KIP-1251: each TopicPartitions carries its partitions' assignment epochs as tagged field 0."""
    member = ConsumerMember("m", member_epoch=4, previous_member_epoch=3, state="unrevoked_partitions",
                            assigned={TID: frozenset({1, 2})}, pending_revocation={TID: frozenset({0})},
                            assignment_epochs={(TID, 1): 4, (TID, 2): 2, (TID, 0): 1})  # fmt: skip
    epochs_of_1_2, epoch_of_0 = "01 00 09 03 00000004 00000002", "01 00 05 02 00000001"  # tag 0: size, array
    wire = h("0000" "00000004" "00000003" "01" "02" + TID.hex + "03 00000001 00000002" + epochs_of_1_2
             + "02" + TID.hex + "02 00000000" + epoch_of_0 + "00")  # fmt: skip
    assert cr.encode(cr.CURRENT, cr.current_value(member)) == wire
    got = cr.parse_value(cr.CURRENT, wire)
    assert (got.member_epoch, got.previous_member_epoch, cr.STATE_NAMES[got.state]) == (4, 3, "unrevoked_partitions")
    assert cr.assignment(got.partitions_pending_revocation) == {TID: frozenset({0})}
    assert {**cr.assignment_epochs(got.assigned_partitions),
            **cr.assignment_epochs(got.partitions_pending_revocation)} == member.assignment_epochs  # fmt: skip


def test_current_assignment_value_of_before_kip_1251():
    """A record without assignment epochs (Kafka before 4.3, minibroker before) reads as no epochs: the member is
    then held to have every partition since its member epoch (at least 0), as Kafka reads such a record."""
    wire = h("0000" "00000004" "00000003" "01" "02" + TID.hex + "02 00000001 00" "02" + TID.hex + "02 00000000 00" "00")
    got = cr.parse_value(cr.CURRENT, wire)
    assert cr.assignment(got.assigned_partitions) == {TID: frozenset({1})}
    assert cr.assignment_epochs(got.assigned_partitions) == {}
    assert cr.assignment_epochs(got.partitions_pending_revocation) == {}
    member = ConsumerMember("m", member_epoch=4, assigned={TID: frozenset({1})},
                            pending_revocation={TID: frozenset({0})})  # fmt: skip
    assert member.assignment_epochs == {(TID, 1): 4, (TID, 0): 4}
    parked = ConsumerMember("s", member_epoch=-2, assigned={TID: frozenset({1})})  # a static member away
    assert parked.assignment_epochs == {(TID, 1): 0}


def test_rows_of_a_group_and_the_order_kafka_writes_them():
    m = ConsumerMember("m", client_id="c", subscribed_topic_names=("t",), member_epoch=2,
                       assigned={TID: frozenset({0})})
    group = ConsumerGroup("g", group_epoch=2, assignment_epoch=2, members={"m": m}, target={"m": {TID: frozenset({0})}})
    rows = {**cr.member_rows(group, "m"), **cr.group_rows(group)}
    types = [int.from_bytes(k[:2], "big") for k in cr.order(set(rows), rows)]
    assert types == [cr.MEMBER, cr.GROUP, cr.TARGET_MEMBER, cr.TARGET_EPOCH, cr.CURRENT]
    gone = attrs.evolve(group, members={}, target={})
    assert set(cr.member_rows(gone, "m").values()) == {None}
    removal = {**cr.member_rows(gone, "m"), **cr.group_rows(gone)}
    types = [int.from_bytes(k[:2], "big") for k in cr.order(set(removal), removal)]
    assert types == [cr.CURRENT, cr.TARGET_MEMBER, cr.MEMBER, cr.GROUP, cr.TARGET_EPOCH]
    tombstones = cr.group_tombstones("g", {cr.key(cr.TARGET_EPOCH, "g"): b"", cr.key(cr.GROUP, "g"): b""})
    assert [int.from_bytes(k[:2], "big") for k, v in tombstones] == [cr.TARGET_EPOCH, cr.PARTITION_METADATA,
                                                                      cr.GROUP]  # fmt: skip
    assert {v for _k, v in tombstones} == {None}


def test_metadata_hash():
    one = [("t", TID, 4)]
    assert cr.metadata_hash([]) == 0
    assert cr.metadata_hash(one) == cr.metadata_hash(list(one)) != cr.metadata_hash([("t", TID, 5)])
    assert cr.metadata_hash(one) != cr.metadata_hash([("t", uuid.uuid4(), 4)]) != cr.metadata_hash([("u", TID, 4)])
    a, b = ("a", uuid.uuid4(), 1), ("b", uuid.uuid4(), 2)
    assert cr.metadata_hash([a, b]) == cr.metadata_hash([b, a])  # sorted by topic name, as Kafka's
    assert -(2**63) <= cr.metadata_hash([a]) < 2**63
