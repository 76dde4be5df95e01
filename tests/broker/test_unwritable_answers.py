"""An answer that cannot be written is replaced by the request's error answer, as Kafka sends it (``dispatch``).

Kafka writes an answer inside the handler's try (``KafkaApis.handle``), so its generated writer's "field is
too long to be serialized" (a string over 0x7fff bytes, classic or compact) ends in ``handleError``: the
request's ``getErrorResponse`` with UNKNOWN_SERVER_ERROR. Each case here is one a client can cause: an error
message quoting a long name or value, a member id made of a long client id, a config value grown past
0x7fff bytes by APPENDs. Each gets its decoded error answer, and the same connection then serves another
request. The unsent answer's error codes and the error answer's are both counted, as Kafka counts them.
"""

from __future__ import annotations

import logging

import pytest
import trio

from broker import dispatch as dispatch_module
from broker.dispatch import CloseConnection, dispatch
from protocol import ErrorCode, RequestHeader, encode_request

from ._admin_client import broker, call, create_ok, creatable, describe, fake_connection, req, sub  # noqa: F401
from ._consumer_group_client import ready

USE = ErrorCode.UNKNOWN_SERVER_ERROR
LONG = "x" * 0x7FFF  # the longest string a request may carry
TOPIC = 2
USE_MESSAGE = "The server experienced an unexpected error when processing the request."


async def still_serves(broker, connection) -> None:
    """The connection that got an error answer is answered again (ApiVersions v3)."""
    resp = await call(broker, 18, 3, req(18, client_software_name="t", client_software_version="1"),
                      connection=connection)  # fmt: skip
    assert resp.error_code == ErrorCode.NONE


def errors_counted(broker, api: str, error: str) -> float | None:
    return broker.metrics.registry.get_sample_value("kafka_network_requestmetrics_errors_total",
                                                    {"request": api, "error": error})  # fmt: skip


@pytest.mark.parametrize("version", [4, 5])  # classic strings, compact strings
async def test_create_topics_quoting_a_long_name_answers_unknown_server_error(broker, version, caplog):
    conn = fake_connection()
    body = req(19, topics=[creatable(LONG), creatable("ok-topic")], timeout_ms=1000, validate_only=False)
    with caplog.at_level(logging.ERROR, "broker.dispatch"):
        resp = await call(broker, 19, version, body, connection=conn)
    assert [(t.name, t.error_code, t.error_message) for t in resp.topics] == [(LONG, USE, None),
                                                                             ("ok-topic", USE, None)]  # fmt: skip
    assert "too long to be serialized; answering UNKNOWN_SERVER_ERROR" in caplog.text
    assert errors_counted(broker, "CreateTopics", "UNKNOWN_SERVER_ERROR") == 2
    assert errors_counted(broker, "CreateTopics", "INVALID_TOPIC_EXCEPTION") == 1  # the unsent answer's
    await still_serves(broker, conn)


def _alter_body(api_key: int, **config):
    Res = sub(api_key, "AlterConfigsResource")
    return req(api_key, resources=[Res(resource_type=TOPIC, resource_name="t",
                                       configs=[Res.AlterableConfig(**config)])], validate_only=False)  # fmt: skip


@pytest.mark.parametrize("api_key, op", [(33, {}), (44, {"config_operation": 0})])
async def test_alter_configs_quoting_a_long_value_answers_unknown_server_error(broker, api_key, op):
    await create_ok(broker, "t")
    conn = fake_connection()
    resp = await call(broker, api_key, 1, _alter_body(api_key, name="retention.ms", value=LONG, **op),
                      connection=conn)  # fmt: skip
    assert [(r.resource_name, r.resource_type, r.error_code, r.error_message) for r in resp.responses] == [
        ("t", TOPIC, USE, None)]
    await still_serves(broker, conn)
    assert (await describe(broker, "t")).error_code == ErrorCode.NONE  # nothing stored, the broker serves


@pytest.mark.parametrize("version", [1, 4])
async def test_describe_configs_of_a_value_appended_past_0x7fff_bytes_answers_unknown_server_error(broker, version):
    await create_ok(broker, "t")
    for i in range(3):  # three APPENDs of ~20 KB each to a LIST config
        value = ",".join(f"{p}:1" for p in range(i * 3000, i * 3000 + 3000))
        body = _alter_body(44, name="leader.replication.throttled.replicas", config_operation=2, value=value)
        assert (await call(broker, 44, 1, body)).responses[0].error_code == ErrorCode.NONE
    conn = fake_connection()
    Res = sub(32, "DescribeConfigsResource")
    body = req(32, resources=[Res(resource_type=TOPIC, resource_name="t", configuration_keys=None)])
    resp = await call(broker, 32, version, body, connection=conn)
    assert [(r.resource_name, r.error_code, r.error_message, r.configs) for r in resp.results] == [
        ("t", USE, USE_MESSAGE, [])]
    await still_serves(broker, conn)


async def test_join_group_of_a_long_client_id_answers_unknown_server_error(broker):
    P = sub(11, "JoinGroupRequestProtocol")
    body = req(11, group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
               protocol_type="consumer", protocols=[P(name="range", metadata=b"")])  # fmt: skip
    conn = fake_connection()
    resp = await call(broker, 11, 4, body, client_id="c" * 0x7FFF, connection=conn)  # member id: client id + uuid
    assert (resp.error_code, resp.generation_id, resp.member_id, resp.leader, resp.members) == (USE, -1, "", "", [])
    assert resp.protocol_name == ""
    await still_serves(broker, conn)


async def test_partition_admin_quoting_a_long_topic_name_answers_unknown_server_error(broker):
    T = sub(45, "ReassignableTopic")
    body = req(45, timeout_ms=1000, topics=[T(name=LONG, partitions=[T.ReassignablePartition(partition_index=0)])])
    resp = await call(broker, 45, 0, body)  # "Unable to find a topic named <name>."
    assert (resp.error_code, resp.error_message) == (USE, None)
    parts = resp.responses[0].partitions
    assert [(p.partition_index, p.error_code, p.error_message) for p in parts] == [(0, USE, None)]
    TP = sub(43, "TopicPartitions")
    resp = await call(broker, 43, 1, req(43, election_type=0, timeout_ms=1000,
                                         topic_partitions=[TP(topic=LONG, partitions=[0, 1])]))  # "No such topic as"
    assert resp.error_code == USE
    result = resp.replica_election_results[0]
    assert (result.topic, [(p.partition_id, p.error_code, p.error_message) for p in result.partition_result]) == (
        LONG, [(0, USE, None), (1, USE, None)])


async def test_alter_client_quotas_quoting_a_long_entity_answers_unknown_server_error(broker):
    E = sub(49, "EntryData")
    entry = E(entity=[E.EntityData(entity_type="user", entity_name=LONG)],
              ops=[E.OpData(key="producer_byte_rate", value=1024.0)])  # fmt: skip
    resp = await call(broker, 49, 1, req(49, entries=[entry, entry], validate_only=True))  # "duplicate entity"
    assert [(e.error_code, e.error_message, [(d.entity_type, d.entity_name) for d in e.entity])
            for e in resp.entries] == [(USE, USE_MESSAGE, [("user", LONG)])] * 2  # fmt: skip


async def test_consumer_group_apis_quoting_long_ids_answer_unknown_server_error(broker):
    resp = await call(broker, 69, 0, req(69, group_ids=[LONG]))  # "Group <id> not found."
    assert [(g.group_id, g.error_code, g.error_message) for g in resp.groups] == [(LONG, USE, None)]
    await ready(broker)
    body = req(68, group_id=LONG, member_id=LONG, member_epoch=5, rebalance_timeout_ms=-1)
    resp = await call(broker, 68, 0, body)  # "Member <id> is not a member of group <id>."
    assert (resp.error_code, resp.error_message, resp.member_id) == (USE, None, None)


async def test_describe_user_scram_credentials_quoting_a_long_user_answers_unknown_server_error(broker):
    conn = fake_connection()
    users = [sub(50, "UserName")(name=LONG), sub(50, "UserName")(name="u")]
    resp = await call(broker, 50, 0, req(50, users=users), connection=conn)  # "...does not exist: <user>"
    assert (resp.error_code, resp.error_message) == (USE, None)
    assert [(r.user, r.error_code, r.error_message) for r in resp.results] == [("", USE, None)] * 2
    await still_serves(broker, conn)


async def test_describe_client_quotas_quoting_a_long_entity_type_answers_unknown_server_error(broker):
    conn = fake_connection()
    C = sub(48, "ComponentData")
    body = req(48, components=[C(entity_type=LONG, match_type=0, match="m")], strict=False)
    resp = await call(broker, 48, 1, body, connection=conn)  # "Unsupported entity type <type>"
    assert (resp.error_code, resp.error_message, resp.entries) == (USE, None, None)
    await still_serves(broker, conn)


async def test_an_api_with_no_error_answer_closes_the_connection(broker, monkeypatch):
    monkeypatch.delitem(dispatch_module.ERROR_ANSWERS, 19)
    body = req(19, topics=[creatable(LONG)], timeout_ms=1000, validate_only=False)
    frame = bytearray(encode_request(RequestHeader(19, 4, 11, "long"), body)[4:])
    with trio.fail_after(5), pytest.raises(CloseConnection, match="no error answer for CreateTopics"):
        await dispatch(broker, fake_connection(), frame)


async def test_an_error_answer_that_cannot_be_written_either_closes_the_connection(broker, monkeypatch):
    def too_long(ctx, request, error):
        resp = ctx.response()
        resp.topics = [type(resp).CreatableTopicResult(name=LONG + "!", error_code=error)]
        return resp

    monkeypatch.setitem(dispatch_module.ERROR_ANSWERS, 19, dispatch_module.ErrorAnswer(too_long, True))
    body = req(19, topics=[creatable(LONG)], timeout_ms=1000, validate_only=False)
    frame = bytearray(encode_request(RequestHeader(19, 5, 11, "long"), body)[4:])
    with trio.fail_after(5), pytest.raises(CloseConnection, match="too long to be serialized"):
        await dispatch(broker, fake_connection(), frame)
