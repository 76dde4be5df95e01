"""Dispatch and ApiVersions: the registry is the single source of what we serve.

These tests drive ``broker.dispatch.dispatch`` with encoded frames, no socket:
ApiVersions lists exactly the registered handlers, too-new ApiVersions gets
Kafka's v0 UNSUPPORTED_VERSION answer, and everything Kafka refuses at the
socket layer becomes ``CloseConnection``.
"""

from __future__ import annotations

import struct
import types

import pytest
import trio

from broker.config import BrokerConfig
from broker.dispatch import CloseConnection, answer_before_login, dispatch, load_handlers
from broker.metrics import BrokerMetrics
from broker.quotas import ClientQuotas
from broker.request_time import TaskTime
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request, message_class

HANDLERS = load_handlers()


def _broker(**props: str):
    config = BrokerConfig.from_props({k.replace("_", "."): v for k, v in props.items()})
    return types.SimpleNamespace(config=config, metrics=BrokerMetrics(), quotas=ClientQuotas(None, {}),
                                 request_time=TaskTime(), quorum=types.SimpleNamespace(last_offset=17))  # fmt: skip


async def _call(broker, api_key: int, version: int, body=None, client_id="t"):
    api = API_BY_KEY[api_key]
    body = body if body is not None else message_class(api, True)()
    frame = bytearray(encode_request(RequestHeader(api_key, version, 42, client_id), body)[4:])
    with trio.fail_after(5):
        chunks = await dispatch(broker, types.SimpleNamespace(read_ahead={}), frame)
    data = b"".join(chunks)
    assert struct.unpack(">i", data[:4])[0] == len(data) - 4
    reply_version = 0 if api_key == 18 and version > HANDLERS[18].max_version else version
    return decode_response(data[4:], api, reply_version)


@pytest.mark.parametrize("version", range(0, 5))
async def test_api_versions_lists_the_registry(version):
    body = message_class(API_BY_KEY[18], True)(client_software_name="pytest", client_software_version="1.0")
    corr, resp = await _call(_broker(), 18, version, body)
    assert corr == 42 and resp.error_code == 0
    assert {(k.api_key, k.min_version, k.max_version) for k in resp.api_keys} == {
        (key, h.min_version, h.max_version) for key, h in HANDLERS.items()
    }


async def test_too_new_api_versions_gets_v0_unsupported_version():
    corr, resp = await _call(_broker(), 18, 7)
    assert corr == 42 and resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 4)]


async def test_bad_client_software_name_is_invalid_request():
    body = message_class(API_BY_KEY[18], True)(client_software_name="-bad name", client_software_version="1")
    _, resp = await _call(_broker(), 18, 3, body)
    assert resp.error_code == ErrorCode.INVALID_REQUEST


async def test_legacy_versions_off_like_kafka_4():
    broker = _broker(legacy_protocol_versions_enable="false")
    _, resp = await _call(broker, 18, 2)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
    assert ranges[0][0] == 0  # Produce still advertised from v0 (KAFKA-18659)
    assert ranges[1][0] == 4  # Fetch v0-3 gone
    # KIP-896 as in Kafka 4.0.1: ListOffsets, OffsetCommit, OffsetFetch, CreateTopics, DeleteTopics, DescribeConfigs
    assert {k: ranges[k][0] for k in (2, 8, 9, 19, 20, 32)} == {2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 32: 1}
    assert ranges[11][0] == 0 and ranges[3][0] == 0  # JoinGroup v0-1 came back in 4.0.1; Metadata v0 never left
    for key, version in ((0, 2), (1, 3), (2, 0), (8, 1), (9, 0), (19, 1), (20, 0), (32, 0)):
        with pytest.raises(CloseConnection):
            await _call(broker, key, version)
    await _call(broker, 2, 1)  # the lowest served ones answer
    assert (await _call(_broker(), 2, 0))[1] is not None  # and all of them by default


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">hhih", 999, 0, 1, -1),  # unknown api key
        struct.pack(">hhih", 3, 77, 1, -1),  # Metadata v77
        struct.pack(">hhih", 3, 5, 1, -1) + b"\x00",  # truncated Metadata v5 body
        b"\x00\x03",  # not even a header
    ],
)
async def test_refused_frames_close(frame):
    with pytest.raises(CloseConnection):
        with trio.fail_after(5):
            await dispatch(_broker(), types.SimpleNamespace(read_ahead={}), bytearray(frame))


@pytest.mark.parametrize(
    "frame",
    [
        struct.pack(">hhih", 999, 0, 1, -1),  # unknown api key
        struct.pack(">hhih", 3, 77, 1, -1) + b"\x00",  # Metadata v77: refused for its API, not answered for
        struct.pack(">hhih", 3, 5, 1, -1),  # its version (Kafka's authenticator refuses all but ApiVersions
        # and SaslHandshake before it parses a request)
        struct.pack(">hhih", 18, 3, 1, -1) + b"\x05",  # truncated ApiVersions v3 body
        b"\x00\x03",  # not even a header
    ],
)
async def test_frames_before_a_sasl_login_are_refused_as_dispatch_refuses_them(frame):
    with pytest.raises(CloseConnection):
        with trio.fail_after(5):
            await answer_before_login(_broker(), types.SimpleNamespace(read_ahead={}), bytearray(frame))


async def test_api_versions_before_a_sasl_login_falls_back_unmetered():
    broker = _broker()
    frame = bytearray(encode_request(RequestHeader(18, 99, 5, "t"), message_class(API_BY_KEY[18], True)())[4:])
    with trio.fail_after(5):
        data = b"".join(await answer_before_login(broker, types.SimpleNamespace(read_ahead={}), frame))
    correlation_id, resp = decode_response(data[4:], API_BY_KEY[18], 0)
    assert correlation_id == 5 and resp.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert broker.metrics.registry.get_sample_value(
        "kafka_network_requestmetrics_requests_total", {"request": "ApiVersions", "version": "99"}) is None


@pytest.mark.parametrize("version", [3, 4])
async def test_api_versions_v3_carries_the_feature_tables(version):
    body = message_class(API_BY_KEY[18], True)(client_software_name="pytest", client_software_version="1.0")
    _, resp = await _call(_broker(), 18, version, body)
    assert [(f.name, f.min_version, f.max_version) for f in resp.supported_features] == [("metadata.version", 7, 21)]
    assert [(f.name, f.min_version_level, f.max_version_level) for f in resp.finalized_features] == [
        ("metadata.version", 21, 21)
    ]
    assert resp.finalized_features_epoch == 17  # the metadata quorum's last offset


@pytest.mark.parametrize("version", [0, 1, 2])
async def test_api_versions_below_v3_has_no_feature_tables(version):
    frame = encode_request(RequestHeader(18, version, 7, "t"), message_class(API_BY_KEY[18], True)())[4:]
    with trio.fail_after(5):
        data = b"".join(await dispatch(_broker(), types.SimpleNamespace(read_ahead={}), bytearray(frame)))
    assert b"metadata.version" not in data
