"""Topic changes save on a worker thread: other requests are served while a save waits for the disk.

Each topic change's saves (a line of ``__topics.journal``, fsynced; the
metadata quorum's state; a deletion's checkpoints) run through
``trio.to_thread`` (``broker.topics.run_steps``), one change at a time
between a save and what it makes seen (``TopicRegistry.saves``). Here the
journal's fsync is held back (``storage.fileops``, the fault-injection seam)
until the test lets it go. Before, the fsync ran on the event loop: every
other connection waited for it.
"""

from __future__ import annotations

import os
import threading

import trio

from protocol import ErrorCode
from storage import fileops
from storage.topic_journal import JOURNAL_FILE, read_topics

from ._admin_client import broker, call, create, create_ok, creatable, now_ms, open_broker, produce, req  # noqa: F401
from .test_config_handlers import SET, alter, incremental, overrides

HELD_AT_MOST = 3.0  # seconds a held fsync waits before it goes on by itself (the old code never lets go)


class HeldSaves:
    """The fsyncs of the files whose names start with ``prefix`` (the topic files by default) wait until
    ``release``; ``held`` is set once one waits."""

    def __init__(self, prefix: str = "__topics") -> None:
        self.held, self._go = threading.Event(), threading.Event()
        self.real, self.prefix = fileops.fsync, prefix

    def fsync(self, fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(self.prefix):
            self.held.set()
            self._go.wait(HELD_AT_MOST)
        self.real(fd)

    def release(self) -> None:
        self._go.set()


async def _metadata(b) -> list[str]:
    resp = await call(b, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
    return sorted(t.name for t in resp.topics)


async def _while_held(b, monkeypatch, change) -> list[str]:
    """Run ``change`` with its save held; what else was done meanwhile, in order."""
    saves, order = HeldSaves(), []
    monkeypatch.setattr(fileops, "fsync", saves.fsync)

    async def run_change() -> None:
        await change()
        order.append("change answered")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_change)
            await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
            order.append(f"metadata answered: {await _metadata(b)}")
            saves.release()
    return order


async def test_other_requests_are_served_while_a_creation_waits_for_its_save(broker, monkeypatch):  # noqa: F811
    await create_ok(broker, "old")
    order = await _while_held(broker, monkeypatch, lambda: create(broker, creatable("new", 2)))
    assert order == ["metadata answered: ['old']", "change answered"]  # the topic is seen once saved, not before
    assert broker.topics.get("new").num_partitions == 2 and read_topics(broker.topics.manager.dirs[0])["new"]


async def test_other_requests_are_served_while_new_configs_wait_for_their_save(broker, monkeypatch):  # noqa: F811
    await create_ok(broker, "conf", configs={"cleanup.policy": "compact"})
    order = await _while_held(broker, monkeypatch, lambda: alter(broker, "conf", {"retention.ms": "1000"}))
    assert order == ["metadata answered: ['conf']", "change answered"]
    assert overrides(broker, "conf") == {"retention.ms": "1000"}
    assert broker.topics.partition("conf", 0).config.retention_ms == 1000


async def test_other_requests_are_served_while_a_deletion_waits_for_its_save(broker, monkeypatch):  # noqa: F811
    await create_ok(broker, "gone")
    body = req(20, topic_names=["gone"], timeout_ms=1000)
    order = await _while_held(broker, monkeypatch, lambda: call(broker, 20, 5, body))
    assert order == ["metadata answered: ['gone']", "change answered"]
    assert broker.topics.get("gone") is None


def _journal_names(root) -> list[str]:
    """The topics the journal's lines name, in their order (the header left out)."""
    lines = (root / JOURNAL_FILE).read_text().splitlines()[1:]
    return [line.split('"name": "', 1)[1].split('"', 1)[0] for line in lines]


async def test_concurrent_changes_all_land_in_one_order_in_memory_and_on_disk(tmp_path):
    """Creations from several connections, and config changes meanwhile, each answered once saved; memory
    and the journal see them in the same order, and a restart (nothing folded: as after a crash) has them."""
    b = open_broker(tmp_path)
    answers: list = []

    async def client(n: int) -> None:
        for i in range(5):
            got = await create(b, creatable(f"c{n}-{i}", 1))
            answers.append(got[f"c{n}-{i}"].error_code)
            answers.append((await alter(b, f"c{n}-{i}", {"retention.ms": str(1000 + n)})).error_code)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(client, n)
    assert answers == [ErrorCode.NONE] * 60
    root = b.topics.manager.dirs[0]
    made = [name for name in _journal_names(root)]
    assert [name for name in dict.fromkeys(made)] == list(b.topics.topics())  # created in the journal's order
    assert all(made.count(name) == 2 for name in made)  # a creation and its configs, one line each
    b.topics.manager.dir_locks.release()  # a crash: nothing closed, nothing folded
    again = open_broker(tmp_path)
    try:
        assert {name: meta.overrides for name, meta in again.topics.topics().items()} == {
            f"c{n}-{i}": {"retention.ms": str(1000 + n)} for n in range(6) for i in range(5)}
    finally:
        again.close()


async def test_a_produce_while_a_deletion_saves_leaves_no_partition_of_the_deleted_topic(broker, monkeypatch):  # noqa: F811
    """A Produce served while the deletion's save waits finds the topic (not deleted yet); once the deletion
    is made, no cached partition of it is left: the same name made again gets the new topic's log."""
    await create_ok(broker, "gone")
    body = req(20, topic_names=["gone"], timeout_ms=1000)
    saves = HeldSaves()
    monkeypatch.setattr(fileops, "fsync", saves.fsync)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, broker, 20, 5, body)
            await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
            assert await produce(broker, "gone", [now_ms()]) == 0
            saves.release()
    monkeypatch.setattr(fileops, "fsync", saves.real)
    assert broker.topics.get("gone") is None and broker.topics.partition("gone", 0) is None
    await create_ok(broker, "gone")
    assert await produce(broker, "gone", [now_ms()]) == 0
    assert broker.topics.manager.get_log("gone", 0).log_end_offset == 1


async def test_concurrent_incremental_changes_of_one_topic_both_land(broker, monkeypatch):  # noqa: F811
    """Each IncrementalAlterConfigs starts from what the change before it left, as Kafka's controller applies
    one write event at a time: the second, which arrives while the first waits for its save, is not worked
    out from the configs the first is replacing (that lost the first's key)."""
    await create_ok(broker, "inc")
    saves = HeldSaves()
    monkeypatch.setattr(fileops, "fsync", saves.fsync)
    answers = []

    async def change(key: str, value: str) -> None:
        answers.append((await incremental(broker, "inc", [(key, SET, value)])).error_code)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(change, "retention.ms", "1000")
            await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
            nursery.start_soon(change, "segment.ms", "2000")
            while not broker.topics.changes.statistics().tasks_waiting:  # the second waits for its turn
                await trio.sleep(0.001)
            saves.release()
    assert answers == [ErrorCode.NONE, ErrorCode.NONE]
    assert overrides(broker, "inc") == {"retention.ms": "1000", "segment.ms": "2000"}
    assert read_topics(broker.topics.manager.dirs[0])["inc"]["overrides"] == overrides(broker, "inc")
