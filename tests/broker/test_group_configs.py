"""Group configs (GROUP resources, ``broker/group_configs.py``), driven in-process through ``dispatch``.

DescribeConfigs on any group (its five keys, their defaults from the broker's
``group.consumer.*``/``group.share.*`` keys, sources 5 and 8, the one
synonym), IncrementalAlterConfigs and AlterConfigs with Kafka's checks and
messages (unknown keys, types, the broker's bounds, session against
heartbeat, the order of the checks), ListConfigResources, and that the
configs outlive DeleteGroups and a restart in ``__group_configs.json``.
"""

from __future__ import annotations

import json
import stat

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.core import Broker
from protocol import ErrorCode
from storage import StorageError

from ._admin_client import DEFAULT, NODE, call, create_ok, describe, req, sub
from ._group_client import clock, commit, group_props, groups_broker  # noqa: F401  (fixtures)

GROUP, GROUP_CONFIG = 32, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
SHARE_SESSION, SHARE_HEARTBEAT = "share.session.timeout.ms", "share.heartbeat.interval.ms"
LOCK = "share.record.lock.duration.ms"
KAFKA_DEFAULTS = {HEARTBEAT: "5000", SESSION: "45000", SHARE_HEARTBEAT: "5000", LOCK: "30000", SHARE_SESSION: "45000"}


def _open(tmp_path, **props: str) -> Broker:
    base = {"node.id": str(NODE), "log.dirs": str(tmp_path / "data"), "prometheus.port": "0"}
    return Broker.open(BrokerConfig.from_props({**base, **props}))


@pytest.fixture
def broker(tmp_path):
    b = _open(tmp_path)
    yield b
    b.close()


async def incremental(broker, name: str, ops: list, validate_only=False):
    Res = sub(44, "AlterConfigsResource")
    entries = [Res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops]
    res = Res(resource_type=GROUP, resource_name=name, configs=entries)
    return (await call(broker, 44, 1, req(44, resources=[res], validate_only=validate_only))).responses[0]


async def alter(broker, name: str, pairs: list, version: int = 2, validate_only=False):
    Res = sub(33, "AlterConfigsResource")
    res = Res(resource_type=GROUP, resource_name=name, configs=[Res.AlterableConfig(name=k, value=v) for k, v in pairs])
    return (await call(broker, 33, version, req(33, resources=[res], validate_only=validate_only))).responses[0]


async def described(broker, group: str) -> dict:
    """``{key: (value, source)}`` of a group's DescribeConfigs entries."""
    result = await describe(broker, group, rtype=GROUP)
    assert result.error_code == ErrorCode.NONE
    return {c.name: (c.value, c.config_source) for c in result.configs}


def outcome(result) -> tuple:
    return result.error_code, result.error_message


# -- DescribeConfigs -------------------------------------------------------------------


@pytest.mark.parametrize("version", range(0, 5))
async def test_any_group_is_described_with_kafkas_defaults(broker, version):
    result = await describe(broker, "never-joined", version, rtype=GROUP)
    assert (result.error_code, result.resource_type, result.resource_name) == (0, GROUP, "never-joined")
    assert [c.name for c in result.configs] == sorted(KAFKA_DEFAULTS)
    assert {c.name: c.value for c in result.configs} == KAFKA_DEFAULTS
    assert all(not c.read_only and not c.is_sensitive for c in result.configs)
    if version == 0:  # is_default: true exactly for DEFAULT_CONFIG
        assert all(c.is_default for c in result.configs)
        return
    for c in result.configs:
        assert c.config_source == DEFAULT
        assert [(s.name, s.value, s.source) for s in c.synonyms] == [(c.name, c.value, DEFAULT)]  # itself only
        if version >= 3:
            assert (c.config_type, c.documentation) == (3, None)  # INT; documentation not asked for


async def test_describe_filters_keys_and_documents_when_asked(broker):
    result = await describe(broker, "g", keys=[SESSION, "no.such.key"], synonyms=False, docs=True, rtype=GROUP)
    assert [c.name for c in result.configs] == [SESSION]
    assert result.configs[0].synonyms == [] and "KIP-848" in result.configs[0].documentation


async def test_an_empty_group_name_is_refused(broker):
    result = await describe(broker, "", rtype=GROUP)
    assert outcome(result) == (ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    assert result.configs == []


async def test_defaults_come_from_the_broker_keys_kafka_takes_them_from(tmp_path):
    """Kafka's extractGroupConfigMap: the consumer keys and the lock duration; the share session and heartbeat
    keep their built-in defaults whatever group.share.session.timeout.ms says."""
    b = _open(tmp_path, **{"group.consumer.session.timeout.ms": "50000", "group.consumer.heartbeat.interval.ms": "6000",
                           "group.share.record.lock.duration.ms": "20000", "group.share.session.timeout.ms": "50000",
                           "group.share.heartbeat.interval.ms": "7000"})  # fmt: skip
    try:
        assert await described(b, "g") == {
            SESSION: ("50000", DEFAULT), HEARTBEAT: ("6000", DEFAULT), LOCK: ("20000", DEFAULT),
            SHARE_SESSION: ("45000", DEFAULT), SHARE_HEARTBEAT: ("5000", DEFAULT)}  # fmt: skip
        node = {c.name: c for c in (await describe(b, str(NODE), rtype=4)).configs}
        session = node["group.consumer.session.timeout.ms"]
        assert (session.value, session.config_source, session.read_only, session.config_type) == ("50000", 4, True, 3)
        assert (node["group.consumer.max.session.timeout.ms"].value, node["group.consumer.max.session.timeout.ms"]
                .config_source) == ("60000", DEFAULT)  # fmt: skip
    finally:
        b.close()


# -- IncrementalAlterConfigs / AlterConfigs -----------------------------------------


async def test_set_delete_and_validate_only(broker):
    assert outcome(await incremental(broker, "g", [(SESSION, SET, " 50000"), (LOCK, SET, "+20000")])) == (0, None)
    result = await describe(broker, "g", rtype=GROUP)
    session = {c.name: c for c in result.configs}[SESSION]
    assert (session.value, session.config_source) == ("50000", GROUP_CONFIG)  # described as Kafka parses it
    assert [(s.name, s.value, s.source) for s in session.synonyms] == [(SESSION, "50000", GROUP_CONFIG)]
    assert (await described(broker, "g"))[LOCK] == ("20000", GROUP_CONFIG)
    assert (await described(broker, "other"))[SESSION] == ("45000", DEFAULT)  # per group
    dry = await incremental(broker, "g", [(SESSION, DELETE, None), (HEARTBEAT, SET, "6000")], validate_only=True)
    assert outcome(dry) == (0, None) and (await described(broker, "g"))[HEARTBEAT] == ("5000", DEFAULT)
    assert outcome(await incremental(broker, "g", [(SESSION, DELETE, None), (HEARTBEAT, DELETE, None)])) == (0, None)
    assert (await described(broker, "g"))[SESSION] == ("45000", DEFAULT)
    assert broker.group_configs.groups == {"g": {LOCK: "+20000"}}  # kept as given, as Kafka stores it


async def test_legacy_alter_configs_replaces_the_whole_set(broker):
    assert outcome(await alter(broker, "g", [(SESSION, "50000"), (HEARTBEAT, "6000")])) == (0, None)
    assert outcome(await alter(broker, "g", [(LOCK, "20000")], version=0)) == (0, None)
    assert broker.group_configs.current("g") == {LOCK: "20000"}
    assert outcome(await alter(broker, "g", [(SESSION, "50000")], validate_only=True)) == (0, None)
    assert broker.group_configs.current("g") == {LOCK: "20000"}
    assert outcome(await alter(broker, "g", [(SESSION, None)])) == (
        ErrorCode.INVALID_REQUEST, f"Null value not supported for : {SESSION}")
    assert outcome(await alter(broker, "g", [(SESSION, "50000"), (SESSION, "55000")])) == (
        ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    assert outcome(await alter(broker, "", [(SESSION, "50000")])) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert outcome(await alter(broker, "g", [(SESSION, "70000")])) == (
        ErrorCode.INVALID_CONFIG, f"{SESSION} must be less than or equal to group.consumer.max.session.timeout.ms")
    assert outcome(await alter(broker, "g", [])) == (0, None)
    assert broker.group_configs.names() == []


_MIN, _MAX = "must be greater than or equal to", "must be less than or equal to"
REFUSALS = [  # broker keys, operations, Kafka's answer
    ({}, [("consumer.rebalance.timeout.ms", SET, "1")],
     (ErrorCode.INVALID_CONFIG, "Unknown group config name: consumer.rebalance.timeout.ms")),
    ({}, [(SESSION, SET, "soon")],
     (ErrorCode.INVALID_CONFIG, f"Invalid value soon for configuration {SESSION}: Not a number of type INT")),
    ({}, [(SHARE_SESSION, SET, "2147483648")],
     (ErrorCode.INVALID_CONFIG, f"Invalid value 2147483648 for configuration {SHARE_SESSION}: Not a number of type "
                                "INT")),
    ({}, [(HEARTBEAT, SET, "0")],
     (ErrorCode.INVALID_CONFIG, f"Invalid value 0 for configuration {HEARTBEAT}: Value must be at least 1")),
    ({}, [(LOCK, SET, "999")],
     (ErrorCode.INVALID_CONFIG, f"Invalid value 999 for configuration {LOCK}: Value must be at least 1000")),
    ({}, [(SESSION, SET, "0"), (HEARTBEAT, SET, "x")],  # parsed in Kafka's definition order: the session first
     (ErrorCode.INVALID_CONFIG, f"Invalid value 0 for configuration {SESSION}: Value must be at least 1")),
    ({}, [(HEARTBEAT, SET, "4999")],
     (ErrorCode.INVALID_CONFIG, f"{HEARTBEAT} {_MIN} group.consumer.min.heartbeat.interval.ms")),
    ({}, [(SESSION, SET, "60001"), (HEARTBEAT, SET, "15001")],  # the heartbeat's bounds are checked first
     (ErrorCode.INVALID_CONFIG, f"{HEARTBEAT} {_MAX} group.consumer.max.heartbeat.interval.ms")),
    ({}, [(SESSION, SET, "44999")],
     (ErrorCode.INVALID_CONFIG, f"{SESSION} {_MIN} group.consumer.min.session.timeout.ms")),
    ({}, [(SESSION, SET, "60001")],
     (ErrorCode.INVALID_CONFIG, f"{SESSION} {_MAX} group.consumer.max.session.timeout.ms")),
    ({}, [(SHARE_HEARTBEAT, SET, "4999")],
     (ErrorCode.INVALID_CONFIG, f"{SHARE_HEARTBEAT} {_MIN} group.share.min.heartbeat.interval.ms")),
    ({}, [(SHARE_HEARTBEAT, SET, "15001")],
     (ErrorCode.INVALID_CONFIG, f"{SHARE_HEARTBEAT} {_MAX} group.share.max.heartbeat.interval.ms")),
    ({}, [(SHARE_SESSION, SET, "44999")],
     (ErrorCode.INVALID_CONFIG, f"{SHARE_SESSION} {_MIN} group.share.min.session.timeout.ms")),
    ({}, [(SHARE_SESSION, SET, "60001")],
     (ErrorCode.INVALID_CONFIG, f"{SHARE_SESSION} {_MAX} group.share.max.session.timeout.ms")),
    ({}, [(LOCK, SET, "14999")], (ErrorCode.INVALID_CONFIG, f"{LOCK} {_MIN} group.share.min.record.lock.duration.ms")),
    ({}, [(LOCK, SET, "60001")], (ErrorCode.INVALID_CONFIG, f"{LOCK} {_MAX} group.share.max.record.lock.duration.ms")),
    ({"group.consumer.max.heartbeat.interval.ms": "60000"}, [(HEARTBEAT, SET, "45000")],
     (ErrorCode.INVALID_CONFIG, f"{SESSION} must be greater than {HEARTBEAT}")),
    ({"group.share.max.heartbeat.interval.ms": "60000"}, [(SHARE_HEARTBEAT, SET, "50000")],
     (ErrorCode.INVALID_CONFIG, f"{SHARE_SESSION} must be greater than {SHARE_HEARTBEAT}")),
    ({}, [(SESSION, APPEND, "1")],
     (ErrorCode.INVALID_CONFIG, f"Can't APPEND to key {SESSION} because its type is not LIST.")),
    ({}, [("anything", SUBTRACT, "1")],
     (ErrorCode.INVALID_CONFIG, "Can't SUBTRACT to key anything because its type is not LIST.")),
    ({}, [(SESSION, SET, None)], (ErrorCode.INVALID_REQUEST, f"Null value not supported for : {SESSION}")),
    ({}, [(SESSION, SET, "50000"), (SESSION, DELETE, None)],
     (ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")),
    ({}, [(SESSION, 7, "50000")], (ErrorCode.INVALID_REQUEST, "Unknown alter configs operation type 7")),
]  # fmt: skip


@pytest.mark.parametrize(("props", "ops", "expected"), REFUSALS)
async def test_kafkas_refusals_and_nothing_is_stored(tmp_path, props, ops, expected):
    b = _open(tmp_path, **props)
    try:
        assert outcome(await incremental(b, "g", ops)) == expected
        assert outcome(await incremental(b, "g", ops, validate_only=True)) == expected
        assert b.group_configs.groups == {} and not (tmp_path / "data" / "__group_configs.json").exists()
    finally:
        b.close()


async def test_the_group_name_is_checked_after_the_operations(broker):
    assert outcome(await incremental(broker, "", [(SESSION, SET, "50000")])) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    assert outcome(await incremental(broker, "", [(SESSION, APPEND, "1")]))[0] == ErrorCode.INVALID_CONFIG


async def test_keys_left_out_count_as_kafka_counts_them(tmp_path):
    """The consumer keys as the broker's defaults (47000 > 45000 would fail against the built-in session timeout
    of 45000), the share keys as the built-in ones (so a broker minimum above them refuses every change)."""
    b = _open(tmp_path, **{"group.consumer.session.timeout.ms": "50000", "group.consumer.max.heartbeat.interval.ms":
                           "60000", "group.share.min.session.timeout.ms": "50000",
                           "group.share.session.timeout.ms": "50000"})  # fmt: skip
    try:
        refused = await incremental(b, "g", [(HEARTBEAT, SET, "47000")])
        assert outcome(refused) == (ErrorCode.INVALID_CONFIG,
                                    f"{SHARE_SESSION} {_MIN} group.share.min.session.timeout.ms")  # fmt: skip
        both = await incremental(b, "g", [(HEARTBEAT, SET, "47000"), (SHARE_SESSION, SET, "50000")])
        assert outcome(both) == (0, None)
    finally:
        b.close()


async def test_list_config_resources_lists_the_groups_with_configs(broker):
    for group in ("b-group", "a-group"):
        assert outcome(await incremental(broker, group, [(SESSION, SET, "50000")])) == (0, None)
    listed = await call(broker, 74, 1, req(74, resource_types=[GROUP]))
    assert [(r.resource_name, r.resource_type) for r in listed.config_resources] == [("a-group", 32), ("b-group", 32)]
    await incremental(broker, "b-group", [(SESSION, DELETE, None)])
    everything = await call(broker, 74, 1, req(74, resource_types=[]))
    assert [r.resource_name for r in everything.config_resources if r.resource_type == GROUP] == ["a-group"]


async def test_deleting_a_group_leaves_its_configs_as_in_kafka(groups_broker):
    await create_ok(groups_broker, "orders")
    await commit(groups_broker, "simple", {("orders", 0): 1})
    assert outcome(await incremental(groups_broker, "simple", [(SESSION, SET, "50000")])) == (0, None)
    deleted = await call(groups_broker, 42, 2, req(42, groups_names=["simple"]))
    assert deleted.results[0].error_code == ErrorCode.NONE
    assert (await described(groups_broker, "simple"))[SESSION] == ("50000", GROUP_CONFIG)


# -- the file -----------------------------------------------------------------------


async def test_configs_survive_a_restart_in_an_owner_only_file(tmp_path):
    b = _open(tmp_path)
    try:
        assert outcome(await incremental(b, "g", [(SESSION, SET, "50000")])) == (0, None)
    finally:
        b.close()
    path = tmp_path / "data" / "__group_configs.json"
    assert json.loads(path.read_text()) == {"g": {SESSION: "50000"}}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    b = _open(tmp_path, **{"group.consumer.max.session.timeout.ms": "48000"})  # bounds changed since: kept as set
    try:
        assert (await described(b, "g"))[SESSION] == ("50000", GROUP_CONFIG)
    finally:
        b.close()


@pytest.mark.parametrize("text", ["{not json", '["g"]', '{"g": ["x"]}', '{"g": {"consumer.rebalance.ms": "1"}}',
                                  '{"g": {"consumer.session.timeout.ms": 50000}}',
                                  '{"g": {"consumer.session.timeout.ms": "soon"}}'])  # fmt: skip
def test_a_damaged_file_stops_the_start(tmp_path, text):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "__group_configs.json").write_text(text)
    with pytest.raises(StorageError, match="__group_configs.json is damaged"):
        _open(tmp_path)


async def test_a_change_the_file_cannot_take_is_not_made(broker):
    (broker.group_configs.path.parent / "__group_configs.json.tmp").mkdir()  # the atomic write's temporary file
    result = await incremental(broker, "g", [(SESSION, SET, "50000")])
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR and "could not store" in result.error_message
    assert (await described(broker, "g"))[SESSION] == ("45000", DEFAULT)


# -- the broker keys ----------------------------------------------------------------


@pytest.mark.parametrize(("props", "message"), [
    ({"group.consumer.heartbeat.interval.ms": "16000"},
     "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
    ({"group.consumer.max.session.timeout.ms": "40000"},
     "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ({"group.share.heartbeat.interval.ms": "45000", "group.share.max.heartbeat.interval.ms": "50000"},
     "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
    ({"group.share.record.lock.duration.ms": "70000"},
     "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms"),
])  # fmt: skip
def test_kafkas_startup_checks_of_the_broker_keys(tmp_path, props, message):
    config = BrokerConfig.from_props({"log.dirs": str(tmp_path), **props})
    with pytest.raises(ConfigError, match=f"^{message}$"):
        config.validate()


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("group.consumer.session.timeout.ms", "0", "Value must be at least 1"),
    ("group.share.min.record.lock.duration.ms", "30001", "Value must be no more than 30000"),
    ("group.share.max.record.lock.duration.ms", "29999", "Value must be at least 30000"),
])  # fmt: skip
def test_broker_keys_out_of_their_range_stop_the_start(key, value, reason):
    with pytest.raises(ConfigError, match=f"^Invalid value {value} for configuration {key}: {reason}$"):
        BrokerConfig.from_props({key: value})
