"""Every served API has an error answer (Kafka's ``getErrorResponse``), and each one is sound at every version.

``dispatch`` answers a request whose handler fails unexpectedly, or whose answer cannot be written, with the
error answer its API registered (``error_answer``), as Kafka's ``handleError`` answers with the request's
``getErrorResponse``. Here each builder gets a request of its API, sent and read back at each version we
serve (so it sees what a client of that version sends), and its answer must be written at that version,
read back, carry UNKNOWN_SERVER_ERROR and no other error, and echo the request's own items (topics and
partitions, groups, keys...) where Kafka's echoes them. No broker is needed: a builder uses only the request.
"""

from __future__ import annotations

import types
import uuid

import pytest

from broker.dispatch import ERROR_ANSWERS, REGISTRY, CloseConnection, RequestContext, load_handlers
from protocol import (API_BY_KEY, ErrorCode, RequestHeader, decode_request, decode_response, encode_request,
                      response_chunks)  # fmt: skip
from protocol.error_counts import error_counts

from ._admin_client import req, sub

load_handlers()
USE = ErrorCode.UNKNOWN_SERVER_ERROR
ID_A, ID_B = uuid.UUID(int=1), uuid.UUID(int=2)


def s(key: int, *path: str, **fields):
    return sub(key, *path)(**fields)


def _pairs(topics, name: str, parts: str, index: str | None = "partition_index") -> list:
    """(topic name, [partition indexes]) of request or answer topics; ``index`` None: the partitions are ints."""
    return [(getattr(t, name), [p if index is None else getattr(p, index) for p in getattr(t, parts)])
            for t in topics]  # fmt: skip


TOPIC_A, TOPIC_B = "a", "b"
# api key -> (request fields, what the answer echoes, what it should echo of the request at a version);
# None: the answer echoes nothing of the request (the error at the top alone).
CASES = {
    0: (dict(acks=-1, timeout_ms=1, topic_data=[
        s(0, "TopicProduceData", name=TOPIC_A, topic_id=ID_A, partition_data=[
            s(0, "TopicProduceData", "PartitionProduceData", index=i, records=None) for i in (0, 1)])]),
        lambda r: [(t.name, t.topic_id, [p.index for p in t.partition_responses]) for t in r.responses],
        lambda q, v: [(t.name, t.topic_id, [p.index for p in t.partition_data]) for t in q.topic_data]),
    1: (dict(session_id=7, topics=[s(1, "FetchTopic", topic=TOPIC_A, topic_id=ID_A, partitions=[
        s(1, "FetchTopic", "FetchPartition", partition=i) for i in (0, 3)])]),
        lambda r: (r.session_id, [(t.topic, t.topic_id, [p.partition_index for p in t.partitions])
                                  for t in r.responses]),
        lambda q, v: (q.session_id, [(t.topic, t.topic_id, [p.partition for p in t.partitions]) for t in q.topics]
                      if v < 13 else [])),
    2: (dict(topics=[s(2, "ListOffsetsTopic", name=TOPIC_A, partitions=[
        s(2, "ListOffsetsTopic", "ListOffsetsPartition", partition_index=i) for i in (0, 2)])]),
        lambda r: _pairs(r.topics, "name", "partitions"), lambda q, v: _pairs(q.topics, "name", "partitions")),
    3: (dict(topics=[s(3, "MetadataRequestTopic", name=TOPIC_A, topic_id=ID_A)]),
        lambda r: [(t.name, t.topic_id) for t in r.topics],
        lambda q, v: [(t.name or "", t.topic_id) for t in q.topics]),
    8: (dict(group_id="g", topics=[s(8, "OffsetCommitRequestTopic", name=TOPIC_A, topic_id=ID_A, partitions=[
        s(8, "OffsetCommitRequestTopic", "OffsetCommitRequestPartition", partition_index=i) for i in (0, 1)])]),
        lambda r: [(t.name, t.topic_id, [p.partition_index for p in t.partitions]) for t in r.topics],
        lambda q, v: [(t.name, t.topic_id, [p.partition_index for p in t.partitions]) for t in q.topics]),
    9: (dict(group_id="g", topics=[s(9, "OffsetFetchRequestTopic", name=TOPIC_A, partition_indexes=[0, 4])],
             groups=[s(9, "OffsetFetchRequestGroup", group_id=g) for g in ("g", "h")]),
        lambda r: (_pairs(r.topics, "name", "partitions"), [g.group_id for g in r.groups]),
        lambda q, v: (_pairs(q.topics, "name", "partition_indexes", None) if v < 2 else [],
                      [g.group_id for g in q.groups])),
    10: (dict(key="g", coordinator_keys=["g", "h"]),
         lambda r: [c.key for c in r.coordinators], lambda q, v: q.coordinator_keys if v >= 4 else []),
    11: (dict(group_id="g", member_id=""), None, None),
    12: (dict(group_id="g"), None, None),
    13: (dict(group_id="g", members=[s(13, "MemberIdentity", member_id="m")]), None, None),
    14: (dict(group_id="g"), None, None),
    15: (dict(groups=["g", "h"]), lambda r: [g.group_id for g in r.groups], lambda q, v: q.groups),
    16: (dict(), None, None),
    17: (dict(mechanism="PLAIN"), None, None),
    18: (dict(client_software_name="t", client_software_version="1"), None, None),
    19: (dict(topics=[s(19, "CreatableTopic", name=n, num_partitions=1, replication_factor=1) for n in "ab"]),
         lambda r: [t.name for t in r.topics], lambda q, v: [t.name for t in q.topics]),
    20: (dict(topic_names=[TOPIC_A, TOPIC_B], topics=[s(20, "DeleteTopicState", name=TOPIC_A, topic_id=ID_A),
                                                      s(20, "DeleteTopicState", name=None, topic_id=ID_B)]),
         lambda r: [(t.name, t.topic_id) for t in r.responses],
         lambda q, v: [(t.name, t.topic_id) for t in q.topics] if v >= 6 else [(n, uuid.UUID(int=0))
                                                                               for n in q.topic_names]),
    21: (dict(topics=[s(21, "DeleteRecordsTopic", name=TOPIC_A, partitions=[
        s(21, "DeleteRecordsTopic", "DeleteRecordsPartition", partition_index=i) for i in (1, 2)])]),
         lambda r: _pairs(r.topics, "name", "partitions"), lambda q, v: _pairs(q.topics, "name", "partitions")),
    22: (dict(transactional_id=None), None, None),
    23: (dict(topics=[s(23, "OffsetForLeaderTopic", topic=TOPIC_A, partitions=[
        s(23, "OffsetForLeaderTopic", "OffsetForLeaderPartition", partition=i) for i in (0, 5)])]),
         lambda r: _pairs(r.topics, "topic", "partitions", "partition"),
         lambda q, v: _pairs(q.topics, "topic", "partitions", "partition")),
    24: (dict(transactional_id="t", topics=[s(24, "AddPartitionsToTxnTopic", name=n, partitions=[0, 1]) for n in "ab"]),
         lambda r: _pairs(r.results_by_topic, "name", "results_by_partition"),
         lambda q, v: _pairs(q.topics, "name", "partitions", None)),
    25: (dict(transactional_id="t", group_id="g"), None, None),
    26: (dict(transactional_id="t"), None, None),
    27: (dict(markers=[s(27, "WritableTxnMarker", producer_id=p, topics=[s(
        27, "WritableTxnMarker", "WritableTxnMarkerTopic", name=TOPIC_A, partition_indexes=[0, p])]) for p in (1, 2)]),
         lambda r: [(m.producer_id, _pairs(m.topics, "name", "partitions")) for m in r.markers],
         lambda q, v: [(m.producer_id, _pairs(m.topics, "name", "partition_indexes", None)) for m in q.markers]),
    28: (dict(transactional_id="t", group_id="g", topics=[s(
        28, "TxnOffsetCommitRequestTopic", name=TOPIC_A, partitions=[
        s(28, "TxnOffsetCommitRequestTopic", "TxnOffsetCommitRequestPartition", partition_index=i) for i in (0, 1)])]),
         lambda r: _pairs(r.topics, "name", "partitions"), lambda q, v: _pairs(q.topics, "name", "partitions")),
    29: (dict(resource_type_filter=1), lambda r: r.error_message, lambda q, v: None),
    30: (dict(creations=[s(30, "AclCreation", resource_type=2, resource_name=n) for n in "ab"]),
         lambda r: [x.error_message for x in r.results], lambda q, v: [None] * len(q.creations)),
    31: (dict(filters=[s(31, "DeleteAclsFilter", resource_type_filter=1)] * 2),
         lambda r: [(x.error_message, x.matching_acls) for x in r.filter_results],
         lambda q, v: [(None, [])] * len(q.filters)),
    32: (dict(resources=[s(32, "DescribeConfigsResource", resource_type=2, resource_name=n) for n in "ab"]),
         lambda r: [(x.resource_type, x.resource_name) for x in r.results],
         lambda q, v: [(x.resource_type, x.resource_name) for x in q.resources]),
    33: (dict(resources=[s(33, "AlterConfigsResource", resource_type=2, resource_name=n) for n in "ab"]),
         lambda r: [(x.resource_type, x.resource_name) for x in r.responses],
         lambda q, v: [(x.resource_type, x.resource_name) for x in q.resources]),
    34: (dict(dirs=[s(34, "AlterReplicaLogDir", path=d, topics=[s(
        34, "AlterReplicaLogDir", "AlterReplicaLogDirTopic", name=n, partitions=[0, 1])]) for d, n in ("xa", "yb")]),
         lambda r: _pairs(r.results, "topic_name", "partitions"),
         lambda q, v: [p for d in q.dirs for p in _pairs(d.topics, "name", "partitions", None)]),
    35: (dict(topics=None), None, None),
    36: (dict(auth_bytes=b"x"), lambda r: r.error_message, lambda q, v: None),
    37: (dict(topics=[s(37, "CreatePartitionsTopic", name=n, count=2) for n in "ab"]),
         lambda r: [x.name for x in r.results], lambda q, v: [x.name for x in q.topics]),
    38: (dict(), lambda r: (r.principal_type, r.principal_name, r.token_id, r.hmac, r.expiry_timestamp_ms),
         lambda q, v: ("User", "ANONYMOUS", "", b"", -1)),
    39: (dict(hmac=b"h"), None, None),
    40: (dict(hmac=b"h"), None, None),
    41: (dict(owners=None), None, None),
    42: (dict(groups_names=["g", "h", "g"]), lambda r: [x.group_id for x in r.results], lambda q, v: q.groups_names),
    43: (dict(topic_partitions=[s(43, "TopicPartitions", topic=TOPIC_A, partitions=[0, 1])]),
         lambda r: _pairs(r.replica_election_results, "topic", "partition_result", "partition_id"),
         lambda q, v: _pairs(q.topic_partitions, "topic", "partitions", None)),
    44: (dict(resources=[s(44, "AlterConfigsResource", resource_type=2, resource_name=n) for n in "ab"]),
         lambda r: [(x.resource_type, x.resource_name) for x in r.responses],
         lambda q, v: [(x.resource_type, x.resource_name) for x in q.resources]),
    45: (dict(topics=[s(45, "ReassignableTopic", name=TOPIC_A, partitions=[
        s(45, "ReassignableTopic", "ReassignablePartition", partition_index=i) for i in (0, 1)])]),
         lambda r: _pairs(r.responses, "name", "partitions"), lambda q, v: _pairs(q.topics, "name", "partitions")),
    46: (dict(topics=[s(46, "ListPartitionReassignmentsTopics", name=TOPIC_A, partition_indexes=[0, 2])]),
         lambda r: (r.error_message, _pairs(r.topics, "name", "partitions")),
         lambda q, v: (None, _pairs(q.topics, "name", "partition_indexes", None))),
    47: (dict(group_id="g"), None, None),
    48: (dict(components=[]), lambda r: r.entries, lambda q, v: None),
    49: (dict(entries=[s(49, "EntryData", entity=[
        s(49, "EntryData", "EntityData", entity_type="user", entity_name="u")])]),
         lambda r: [[(d.entity_type, d.entity_name) for d in e.entity] for e in r.entries],
         lambda q, v: [[(d.entity_type, d.entity_name) for d in e.entity] for e in q.entries]),
    50: (dict(users=[s(50, "UserName", name=n) for n in "ab"]),
         lambda r: [x.user for x in r.results], lambda q, v: [""] * len(q.users)),
    51: (dict(deletions=[s(51, "ScramCredentialDeletion", name=n) for n in "ba"],
              upsertions=[s(51, "ScramCredentialUpsertion", name=n) for n in "bc"]),
         lambda r: [(x.user, x.error_message) for x in r.results],
         lambda q, v: [("a", None), ("b", None), ("c", None)]),  # each user once, in name order
    55: (dict(topics=[]), None, None),
    60: (dict(), lambda r: r.error_message, lambda q, v: None),
    61: (dict(topics=[s(61, "TopicRequest", name=TOPIC_A, partition_indexes=[0, 1])]),
         lambda r: _pairs(r.topics, "name", "partitions"),
         lambda q, v: _pairs(q.topics, "name", "partition_indexes", None)),
    65: (dict(transactional_ids=["t", "u"]), lambda r: [x.transactional_id for x in r.transaction_states],
         lambda q, v: q.transactional_ids),
    66: (dict(), None, None),
    68: (dict(group_id="g", member_id="m"), None, None),
    69: (dict(group_ids=["g", "h"]), lambda r: [g.group_id for g in r.groups], lambda q, v: q.group_ids),
    74: (dict(), None, None),
    75: (dict(topics=[s(75, "TopicRequest", name=n) for n in "ab"]),
         lambda r: [t.name for t in r.topics], lambda q, v: [t.name for t in q.topics]),
}  # fmt: skip
NO_ERROR_FIELD = {(35, 0), (35, 1), (35, 2)}  # DescribeLogDirs v0-v2: Kafka's error answer carries no error


def test_every_served_api_has_an_error_answer():
    missing = sorted(API_BY_KEY[k].name for k in set(REGISTRY) - set(ERROR_ANSWERS))
    assert missing == [] and set(ERROR_ANSWERS) == set(REGISTRY) == set(CASES)


def _round_trip_request(key: int, version: int, fields: dict):
    """The request as a client of ``version`` sends it, read back as dispatch reads it."""
    frame = encode_request(RequestHeader(key, version, 11, "t"), req(key, **fields))
    return decode_request(bytearray(frame[4:]))


def _served():
    return [(k, v) for k, h in sorted(REGISTRY.items()) for v in range(h.min_version, h.max_version + 1)]


@pytest.mark.parametrize("key, version", _served(), ids=lambda x: str(x))
def test_each_error_answer_is_written_at_every_version_echoing_the_request(key, version):
    api = API_BY_KEY[key]
    fields, echoed, expected = CASES[key]
    request = _round_trip_request(key, version, fields)
    ctx = RequestContext(None, types.SimpleNamespace(), request)  # no broker: the request alone
    answer = ERROR_ANSWERS[key].fn(ctx, request.body, USE)
    data = b"".join(response_chunks(api, version, 11, answer))
    correlation_id, resp = decode_response(data[4:], api, version)
    assert correlation_id == 11
    errors = set(error_counts(api.name, resp)) - {ErrorCode.NONE}  # a field absent from the version reads 0
    assert errors == (set() if (key, version) in NO_ERROR_FIELD else {USE})
    if echoed is not None:
        assert echoed(resp) == expected(request.body, version)


def test_a_produce_with_acks_0_has_no_error_answer():
    """Kafka's ``ProduceRequest.getErrorResponse`` is null for acks=0: the connection closes instead."""
    fields = dict(CASES[0][0], acks=0)
    request = _round_trip_request(0, 9, fields)
    ctx = RequestContext(None, types.SimpleNamespace(), request)
    with pytest.raises(CloseConnection) as closed:
        ERROR_ANSWERS[0].fn(ctx, request.body, USE)
    assert [p.error_code for t in closed.value.response.responses for p in t.partition_responses] == [USE, USE]


def test_the_throttle_time_is_left_out_where_kafka_leaves_it_out():
    """Kafka's getErrorResponse of these sets no throttle time (or 0): dispatch does not copy it in."""
    unthrottled = {k for k, builder in ERROR_ANSWERS.items() if not builder.throttled}
    assert {API_BY_KEY[k].name for k in unthrottled} == {
        "InitProducerId", "OffsetForLeaderEpoch", "IncrementalAlterConfigs", "AlterUserScramCredentials",
        "DescribeCluster", "DescribeProducers"}
