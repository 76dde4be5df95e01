"""Client scenarios that drive real Kafka clients through the recording proxy.

How it works: ``capture_frames.py`` runs this file once per scenario as a
subprocess (``python tools/capture_scenarios.py NAME BOOTSTRAP TOPIC``), so a
client that hangs or crashes only costs that scenario.  The topic has already
been created (with recording switched off) by the ``setup`` scenario.

Every scenario walks the same story as far as its client and settings allow:
admin calls (create topic, describe/alter configs, create partitions, describe
cluster), produce with each allowed codec, consume through a consumer group
(join/sync/heartbeat/commit/fetch offsets/leave), list offsets, group admin
calls, delete records and delete topic.  Each step is wrapped by ``step`` so a
refused or unsupported call is printed and the story goes on.
"""

from __future__ import annotations

import subprocess
import sys
import time
import traceback
from collections.abc import Callable

import attrs

MODERN_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
LEGACY_CODECS = ("none", "gzip", "snappy", "lz4")
MESSAGES_PER_CODEC = 3
LEGACY_FALLBACKS = ("0.8.2", "0.9.0")  # librdkafka negotiates anyway for 0.10.0 and later


@attrs.frozen
class Scenario:
    """A named client run: which client, which settings, and the function."""

    name: str
    client: str
    settings: str
    run: Callable[[str, str], None]
    timeout: float = 90.0


def step(label: str, function: Callable, *args, **kwargs):  # type: ignore[no-untyped-def]
    """Call ``function``; print and swallow any failure so the story goes on."""
    try:
        result = function(*args, **kwargs)
        print(f"ok   {label}", flush=True)
        return result
    except Exception as error:  # noqa: BLE001 - a tool: report and continue
        print(f"FAIL {label}: {type(error).__name__}: {error}", flush=True)
        return None


# --------------------------------------------------------------- kafka-python


def _kp_admin(bootstrap: str, topic: str, api_version) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic

    admin = step("admin", KafkaAdminClient, bootstrap_servers=bootstrap,
                 api_version=api_version, request_timeout_ms=8000)
    if admin is None:
        return
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    changed = ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})
    step("create_topics", admin.create_topics, [NewTopic(f"{topic}-x", 1, 1)])
    step("describe_configs", admin.describe_configs, [resource])
    step("alter_configs", admin.alter_configs, [changed], incremental=False)
    step("incremental_alter_configs", admin.alter_configs, [changed], incremental=True)
    step("create_partitions", admin.create_partitions, {f"{topic}-x": NewPartitions(2)})
    step("describe_cluster", admin.describe_cluster)
    admin.close()


def _kp_produce(bootstrap: str, topic: str, api_version, codecs) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaProducer

    for codec in codecs:
        producer = step(f"producer {codec}", KafkaProducer, bootstrap_servers=bootstrap,
                        api_version=api_version, linger_ms=20, retries=0,
                        request_timeout_ms=5000, max_block_ms=5000,
                        compression_type=None if codec == "none" else codec)
        if producer is None:
            continue
        for i in range(MESSAGES_PER_CODEC):
            headers = [("h", b"v")] if api_version is None else None
            step(f"send {codec}", producer.send, topic, key=b"k%d" % i,
                 value=b"%s value %d" % (codec.encode(), i), headers=headers)
        step(f"flush {codec}", producer.flush, 6)
        step(f"close {codec}", producer.close, 1)


def _kp_assigned(bootstrap: str, topic: str, api_version) -> None:  # type: ignore[no-untyped-def]
    """Fetch from offset 0 without a group, so no ListOffsets is needed first."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = step("assigned consumer", KafkaConsumer, bootstrap_servers=bootstrap,
                    api_version=api_version, enable_auto_commit=False, group_id=None)
    if consumer is None:
        return
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    records = step("assigned poll", consumer.poll, timeout_ms=4000) or {}
    print(f"assigned consumed {sum(len(b) for b in records.values())}", flush=True)
    step("assigned close", consumer.close)


def _kp_consume(bootstrap: str, topic: str, api_version, expected: int) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaConsumer, TopicPartition

    consumer = step("consumer", KafkaConsumer, bootstrap_servers=bootstrap,
                    api_version=api_version, group_id=f"{topic}-group",
                    auto_offset_reset="earliest", enable_auto_commit=False,
                    request_timeout_ms=31000, session_timeout_ms=10000,
                    heartbeat_interval_ms=500)
    if consumer is None:
        return
    partition = TopicPartition(topic, 0)
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 15
    while got < expected and time.monotonic() < deadline:
        records = step("poll", consumer.poll, timeout_ms=1000) or {}
        got += sum(len(batch) for batch in records.values())
    time.sleep(1.5)  # let at least one heartbeat go out
    step("commit", consumer.commit)
    step("committed", consumer.committed, partition)
    step("beginning_offsets", consumer.beginning_offsets, [partition])
    step("end_offsets", consumer.end_offsets, [partition])
    step("offsets_for_times", consumer.offsets_for_times, {partition: 0})
    step("close", consumer.close)
    print(f"consumed {got}", flush=True)


def _kp_group_admin(bootstrap: str, topic: str, api_version) -> None:  # type: ignore[no-untyped-def]
    from kafka import KafkaAdminClient, TopicPartition

    admin = step("admin", KafkaAdminClient, bootstrap_servers=bootstrap,
                 api_version=api_version, request_timeout_ms=8000)
    if admin is None:
        return
    group = f"{topic}-group"
    step("list_groups", admin.list_groups)
    step("describe_groups", admin.describe_groups, [group])
    step("list_group_offsets", admin.list_group_offsets, {group: None})
    step("delete_records", admin.delete_records, {TopicPartition(topic, 0): 1})
    step("delete_groups", admin.delete_groups, [group])
    step("delete_topics", admin.delete_topics, [f"{topic}-x"])
    admin.close()


def kafka_python(api_version) -> Callable[[str, str], None]:  # type: ignore[no-untyped-def]
    """The kafka-python story, pinned to ``api_version`` (None = negotiate)."""

    def run(bootstrap: str, topic: str) -> None:
        codecs = MODERN_CODECS if api_version is None else LEGACY_CODECS
        _kp_admin(bootstrap, topic, api_version)
        _kp_produce(bootstrap, topic, api_version, codecs)
        _kp_assigned(bootstrap, topic, api_version)
        _kp_consume(bootstrap, topic, api_version, MESSAGES_PER_CODEC * len(codecs))
        _kp_group_admin(bootstrap, topic, api_version)

    return run


def setup(bootstrap: str, topic: str) -> None:
    """Create ``topic`` (one partition) before a scenario; not recorded."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    from kafka import KafkaProducer

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=8000)
    step("setup create_topics", admin.create_topics, [NewTopic(topic, 1, 1)])
    admin.close()
    for codec in (None, "gzip"):
        producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec)
        for i in range(2):
            producer.send(topic, key=b"setup%d" % i, value=b"setup %s %d" % (str(codec).encode(), i))
        step("setup flush", producer.flush, 10)
        producer.close(2)


# ------------------------------------------------------------ confluent-kafka


def _wait_all(futures) -> None:  # type: ignore[no-untyped-def]
    values = futures.values() if isinstance(futures, dict) else [futures]
    for future in values:
        future.result(timeout=10)


def _ck_admin(conf: dict, topic: str) -> None:
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                       ConfigResource, NewPartitions, NewTopic)

    admin = AdminClient(conf)
    resource = ConfigResource("topic", topic)
    change = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    step("create_topics", lambda: _wait_all(admin.create_topics([NewTopic(f"{topic}-x", 1, 1)])))
    step("describe_configs", lambda: _wait_all(admin.describe_configs([resource])))
    step("incremental_alter_configs", lambda: _wait_all(admin.incremental_alter_configs([change])))
    step("create_partitions", lambda: _wait_all(admin.create_partitions([NewPartitions(f"{topic}-x", 2)])))
    step("describe_cluster", lambda: _wait_all(admin.describe_cluster(request_timeout=10)))


def _ck_produce(conf: dict, topic: str, codecs, idempotent: bool) -> None:  # type: ignore[no-untyped-def]
    from confluent_kafka import Producer

    variants = [(codec, {}) for codec in codecs]
    if idempotent:
        variants.append(("idempotent", {"enable.idempotence": True}))
    for codec, extra in variants:
        settings = {**conf, "linger.ms": 20, "message.timeout.ms": 6000, **extra}
        if not extra:
            settings["compression.type"] = codec
        producer = step(f"producer {codec}", Producer, settings)
        if producer is None:
            continue
        for i in range(MESSAGES_PER_CODEC):
            step(f"produce {codec}", producer.produce, topic, key=b"k%d" % i,
                 value=b"%s value %d" % (codec.encode(), i), headers=[("h", b"v")])
        remaining = step(f"flush {codec}", producer.flush, 8)
        print(f"flush {codec}: {remaining} left", flush=True)


def _ck_assigned(conf: dict, topic: str) -> None:
    """Fetch from offset 0 with a manual assignment (no ListOffsets needed)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**conf, "group.id": f"{topic}-assigned", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = 0, time.monotonic() + 4
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got += 1
    print(f"assigned consumed {got}", flush=True)
    step("assigned close", consumer.close)


def _ck_consume(conf: dict, topic: str, expected: int) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**conf, "group.id": f"{topic}-group", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 500})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 15
    while got < expected and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            got += 1
    time.sleep(1.5)
    partition = TopicPartition(topic, 0)
    step("commit", consumer.commit, asynchronous=False)
    step("committed", consumer.committed, [partition], timeout=10)
    step("get_watermark_offsets", consumer.get_watermark_offsets, partition, timeout=10)
    step("offsets_for_times", consumer.offsets_for_times, [TopicPartition(topic, 0, 0)], timeout=10)
    step("close", consumer.close)
    print(f"consumed {got}", flush=True)


def _ck_group_admin(conf: dict, topic: str) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(conf)
    group = f"{topic}-group"
    step("list_consumer_groups", lambda: admin.list_consumer_groups(request_timeout=10).result())
    step("describe_consumer_groups", lambda: _wait_all(admin.describe_consumer_groups([group])))
    step("delete_records", lambda: _wait_all(admin.delete_records([TopicPartition(topic, 0, 1)])))
    step("delete_consumer_groups", lambda: _wait_all(admin.delete_consumer_groups([group])))
    step("delete_topics", lambda: _wait_all(admin.delete_topics([f"{topic}-x"])))


def confluent(extra: dict[str, str]) -> Callable[[str, str], None]:
    """The confluent-kafka story with ``extra`` librdkafka settings."""

    def run(bootstrap: str, topic: str) -> None:
        conf = {"bootstrap.servers": bootstrap, **extra}
        legacy = extra.get("broker.version.fallback") in LEGACY_FALLBACKS
        if not legacy:
            _ck_admin(conf, topic)
        codecs = LEGACY_CODECS if legacy else MODERN_CODECS
        _ck_produce(conf, topic, codecs, idempotent=not legacy)
        _ck_assigned(conf, topic)
        _ck_consume(conf, topic, MESSAGES_PER_CODEC * (len(codecs) + 1))
        if not legacy:
            _ck_group_admin(conf, topic)

    return run


# ----------------------------------------------------------------------- kcat


def _kcat(args: list[str], stdin: bytes = b"") -> None:
    done = subprocess.run(["kcat", *args], input=stdin, capture_output=True, timeout=30)
    print(f"kcat {' '.join(args)} -> {done.returncode} {done.stderr[-300:]!r}", flush=True)


def kcat(extra: list[str]) -> Callable[[str, str], None]:
    """kcat -L, -P with each codec, -C, -Q and a -G group consumer."""

    def run(bootstrap: str, topic: str) -> None:
        base = ["-b", bootstrap, *extra]
        legacy = "api.version.request=false" in extra
        step("metadata", _kcat, [*base, "-L"])
        for codec in LEGACY_CODECS if legacy else MODERN_CODECS:
            lines = b"".join(b"k%d:%s value %d\n" % (i, codec.encode(), i) for i in range(3))
            step(f"produce {codec}", _kcat, [*base, "-P", "-t", topic, "-K:", "-z", codec], lines)
        step("consume", _kcat, [*base, "-C", "-t", topic, "-o", "0", "-e"])
        step("consume", _kcat, [*base, "-C", "-t", topic, "-o", "beginning", "-e"])
        step("query", _kcat, [*base, "-Q", "-t", f"{topic}:0:0"])
        step("group", _kcat, [*base, "-G", f"{topic}-group", "-o", "beginning", "-e", topic])

    return run


# -------------------------------------------------------------------- aiokafka


async def _aiokafka_story(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic(f"{topic}-x", 1, 1)])
    for codec in MODERN_CODECS:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                    compression_type=None if codec == "none" else codec)
        await producer.start()
        for i in range(MESSAGES_PER_CODEC):
            await producer.send(topic, key=b"k%d" % i, value=b"%s value %d" % (codec.encode(), i))
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=f"{topic}-group",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    batch = await consumer.getmany(timeout_ms=5000)
    print(f"consumed {sum(len(v) for v in batch.values())}", flush=True)
    await consumer.commit()
    await consumer.stop()
    await admin.delete_topics([f"{topic}-x"])
    await admin.close()


def aiokafka_run(bootstrap: str, topic: str) -> None:
    """aiokafka: create topic, produce each codec, consume in a group, delete topic."""
    import asyncio

    step("aiokafka story", asyncio.run, _aiokafka_story(bootstrap, topic))


# ------------------------------------------------------------------- registry

KP, CK, KCAT, AIO = "kafka-python 3.0.12", "confluent-kafka 2.16.1", "kcat 1.7.1 (librdkafka 2.0.2)", "aiokafka 0.14.0"
OLD_09 = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]

SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("kafka-python-default", KP, "default", kafka_python(None)),
    Scenario("confluent-default", CK, "default", confluent({})),
    Scenario("kafka-python-0.9", KP, "api_version=(0, 9)", kafka_python((0, 9))),
    Scenario("kafka-python-0.10.0", KP, "api_version=(0, 10, 0)", kafka_python((0, 10, 0))),
    Scenario("kafka-python-0.10.1", KP, "api_version=(0, 10, 1)", kafka_python((0, 10, 1))),
    Scenario("confluent-0.9.0", CK, "api.version.request=false broker.version.fallback=0.9.0",
             confluent({"api.version.request": "false", "broker.version.fallback": "0.9.0"})),
    Scenario("confluent-0.10.0", CK, "api.version.request=false broker.version.fallback=0.10.0",
             confluent({"api.version.request": "false", "broker.version.fallback": "0.10.0"})),
    Scenario("confluent-0.8.2", CK, "api.version.request=false broker.version.fallback=0.8.2",
             confluent({"api.version.request": "false", "broker.version.fallback": "0.8.2"})),
    Scenario("kcat-default", KCAT, "default", kcat([])),
    Scenario("kcat-0.9.0", KCAT, "-X api.version.request=false -X broker.version.fallback=0.9.0",
             kcat(OLD_09)),
    Scenario("aiokafka-default", AIO, "default", aiokafka_run),
]}


def main(argv: list[str]) -> int:
    """``capture_scenarios.py NAME BOOTSTRAP TOPIC``; NAME may be ``setup``."""
    name, bootstrap, topic = argv
    try:
        if name == "setup":
            setup(bootstrap, topic)
        else:
            SCENARIOS[name].run(bootstrap, topic)
    except Exception:  # noqa: BLE001 - a tool: show the failure, exit non-zero
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
