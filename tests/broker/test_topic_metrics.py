"""The BrokerTopicMetrics counters (``kafka_server_brokertopicmetrics_*``) as Kafka marks them.

A real broker (the ``broker`` fixture) takes frames through ``dispatch``; the
counters are read from its registry. What each test pins, from Kafka's
``ReplicaManager.appendToLocalLog``/``fetchMessages`` and ``BrokerTopicStats``:

* a deleted topic's series leave the endpoint (``removeMetrics``), and a topic
  made again under its name counts from zero;
"""

from __future__ import annotations

from ._admin_client import broker, call, create_ok, produce, req  # noqa: F401  (broker: a fixture)

BTM = "kafka_server_brokertopicmetrics_"


def counted(broker, name: str, topic: str) -> float | None:
    return broker.metrics.registry.get_sample_value(f"{BTM}{name}_total", {"topic": topic})


async def delete_topic(broker, name: str) -> None:
    resp = await call(broker, 20, 4, req(20, topic_names=[name], timeout_ms=1000))
    assert resp.responses[0].error_code == 0


async def test_a_deleted_topics_counters_leave_the_endpoint(broker):
    await create_ok(broker, "gone")
    await create_ok(broker, "kept")
    await produce(broker, "gone", [1, 2, 3])
    await produce(broker, "kept", [1])
    assert counted(broker, "messagesin", "gone") == 3
    await delete_topic(broker, "gone")
    names = ("messagesin", "bytesin", "totalproducerequests")
    assert [counted(broker, name, "gone") for name in names] == [None, None, None]
    assert counted(broker, "messagesin", "kept") == 1  # the others stay
    await create_ok(broker, "gone")
    await produce(broker, "gone", [1])
    assert counted(broker, "messagesin", "gone") == 1  # counted afresh
