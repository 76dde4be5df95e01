"""Big topic creations and growths do not hold up other requests, and are seen whole or not at all.

The logs of a CreateTopics or CreatePartitions are made a few at a time
(``broker.topics.run_steps``); other requests are served in between. While
that runs, Metadata lists the topic with every partition or not at all, and
other topic changes wait for it (``TopicRegistry.changes``), as Kafka's
controller applies one change after another. A request given up part way
(its connection closed, the broker stopping) still finishes the change.
"""

from __future__ import annotations

import trio

from broker import topics as topics_module
from protocol import ErrorCode

from ._admin_client import broker, call, create, create_ok, creatable, req, sub  # noqa: F401  (broker is a fixture)

PARTITIONS = 120


async def _listed(broker) -> dict[str, int]:  # noqa: F811
    resp = await call(broker, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
    return {t.name: len(t.partitions) for t in resp.topics}


async def _while(broker, change, *others) -> tuple[object, list, list[dict[str, int]]]:  # noqa: F811
    """Run ``change`` and, while it is running, ``others`` one after another, then Metadata until it ends.
    Returns the change's answer, the others' answers (each made while the change ran) and the listings."""
    done, answers, listings, result = trio.Event(), [], [], []

    async def run_change() -> None:
        result.append(await change())
        done.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_change)
            while not broker.topics.changes.locked():  # the change is under way
                await trio.sleep(0)
            for other in others:
                answers.append(await other())
            while not done.is_set():
                listings.append(await _listed(broker))
                await trio.sleep(0)  # a Metadata call itself need not let other tasks run
    return result[0], answers, listings


async def test_metadata_is_served_during_a_big_creation_and_sees_the_topic_whole(broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(topics_module, "STEP_SLICE", 0.0)
    await create_ok(broker, "small")
    got, _, listings = await _while(broker, lambda: create(broker, creatable("big", PARTITIONS)))
    assert got["big"].error_code == ErrorCode.NONE
    assert len(listings) > 5  # served between the steps, not after them
    assert all(listing.get("big", PARTITIONS) == PARTITIONS for listing in listings)
    assert any("big" not in listing for listing in listings) and listings[0] == {"small": 1}
    assert (await _listed(broker))["big"] == PARTITIONS


async def test_a_second_creation_waits_for_the_first_and_finds_the_topic(broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(topics_module, "STEP_SLICE", 0.0)
    got, (second,), _ = await _while(broker, lambda: create(broker, creatable("big", PARTITIONS)),
                                     lambda: create(broker, creatable("big", 1)))  # fmt: skip
    assert got["big"].error_code == ErrorCode.NONE
    assert second["big"].error_code == ErrorCode.TOPIC_ALREADY_EXISTS  # after the creation, not beside it
    assert broker.topics.get("big").num_partitions == PARTITIONS


async def test_a_deletion_waits_for_the_creation_under_way(broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(topics_module, "STEP_SLICE", 0.0)
    Topic = sub(20, "DeleteTopicState")
    body = req(20, topics=[Topic(name="big")], timeout_ms=1000)
    got, (deleted,), _ = await _while(broker, lambda: create(broker, creatable("big", PARTITIONS)),
                                      lambda: call(broker, 20, 6, body))  # fmt: skip
    assert got["big"].error_code == ErrorCode.NONE
    assert deleted.responses[0].error_code == ErrorCode.NONE and broker.topics.names() == []
    root = broker.topics.manager.dirs[0]
    assert all(p.name.endswith("-delete") for p in root.iterdir() if p.name.startswith("big-"))  # removed later


async def test_metadata_sees_new_partitions_all_at_once(broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(topics_module, "STEP_SLICE", 0.0)
    await create_ok(broker, "t", 2)
    Topic = sub(37, "CreatePartitionsTopic")
    body = req(37, topics=[Topic(name="t", count=PARTITIONS, assignments=None)], timeout_ms=1000, validate_only=False)
    got, _, listings = await _while(broker, lambda: call(broker, 37, 3, body))
    assert got.results[0].error_code == ErrorCode.NONE and len(listings) > 5
    assert {listing["t"] for listing in listings} <= {2, PARTITIONS} and listings[0]["t"] == 2
    assert broker.topics.partition("t", PARTITIONS - 1) is not None


async def test_a_creation_given_up_part_way_is_still_finished(broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(topics_module, "STEP_SLICE", 0.0)
    scope = trio.CancelScope()

    async def given_up() -> None:
        with scope:
            await create(broker, creatable("big", PARTITIONS))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(given_up)
            while not broker.topics.changes.locked():  # the logs are being made
                await trio.sleep(0)
            await trio.sleep(0)
            assert broker.topics.get("big") is None  # part way
            scope.cancel()
    assert broker.topics.get("big").num_partitions == PARTITIONS
    assert all(broker.topics.partition("big", p) is not None for p in range(PARTITIONS))
    assert (await create(broker, creatable("next", 1)))["next"].error_code == ErrorCode.NONE  # the lock is free
