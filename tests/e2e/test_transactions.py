"""Transactions (KIP-98) with confluent-kafka (librdkafka 2.16) against a real broker process.

* commit and abort, with a non-transactional record written while a transaction
  is open: a read_committed consumer reads up to the last stable offset and
  never an aborted record, a read_uncommitted one reads every data record;
  ListOffsets gives the LSO and the high watermark for the two isolation levels;
* ``send_offsets_to_transaction`` from a consumer that joined its group: the
  group's offsets change with the commit only, and are untouched by an abort;
* a second producer with the same ``transactional.id`` fences the first;
* an open transaction is aborted by the broker after ``transaction.timeout.ms``;
* a broker stopped (SIGTERM) or killed (SIGKILL) with a transaction open: after
  the restart the LSO still stops at the open transaction, and a new producer
  with the same ``transactional.id`` aborts it when it initialises.

Every check names exact offsets: each transaction ends with one control record
(the marker), which takes an offset and is never given to the application.
kcat, kafka-python and the Java client are in ``test_transactions_clients.py``.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (OFFSET_INVALID, Consumer, IsolationLevel, KafkaError, KafkaException, Producer,
                             TopicPartition)  # fmt: skip
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from .harness import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
BASE_TS = 1_770_000_000_000
RC, RU = "read_committed", "read_uncommitted"


def create(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)


def rows(tag: str, n: int, start: int = 0) -> list[tuple]:
    """``n`` records ``(key, value, headers, timestamp)`` named after ``tag``."""
    return [(f"k-{tag}-{i}".encode(), f"v-{tag}-{i}".encode(), [("tag", tag.encode()), ("i", str(i).encode())],
             BASE_TS + i) for i in range(start, start + n)]  # fmt: skip


def txn_producer(bootstrap: str, transactional_id: str, **conf) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5, **conf})
    producer.init_transactions(30)
    return producer


def send(producer: Producer, topic: str, records: list[tuple], partition: int = 0) -> list[int]:
    """Produce ``records`` to one partition, wait for every ack; returns their offsets."""
    delivered: list = []
    for key, value, headers, ts in records:
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts, partition=partition,
                         on_delivery=lambda err, msg: delivered.append((err, msg.offset())))  # fmt: skip
    assert producer.flush(30) == 0
    assert [err for err, _ in delivered if err is not None] == []
    return [offset for _, offset in delivered]


def latest(bootstrap: str, topic: str, partitions: int = 1) -> dict[int, tuple[int, int]]:
    """ListOffsets ``latest`` per partition: ``(read_committed (the LSO), read_uncommitted (the HW))``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        asked = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
        for tp, future in admin.list_offsets(asked, isolation_level=level, request_timeout=15).items():
            found[tp.partition].append(future.result(20).offset)
    return {p: tuple(v) for p, v in found.items()}  # type: ignore[misc]


def wait_stable(bootstrap: str, topic: str, ends: dict[int, int], timeout: float = 20.0) -> None:
    """Wait until every partition's LSO and high watermark are ``ends[p]`` (markers written)."""
    want = {p: (end, end) for p, end in ends.items()}
    try:
        wait_until(lambda: latest(bootstrap, topic, len(ends)) == want, timeout=timeout, interval=0.2)
    except AssertionError:
        raise AssertionError(f"latest offsets {latest(bootstrap, topic, len(ends))}, expected {want}") from None


def read(bootstrap: str, topic: str, isolation: str, partitions: int = 1, timeout: float = 30.0) -> list[tuple]:
    """Every record a consumer of ``isolation`` is given, from offset 0 to the partitions' ends:
    ``(partition, offset, key, value, headers, timestamp)``. The end is the first partition EOF,
    which a read_committed consumer reports at the LSO."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-e2e-assign-only",
                         "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.wait.max.ms": 100})  # fmt: skip
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        pending, got = set(range(partitions)), []
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                pending.discard(msg.partition())
                continue
            got.append((msg.partition(), msg.offset(), msg.key(), msg.value(), msg.headers(), msg.timestamp()[1]))
        assert not pending, f"no end of partitions {pending} within {timeout} s; read {got}"
        return sorted(got)
    finally:
        consumer.close()


def placed(partition: int, offsets, records: list[tuple]) -> list[tuple]:
    """The rows ``read`` gives for ``records`` stored at ``offsets`` of ``partition``."""
    return [(partition, o, k, v, h, ts) for o, (k, v, h, ts) in zip(offsets, records, strict=True)]


def fenced_error(exc: KafkaException) -> tuple:
    error = exc.args[0]
    return error.code(), error.fatal()


def test_commit_and_abort_by_isolation_level(broker):
    """Two partitions. p0: txn1 0-2, C 3; txn2 4-5, a plain record 6, A 7; txn3 8-9, C 10.
    p1: txn1 0-1, C 2; txn2 3, A 4 (txn3 does not touch p1: no marker)."""
    bootstrap, topic = broker.bootstrap, "txn-basic"
    create(bootstrap, topic, partitions=2)
    producer = txn_producer(bootstrap, "ck-basic")
    t1 = {0: rows("t1p0", 3), 1: rows("t1p1", 2)}
    producer.begin_transaction()
    assert send(producer, topic, t1[0], 0) == [0, 1, 2]
    assert send(producer, topic, t1[1], 1) == [0, 1]
    producer.commit_transaction(30)
    wait_stable(bootstrap, topic, {0: 4, 1: 3})

    t2 = {0: rows("t2p0", 2), 1: rows("t2p1", 1)}
    producer.begin_transaction()
    assert send(producer, topic, t2[0], 0) == [4, 5]
    assert send(producer, topic, t2[1], 1) == [3]
    plain = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    assert send(plain, topic, rows("plain", 1)) == [6]
    assert latest(bootstrap, topic, 2) == {0: (4, 7), 1: (3, 4)}  # the LSO stops at txn2's first offsets
    committed_t1 = placed(0, [0, 1, 2], t1[0]) + placed(1, [0, 1], t1[1])
    assert read(bootstrap, topic, RC, 2) == committed_t1  # nothing at or past the LSO, not even the plain record
    assert read(bootstrap, topic, RU, 2) == sorted(committed_t1 + placed(0, [4, 5, 6], t2[0] + rows("plain", 1))
                                                   + placed(1, [3], t2[1]))  # fmt: skip
    producer.abort_transaction(30)
    wait_stable(bootstrap, topic, {0: 8, 1: 5})

    t3 = rows("t3p0", 2) + [(None, b"keyless", None, BASE_TS + 99)]  # no headers: librdkafka gives None
    producer.begin_transaction()
    assert send(producer, topic, t3, 0) == [8, 9, 10]
    producer.commit_transaction(30)
    wait_stable(bootstrap, topic, {0: 12, 1: 5})
    assert read(bootstrap, topic, RC, 2) == sorted(committed_t1 + placed(0, [6], rows("plain", 1))
                                                   + placed(0, [8, 9, 10], t3))  # fmt: skip
    assert read(bootstrap, topic, RU, 2) == sorted(committed_t1 + placed(0, [4, 5, 6], t2[0] + rows("plain", 1))
                                                   + placed(1, [3], t2[1]) + placed(0, [8, 9, 10], t3))  # fmt: skip


def _group_member(bootstrap: str, group: str, topic: str) -> tuple[Consumer, list]:
    """A read_committed consumer that joined ``group`` through ``subscribe`` and read the 10 records of ``topic``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": RC, "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 500, "fetch.wait.max.ms": 100})  # fmt: skip
    consumer.subscribe([topic])
    got: list = []
    deadline = time.monotonic() + 30
    while len(got) < 10 and time.monotonic() < deadline:
        got += [m for m in consumer.consume(10, timeout=0.2) if m.error() is None]
    assert [m.offset() for m in got] == list(range(10))
    return consumer, got


def test_send_offsets_to_transaction(broker):
    """Consume-transform-produce: the group's offset of ``src`` moves with the transaction's commit only.
    ``dst``: txn1 0-4, C 5; txn2 6-10, A 11; txn3 12-16, C 17."""
    bootstrap, group = broker.bootstrap, "txn-group"
    create(bootstrap, "src")
    create(bootstrap, "dst")
    assert send(Producer({"bootstrap.servers": bootstrap}), "src", rows("src", 10)) == list(range(10))
    member, consumed = _group_member(bootstrap, group, "src")
    # reads the group's offsets without require_stable (read_uncommitted), and never joins the group
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": RU})
    src0 = [TopicPartition("src", 0)]
    producer = txn_producer(bootstrap, "ck-ctp")

    def transform(first: int, last: int, offset: int) -> list[tuple]:
        out = [(m.key(), b"out-" + m.value(), m.headers(), m.timestamp()[1]) for m in consumed[first:last]]
        producer.begin_transaction()
        send(producer, "dst", out)
        producer.send_offsets_to_transaction([TopicPartition("src", 0, offset)], member.consumer_group_metadata(), 30)
        return out

    first = transform(0, 5, 5)
    assert probe.committed(src0, timeout=15)[0].offset == OFFSET_INVALID  # pending until the commit: none yet
    with pytest.raises(KafkaException) as unstable:  # require_stable (read_committed): UNSTABLE_OFFSET_COMMIT, retried
        member.committed(src0, timeout=3)
    assert unstable.value.args[0].code() == KafkaError._TIMED_OUT
    producer.commit_transaction(30)
    assert member.committed(src0, timeout=15)[0].offset == 5  # waits for the marker if needed
    assert probe.committed(src0, timeout=15)[0].offset == 5

    dropped = transform(5, 10, 10)
    producer.abort_transaction(30)
    assert member.committed(src0, timeout=15)[0].offset == 5  # stable again once the marker is written
    assert probe.committed(src0, timeout=15)[0].offset == 5

    again = transform(5, 10, 10)
    producer.commit_transaction(30)
    assert member.committed(src0, timeout=15)[0].offset == 10
    assert probe.committed(src0, timeout=15)[0].offset == 10
    wait_stable(bootstrap, "dst", {0: 18})
    assert read(bootstrap, "dst", RC) == placed(0, range(5), first) + placed(0, range(12, 17), again)
    assert read(bootstrap, "dst", RU) == (placed(0, range(5), first) + placed(0, range(6, 11), dropped)
                                          + placed(0, range(12, 17), again))  # fmt: skip
    member.close()
    probe.close()


@pytest.mark.parametrize("next_step", ["commit", "produce"])
def test_second_producer_fences_the_first(broker, next_step):
    """The first producer's open transaction (0-1) is aborted (A 2) by the second's init_transactions.
    The first's next step fails with the fatal _FENCED: its EndTxn (commit), or first its Produce with
    the old epoch (INVALID_PRODUCER_EPOCH; nothing stored). The second commits 3 (C 4)."""
    bootstrap, topic = broker.bootstrap, "txn-fence"
    create(bootstrap, topic)
    first = txn_producer(bootstrap, "ck-fence")
    first.begin_transaction()
    assert send(first, topic, rows("first", 2)) == [0, 1]
    second = txn_producer(bootstrap, "ck-fence")
    wait_stable(bootstrap, topic, {0: 3})
    if next_step == "produce":
        first.produce(topic, b"late", partition=0)
        with pytest.raises(KafkaException) as refused:  # confluent-kafka raises the fatal error from flush
            first.flush(30)
        assert fenced_error(refused.value) == (KafkaError._FENCED, True)
        assert "Producer attempted an operation with an old epoch" in refused.value.args[0].str()  # Produce's error
        assert latest(bootstrap, topic) == {0: (3, 3)}
    with pytest.raises(KafkaException) as fenced:
        first.commit_transaction(30)
    assert fenced_error(fenced.value) == (KafkaError._FENCED, True)
    second.begin_transaction()
    assert send(second, topic, rows("second", 1)) == [3]
    second.commit_transaction(30)
    wait_stable(bootstrap, topic, {0: 5})
    assert read(bootstrap, topic, RC) == placed(0, [3], rows("second", 1))
    assert read(bootstrap, topic, RU) == placed(0, [0, 1, 3], rows("first", 2) + rows("second", 1))


def test_open_transaction_is_aborted_after_its_timeout(broker_factory):
    """transaction.timeout.ms=2000 and a cleanup pass every 500 ms: records 0-1 are aborted (A 2) between 2
    and ~4 s after the transaction began; the producer's commit then fails as fenced (its epoch was bumped),
    and a new producer with the same transactional.id carries on (3, C 4)."""
    broker = broker_factory(transaction_abort_timed_out_transaction_cleanup_interval_ms="500")
    bootstrap, topic = broker.bootstrap, "txn-timeout"
    create(bootstrap, topic)
    producer = txn_producer(bootstrap, "ck-timeout", **{"transaction.timeout.ms": 2000})
    began = time.monotonic()
    producer.begin_transaction()
    assert send(producer, topic, rows("open", 2)) == [0, 1]
    assert latest(bootstrap, topic) == {0: (0, 2)}
    wait_until(lambda: latest(bootstrap, topic) == {0: (3, 3)}, timeout=15, interval=0.1)
    assert 2.0 <= time.monotonic() - began < 8.0
    assert read(bootstrap, topic, RC) == []
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(30)
    assert fenced_error(fenced.value) == (KafkaError._FENCED, True)
    again = txn_producer(bootstrap, "ck-timeout")
    again.begin_transaction()
    assert send(again, topic, rows("after", 1)) == [3]
    again.commit_transaction(30)
    wait_stable(bootstrap, topic, {0: 5})
    assert read(bootstrap, topic, RC) == placed(0, [3], rows("after", 1))
    assert read(bootstrap, topic, RU) == placed(0, [0, 1, 3], rows("open", 2) + rows("after", 1))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_restart_with_an_open_transaction(broker, stop):
    """Committed 0-1, C 2; aborted 3-4, A 5; open 6-8 when the broker stops. After the restart the LSO is
    still 6; the new producer's init_transactions aborts the open one (A 9); it commits 10-11 (C 12)."""
    topic = "txn-restart"
    create(broker.bootstrap, topic)
    old = txn_producer(broker.bootstrap, "ck-restart")
    old.begin_transaction()
    assert send(old, topic, rows("done", 2)) == [0, 1]
    old.commit_transaction(30)
    old.begin_transaction()
    assert send(old, topic, rows("dropped", 2)) == [3, 4]
    old.abort_transaction(30)
    old.begin_transaction()
    assert send(old, topic, rows("open", 3)) == [6, 7, 8]
    if stop == "sigterm":
        assert broker.stop() == 0
    else:
        broker.kill()
    del old  # it would retry against a broker that is gone
    broker.restart()
    bootstrap = broker.bootstrap
    assert latest(bootstrap, topic) == {0: (6, 9)}
    assert read(bootstrap, topic, RC) == placed(0, [0, 1], rows("done", 2))

    new = txn_producer(bootstrap, "ck-restart")
    wait_stable(bootstrap, topic, {0: 10})
    new.begin_transaction()
    assert send(new, topic, rows("new", 2)) == [10, 11]
    new.commit_transaction(30)
    wait_stable(bootstrap, topic, {0: 13})
    assert read(bootstrap, topic, RC) == placed(0, [0, 1, 10, 11], rows("done", 2) + rows("new", 2))
    assert read(bootstrap, topic, RU) == placed(0, [0, 1, 3, 4, 6, 7, 8, 10, 11],
                                                rows("done", 2) + rows("dropped", 2) + rows("open", 3)
                                                + rows("new", 2))  # fmt: skip
