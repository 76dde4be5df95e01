"""A request client for the handler tests: a real broker, frames through ``dispatch``.

``broker`` (a fixture) opens a real ``Broker`` (real storage) on a temporary
directory with ``node.id`` 3, ``num.partitions`` 3 and ``log.segment.bytes``
1 MiB. ``call`` encodes a request with our protocol package, feeds the frame
to ``broker.dispatch.dispatch`` (no socket) and decodes the answer; the other
helpers build the requests the tests repeat (create a topic, produce records,
describe configs).
"""

from __future__ import annotations

import time
import types

import pytest
import trio

from broker.config import BrokerConfig
from broker.connection import FileRegion
from broker.converted_send import ConvertedRecords
from broker.core import Broker
from broker.dispatch import dispatch, load_handlers
from broker.request_metrics import AfterSent
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request, message_class
from protocol.records import RecordBatchBuilder

INVALID_REPLICA_ASSIGNMENT = ErrorCode(39)  # Kafka's name for code 39

load_handlers()

NODE = 3
TOPIC, BROKER = 2, 4
DEFAULT, STATIC, OVERRIDE = 5, 4, 1


@pytest.fixture
def broker(tmp_path):
    b = open_broker(tmp_path)
    yield b
    b.close()


def open_broker(tmp_path, **extra: str) -> Broker:
    """The ``broker`` fixture's broker, with ``extra`` broker configs (dots as underscores) over its own."""
    props = {
        "node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "num.partitions": "3",
        "prometheus.port": "0", "log.segment.bytes": "1048576",
    }  # fmt: skip
    props.update({key.replace("_", "."): value for key, value in extra.items()})
    b = Broker.open(BrokerConfig.from_props(props))
    b.advertised = ("127.0.0.1", 9999)
    return b


def req(api_key: int, **fields):
    return message_class(API_BY_KEY[api_key], True)(**fields)


def sub(api_key: int, *path: str):
    """A nested request class, e.g. ``sub(19, 'CreatableTopic')``."""
    cls = message_class(API_BY_KEY[api_key], True)
    for name in path:
        cls = getattr(cls, name)
    return cls


def fake_connection(**fields):
    """What handlers use of a connection: pass one to ``call`` to keep its read-aheads between calls."""
    return types.SimpleNamespace(read_ahead={}, **fields)


async def call(broker, api_key: int, version: int, body, timeout: float = 5, connection=None,
               client_id: str = "admin-test"):
    api = API_BY_KEY[api_key]
    frame = bytearray(encode_request(RequestHeader(api_key, version, 11, client_id), body)[4:])
    with trio.fail_after(timeout):
        chunks = await dispatch(broker, connection or fake_connection(), frame)
    data = await collect(chunks)
    correlation_id, resp = decode_response(data[4:], api, version)
    assert correlation_id == 11
    return resp


async def collect(chunks: list) -> bytes:
    """A response's bytes, as the connection would send them (read-aheads begun once it is all out)."""
    out = bytearray()
    for c in chunks:
        if isinstance(c, ConvertedRecords):
            await c.send(lambda piece: _extend(out, piece))
        else:
            out += c.read() if isinstance(c, FileRegion) else c
    for c in chunks:
        if isinstance(c, (ConvertedRecords, AfterSent)):
            c.after_sent()
    return bytes(out)


async def _extend(out: bytearray, piece) -> None:
    out += piece


# -- helpers built on the handlers ----------------------------------------------


def creatable(name: str, partitions: int = 1, factor: int = -1, configs=None, assignments=None):
    Topic = sub(19, "CreatableTopic")
    return Topic(
        name=name, num_partitions=partitions, replication_factor=factor,
        configs=[Topic.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
        assignments=[
            Topic.CreatableReplicaAssignment(partition_index=i, broker_ids=ids) for i, ids in (assignments or [])
        ],
    )  # fmt: skip


async def create(broker, *topics, version: int = 7, validate_only: bool = False):
    resp = await call(broker, 19, version, req(19, topics=list(topics), timeout_ms=1000, validate_only=validate_only))
    return {t.name: t for t in resp.topics}


async def create_ok(broker, name: str, partitions: int = 1, configs=None):
    result = (await create(broker, creatable(name, partitions, configs=configs)))[name]
    assert result.error_code == ErrorCode.NONE, result.error_message
    return result


async def delete_topic(broker, name: str) -> None:
    """DeleteTopics (v5) of ``name``, which must succeed."""
    resp = await call(broker, 20, 5, req(20, topic_names=[name], timeout_ms=1000))
    assert resp.responses[0].error_code == ErrorCode.NONE


async def produce(broker, topic: str, timestamps: list[int], partition: int = 0) -> int:
    builder = RecordBatchBuilder()
    for i, ts in enumerate(timestamps):
        builder.append(b"k%d" % i, b"v%d" % i, timestamp=ts)
    Data = sub(0, "TopicProduceData")
    part = Data.PartitionProduceData(index=partition, records=builder.build())
    body = req(0, acks=1, timeout_ms=1000, topic_data=[Data(name=topic, partition_data=[part])])
    resp = await call(broker, 0, 9, body)
    answer = resp.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.NONE
    return answer.base_offset


async def describe(broker, name: str, version: int = 4, keys=None, synonyms=True, docs=False, rtype=TOPIC):
    Res = sub(32, "DescribeConfigsResource")
    body = req(
        32, resources=[Res(resource_type=rtype, resource_name=name, configuration_keys=keys)],
        include_synonyms=synonyms, include_documentation=docs,
    )  # fmt: skip
    return (await call(broker, 32, version, body)).results[0]


async def configs_of(broker, name: str) -> dict:
    return {c.name: c for c in (await describe(broker, name)).configs}


def now_ms() -> int:
    return int(time.time() * 1000)


async def delete_records(broker, topic: str, parts: dict, version: int = 2):
    T = sub(21, "DeleteRecordsTopic")
    body = req(21, topics=[T(name=topic, partitions=[T.DeleteRecordsPartition(partition_index=p, offset=o)
                                                       for p, o in parts.items()])], timeout_ms=1000)  # fmt: skip
    resp = await call(broker, 21, version, body)
    return {p.partition_index: (p.error_code, p.low_watermark) for p in resp.topics[0].partitions}
