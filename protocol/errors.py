"""Kafka error codes: the numbers clients see in every response.

``ErrorCode`` is an ``IntEnum`` named as in Apache Kafka's ``Errors`` table, so
``ErrorCode.CORRUPT_MESSAGE == 2``. ``ErrorCode.X.retriable`` says whether a
client may retry. ``KafkaProtocolError`` and its subclasses are the only
exceptions the decoders in this package raise; each carries the code a broker
answers with (or, for framing and header errors, the reason it closes the
connection).
"""

from __future__ import annotations

import enum

# code, name, retriable: facts of the wire protocol (Kafka 4.x numbering).
_TABLE = """
-1 UNKNOWN_SERVER_ERROR 0
0 NONE 0
1 OFFSET_OUT_OF_RANGE 0
2 CORRUPT_MESSAGE 0
3 UNKNOWN_TOPIC_OR_PARTITION 1
4 INVALID_FETCH_SIZE 0
5 LEADER_NOT_AVAILABLE 1
6 NOT_LEADER_OR_FOLLOWER 1
7 REQUEST_TIMED_OUT 1
8 BROKER_NOT_AVAILABLE 0
9 REPLICA_NOT_AVAILABLE 1
10 MESSAGE_TOO_LARGE 0
11 STALE_CONTROLLER_EPOCH 0
12 OFFSET_METADATA_TOO_LARGE 0
13 NETWORK_EXCEPTION 1
14 COORDINATOR_LOAD_IN_PROGRESS 1
15 COORDINATOR_NOT_AVAILABLE 1
16 NOT_COORDINATOR 1
17 INVALID_TOPIC_EXCEPTION 0
18 RECORD_LIST_TOO_LARGE 0
19 NOT_ENOUGH_REPLICAS 1
20 NOT_ENOUGH_REPLICAS_AFTER_APPEND 1
21 INVALID_REQUIRED_ACKS 0
22 ILLEGAL_GENERATION 0
23 INCONSISTENT_GROUP_PROTOCOL 0
24 INVALID_GROUP_ID 0
25 UNKNOWN_MEMBER_ID 0
26 INVALID_SESSION_TIMEOUT 0
27 REBALANCE_IN_PROGRESS 0
28 INVALID_COMMIT_OFFSET_SIZE 0
29 TOPIC_AUTHORIZATION_FAILED 0
30 GROUP_AUTHORIZATION_FAILED 0
31 CLUSTER_AUTHORIZATION_FAILED 0
32 INVALID_TIMESTAMP 0
33 UNSUPPORTED_SASL_MECHANISM 0
34 ILLEGAL_SASL_STATE 0
35 UNSUPPORTED_VERSION 0
36 TOPIC_ALREADY_EXISTS 0
37 INVALID_PARTITIONS 0
38 INVALID_REPLICATION_FACTOR 0
39 INVALID_REPLICA_ASSIGNMENT 0
40 INVALID_CONFIG 0
41 NOT_CONTROLLER 1
42 INVALID_REQUEST 0
43 UNSUPPORTED_FOR_MESSAGE_FORMAT 0
44 POLICY_VIOLATION 0
45 OUT_OF_ORDER_SEQUENCE_NUMBER 0
46 DUPLICATE_SEQUENCE_NUMBER 0
47 INVALID_PRODUCER_EPOCH 0
48 INVALID_TXN_STATE 0
49 INVALID_PRODUCER_ID_MAPPING 0
50 INVALID_TRANSACTION_TIMEOUT 0
51 CONCURRENT_TRANSACTIONS 1
52 TRANSACTION_COORDINATOR_FENCED 0
53 TRANSACTIONAL_ID_AUTHORIZATION_FAILED 0
54 SECURITY_DISABLED 0
55 OPERATION_NOT_ATTEMPTED 0
56 KAFKA_STORAGE_ERROR 1
57 LOG_DIR_NOT_FOUND 0
58 SASL_AUTHENTICATION_FAILED 0
59 UNKNOWN_PRODUCER_ID 0
60 REASSIGNMENT_IN_PROGRESS 0
61 DELEGATION_TOKEN_AUTH_DISABLED 0
62 DELEGATION_TOKEN_NOT_FOUND 0
63 DELEGATION_TOKEN_OWNER_MISMATCH 0
64 DELEGATION_TOKEN_REQUEST_NOT_ALLOWED 0
65 DELEGATION_TOKEN_AUTHORIZATION_FAILED 0
66 DELEGATION_TOKEN_EXPIRED 0
67 INVALID_PRINCIPAL_TYPE 0
68 NON_EMPTY_GROUP 0
69 GROUP_ID_NOT_FOUND 0
70 FETCH_SESSION_ID_NOT_FOUND 1
71 INVALID_FETCH_SESSION_EPOCH 1
72 LISTENER_NOT_FOUND 1
73 TOPIC_DELETION_DISABLED 0
74 FENCED_LEADER_EPOCH 1
75 UNKNOWN_LEADER_EPOCH 1
76 UNSUPPORTED_COMPRESSION_TYPE 0
77 STALE_BROKER_EPOCH 0
78 OFFSET_NOT_AVAILABLE 1
79 MEMBER_ID_REQUIRED 0
80 PREFERRED_LEADER_NOT_AVAILABLE 1
81 GROUP_MAX_SIZE_REACHED 0
82 FENCED_INSTANCE_ID 0
83 ELIGIBLE_LEADERS_NOT_AVAILABLE 1
84 ELECTION_NOT_NEEDED 1
85 NO_REASSIGNMENT_IN_PROGRESS 0
86 GROUP_SUBSCRIBED_TO_TOPIC 0
87 INVALID_RECORD 0
88 UNSTABLE_OFFSET_COMMIT 1
89 THROTTLING_QUOTA_EXCEEDED 1
90 PRODUCER_FENCED 0
91 RESOURCE_NOT_FOUND 0
92 DUPLICATE_RESOURCE 0
93 UNACCEPTABLE_CREDENTIAL 0
94 INCONSISTENT_VOTER_SET 0
95 INVALID_UPDATE_VERSION 0
96 FEATURE_UPDATE_FAILED 0
97 PRINCIPAL_DESERIALIZATION_FAILURE 0
98 SNAPSHOT_NOT_FOUND 0
99 POSITION_OUT_OF_RANGE 0
100 UNKNOWN_TOPIC_ID 1
101 DUPLICATE_BROKER_REGISTRATION 0
102 BROKER_ID_NOT_REGISTERED 0
103 INCONSISTENT_TOPIC_ID 1
104 INCONSISTENT_CLUSTER_ID 0
105 TRANSACTIONAL_ID_NOT_FOUND 0
106 FETCH_SESSION_TOPIC_ID_ERROR 1
107 INELIGIBLE_REPLICA 0
108 NEW_LEADER_ELECTED 0
109 OFFSET_MOVED_TO_TIERED_STORAGE 0
110 FENCED_MEMBER_EPOCH 0
111 UNRELEASED_INSTANCE_ID 0
112 UNSUPPORTED_ASSIGNOR 0
113 STALE_MEMBER_EPOCH 0
114 MISMATCHED_ENDPOINT_TYPE 0
115 UNSUPPORTED_ENDPOINT_TYPE 0
116 UNKNOWN_CONTROLLER_ID 0
117 UNKNOWN_SUBSCRIPTION_ID 0
118 TELEMETRY_TOO_LARGE 0
119 INVALID_REGISTRATION 0
120 TRANSACTION_ABORTABLE 0
121 INVALID_RECORD_STATE 0
122 SHARE_SESSION_NOT_FOUND 1
123 INVALID_SHARE_SESSION_EPOCH 1
124 FENCED_STATE_EPOCH 0
125 INVALID_VOTER_KEY 0
126 DUPLICATE_VOTER 0
127 VOTER_NOT_FOUND 0
128 INVALID_REGULAR_EXPRESSION 0
129 REBOOTSTRAP_REQUIRED 0
"""


def _members() -> list[tuple[str, int]]:
    return [(line.split()[1], int(line.split()[0])) for line in _TABLE.split("\n") if line.strip()]


_RETRIABLE = frozenset(int(line.split()[0]) for line in _TABLE.split("\n") if line.strip().endswith(" 1"))

ErrorCode = enum.IntEnum("ErrorCode", _members(), module=__name__)
ErrorCode.__doc__ = "Kafka's error codes by name."
ErrorCode.retriable = property(lambda self: int(self) in _RETRIABLE)  # type: ignore[attr-defined]


class KafkaProtocolError(Exception):
    """Bad bytes from a peer. ``error_code`` is what Kafka would answer."""

    error_code: ErrorCode = ErrorCode.INVALID_REQUEST

    def __init__(self, message: str, error_code: ErrorCode | None = None) -> None:
        super().__init__(message)
        if error_code is not None:
            self.error_code = error_code


class InvalidRequestError(KafkaProtocolError):
    """A request header or body that does not parse: Kafka closes the connection."""

    error_code = ErrorCode.INVALID_REQUEST


class FrameTooLargeError(KafkaProtocolError):
    """A size prefix that is negative or over the limit: Kafka closes the connection."""

    error_code = ErrorCode.INVALID_REQUEST


class StringTooLongError(ValueError):
    """A string field over 0x7fff bytes to write: Kafka's generated writers throw ("'<field>' field is too
    long to be serialized") for classic and compact strings alike, so such a string never goes out."""


class CorruptRecordError(KafkaProtocolError):
    """Record framing or CRC failure (Kafka's CorruptRecordException)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class CompressedStreamError(CorruptRecordError):
    """Compressed records the codec cannot read (bad or cut-short data; not a size limit). Kafka's codec
    streams throw IOException or fail to open, which its batch iterators wrap in a plain KafkaException
    ("Failed to decompress record stream"), no ApiException: the broker answers UNKNOWN_SERVER_ERROR."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InvalidRecordError(KafkaProtocolError):
    """A record or batch whose structure is wrong (Kafka's InvalidRecordException)."""

    error_code = ErrorCode.INVALID_RECORD


class UnsupportedCompressionError(KafkaProtocolError):
    """A codec id the format does not allow (e.g. zstd in magic 0/1)."""

    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class UnknownCodecError(KafkaProtocolError):
    """Attributes naming codec id 5-7. Kafka's ``CompressionType.forId`` throws an IllegalArgumentException,
    no ApiException, so the broker answers UNKNOWN_SERVER_ERROR."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR
