"""Producer ids come in blocks saved before use (``storage.topic_store.ProducerIds``); what a failed save answers.

A block that cannot be saved (a full disk) hands out nothing: InitProducerId is
answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry, as Kafka answers
while its ``RPCProducerIdManager`` waits for a block, for an idempotent and a
transactional producer alike; once the disk takes it, ids go on, never one
twice. A save in doubt (renamed in place, the directory's fsync failed) fails
the metadata log dir and is not answered (the connection closes, the broker
stops), as Kafka halts when a metadata record cannot be written. Before, the
first closed the connection (an unexpected error) and, since the handlers'
unexpected errors are answered, UNKNOWN_SERVER_ERROR, which a Java producer
takes as fatal.

The block's save runs on a worker thread (``broker.transactions.producer_ids``):
while its fsync is held back, another connection is answered and the
InitProducerId requests that need the block wait for it (before, the fsync
ran on the event loop and every connection waited); many at once across
block boundaries get every id once, with no gap, one block saved (and one
metadata record appended) per 1000 ids; a refused save hands out nothing and
a request that waited for it saves the block itself; a request cancelled
mid-save still puts its block in use, so the one that waited takes its next
id and no block is skipped.

Handing out a block's id ``first + 900`` (its 901st) starts the next block's
save in the background, as Kafka's ``RPCProducerIdManager`` asks for the next
block when it claims ``firstProducerId + size * PidPrefetchThreshold`` (before,
the 900th id started it): the requests at the block's end wait for no fsync
(before, the one that found the block used up saved the next and every other
waited). A refused background save changes nothing (the request that needs
the block saves it), one in doubt stops the broker without ending the trio
run, and a restart skips a block saved ahead and never used.
"""

from __future__ import annotations

import errno
import os
import threading

import pytest
import trio
import trio.testing

from broker.dispatch import CloseConnection
from broker.transactions.producer_ids import PREFETCH_AT
from protocol import ErrorCode
from storage import fileops
from storage.topic_store import PRODUCER_ID_BLOCK, PRODUCER_IDS

from ._admin_client import call, req
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_topic_saves_off_loop import HELD_AT_MOST, HeldSaves
from .test_transactions import init


async def idempotent(broker) -> tuple[int, int]:
    resp = await call(broker, 22, 4, req(22, transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1,
                                         producer_epoch=-1))  # fmt: skip
    return resp.error_code, resp.producer_id


def saved(broker) -> int:
    return int((broker.topics.manager.dirs[0] / PRODUCER_IDS).read_text())


async def handed_out(broker, count: int) -> list[tuple[int, int]]:
    return [await idempotent(broker) for _ in range(count)]


def full_disk_for_blocks(real=fileops.fsync, refused: list[int] | None = None):
    """The producer-id-block's fsyncs fail (no space left); each refused one's fd goes into ``refused``."""

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(PRODUCER_IDS):
            if refused is not None:
                refused.append(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd)

    return fsync


@pytest.mark.parametrize("transactional", [False, True], ids=["idempotent", "transactional"])
async def test_a_block_the_disk_refuses_is_answered_retriable_and_ids_go_on(groups_broker, monkeypatch,  # noqa: F811
                                                                            transactional):  # fmt: skip
    ask = (lambda: init(groups_broker)) if transactional else (lambda: idempotent(groups_broker))
    monkeypatch.setattr(fileops, "fsync", full_disk_for_blocks())
    refused = await ask()
    assert refused[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS and refused[1] == -1
    assert not groups_broker.topics.manager.failures.metadata_offline
    monkeypatch.undo()
    first, second = await idempotent(groups_broker), await ask()
    assert first[0] == second[0] == ErrorCode.NONE and first[1] != second[1]


def data_dir_fsync_fails(broker, real=fileops.fsync_path):
    """An ``fsync_path`` whose fsync of the first log dir fails: a block's file renamed in place is in doubt."""
    data_dir = broker.topics.manager.dirs[0]

    def fsync_path(path) -> None:
        if os.path.samefile(path, data_dir):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(path)

    return fsync_path


async def test_a_block_save_in_doubt_is_not_answered_and_fails_the_metadata_dir(groups_broker, monkeypatch):  # noqa: F811
    monkeypatch.setattr(fileops, "fsync_path", data_dir_fsync_fails(groups_broker))
    with pytest.raises(CloseConnection, match="not answered: .*a metadata save is in doubt.*producer-id-block"):
        await idempotent(groups_broker)
    assert groups_broker.topics.manager.failures.metadata_offline


async def metadata_served(broker) -> bool:
    """Another connection's request (Metadata) is answered."""
    resp = await call(broker, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
    return resp.cluster_id == broker.cluster_id


@pytest.mark.parametrize("transactional", [False, True], ids=["idempotent", "transactional"])
async def test_other_connections_are_served_while_a_block_is_saved(groups_broker, monkeypatch,  # noqa: F811
                                                                    transactional):  # fmt: skip
    """A block's fsync is held: the first block's, which the first InitProducerId saves (idempotent), or the
    second's, which id 900 starts in the background (transactional: the block's last 100 ids are handed
    out meanwhile, then the InitProducerId finds the block used up and waits for that save). Meanwhile
    Metadata is answered and a second InitProducerId waits for the block (no id before its block is on disk);
    both get theirs after."""
    saves, order, ids, base = HeldSaves(PRODUCER_IDS), [], [], 0
    if transactional:  # __transaction_state made, 900 ids handed out (0 to 899)
        assert (await init(groups_broker, "warm-up"))[0] == ErrorCode.NONE
        await handed_out(groups_broker, PREFETCH_AT - 1)
        base = PRODUCER_ID_BLOCK
    monkeypatch.setattr(fileops, "fsync", saves.fsync)
    if transactional:  # id 900 starts the next block's save; the block's last ids wait for no fsync
        answers = await handed_out(groups_broker, PRODUCER_ID_BLOCK - PREFETCH_AT)
        assert answers == [(ErrorCode.NONE, id_) for id_ in range(PREFETCH_AT, PRODUCER_ID_BLOCK)]
    first = (lambda: init(groups_broker)) if transactional else (lambda: idempotent(groups_broker))

    async def ask(name: str) -> None:
        answer = await (first() if name == "first" else idempotent(groups_broker))
        ids.append(answer[:2])
        order.append(f"{name} answered")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first")
            assert await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
            await trio.testing.wait_all_tasks_blocked()  # the first waits for the save (its own or the prefetch's)
            nursery.start_soon(ask, "second")
            await trio.testing.wait_all_tasks_blocked()
            order.append(("metadata served", await metadata_served(groups_broker)))
            saves.release()
    assert order == [("metadata served", True), "first answered", "second answered"]
    assert ids == [(ErrorCode.NONE, base), (ErrorCode.NONE, base + 1)]


def slow_block_saves(seconds: float, real=fileops.fsync):
    """The producer-id-block's fsync takes ``seconds``: requests pile up behind each save."""

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(PRODUCER_IDS):
            threading.Event().wait(seconds)
        real(fd)

    return fsync


async def test_many_requests_across_block_boundaries_get_every_id_once(groups_broker, monkeypatch):  # noqa: F811
    """Connections ask at once while blocks are saved (slowly): every id handed out once, none skipped (a
    request that waited for a save takes the new block, it does not save another), one record per block."""
    monkeypatch.setattr(fileops, "fsync", slow_block_saves(0.05))
    tasks, each, ids = 25, 100, []  # 2500 ids: three blocks
    offset = groups_broker.quorum.end_offset

    async def client() -> None:
        for _ in range(each):
            error, producer_id = await idempotent(groups_broker)
            assert error == ErrorCode.NONE
            ids.append(producer_id)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for _ in range(tasks):
                nursery.start_soon(client)
    blocks = -(-tasks * each // PRODUCER_ID_BLOCK)
    assert sorted(ids) == list(range(tasks * each))
    assert groups_broker.quorum.end_offset == offset + blocks  # one ProducerIdsRecord per block, as Kafka's
    saved = (groups_broker.topics.manager.dirs[0] / PRODUCER_IDS).read_text()
    assert int(saved) == blocks * PRODUCER_ID_BLOCK
    again = groups_broker.reopen()
    assert await idempotent(again) == (ErrorCode.NONE, blocks * PRODUCER_ID_BLOCK)


def refused_once_while_held(saves: HeldSaves):
    """The first block fsync waits for ``saves.release`` and then fails (no space left); later ones pass."""
    failed: list[int] = []

    def fsync(fd: int) -> None:
        saves.fsync(fd)
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(PRODUCER_IDS) and not failed:
            failed.append(fd)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return fsync


async def saving_and_waiting(saves: HeldSaves, first, second, meanwhile=lambda: None) -> None:
    """``first`` starts a block's save, held; ``second`` then waits for it; ``meanwhile()`` runs with both
    blocked, then the save goes on."""
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
            nursery.start_soon(second)
            await trio.testing.wait_all_tasks_blocked()
            meanwhile()
            await trio.testing.wait_all_tasks_blocked()
            saves.release()


async def test_a_refused_block_hands_out_nothing_and_a_waiting_request_saves_it(groups_broker,  # noqa: F811
                                                                                 monkeypatch):  # fmt: skip
    saves, answers = HeldSaves(PRODUCER_IDS), []
    monkeypatch.setattr(fileops, "fsync", refused_once_while_held(saves))

    async def ask() -> None:
        answers.append(await idempotent(groups_broker))

    await saving_and_waiting(saves, ask, ask)
    assert answers == [(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1), (ErrorCode.NONE, 0)]
    assert not groups_broker.topics.manager.failures.metadata_offline


async def test_a_request_cancelled_while_its_block_is_saved_skips_no_block(groups_broker, monkeypatch):  # noqa: F811
    """The request that started a block's save is cancelled mid-save (its connection went away): the save is
    finished (shielded) and the block put in use all the same (no checkpoint between the two), so the request
    that waited for it takes the block's next id; no second block is saved (no 1000 ids skipped, one record
    appended), no id is handed out twice. At most the cancelled request's own id (0) is lost."""
    saves, answers, first_answer = HeldSaves(PRODUCER_IDS), [], []
    monkeypatch.setattr(fileops, "fsync", saves.fsync)
    offset, cancelled = groups_broker.quorum.end_offset, trio.CancelScope()

    async def first() -> None:
        with cancelled:
            first_answer.append(await idempotent(groups_broker))

    async def waiting() -> None:
        answers.append(await idempotent(groups_broker))

    await saving_and_waiting(saves, first, waiting, meanwhile=cancelled.cancel)
    answers.append(await idempotent(groups_broker))
    assert first_answer in ([], [(ErrorCode.NONE, 0)])  # answered only if no checkpoint came after its id
    assert answers == [(ErrorCode.NONE, 1), (ErrorCode.NONE, 2)]
    assert groups_broker.quorum.end_offset == offset + 1
    assert int((groups_broker.topics.manager.dirs[0] / PRODUCER_IDS).read_text()) == PRODUCER_ID_BLOCK


async def prefetch_over(broker) -> None:
    """A background save started by the last id handed out has run (or none was started)."""
    await trio.testing.wait_all_tasks_blocked()  # the prefetch has its turn and its save on a worker thread
    async with broker.transactions.producer_ids.saves:  # ... and has given the turn back
        pass



async def test_id_900_the_901st_starts_the_next_blocks_save_in_the_background(groups_broker,  # noqa: F811
                                                                               monkeypatch):  # fmt: skip
    """Kafka's prefetch point, exactly: with ids 0 to 899 handed out (90%) nothing is saved yet; handing out
    id 900 (first + 1000 * 0.9, the 901st) starts the next block's save (one quorum record, as Kafka's
    controller appends one ProducerIdsRecord per block); the block's end then waits for no save: with every
    block fsync refused from then on, the next 200 ids are all handed out, the block's last 99 and the ready
    block's first 101."""
    assert await idempotent(groups_broker) == (ErrorCode.NONE, 0)
    offset = groups_broker.quorum.end_offset
    assert (await handed_out(groups_broker, 899))[-1] == (ErrorCode.NONE, 899)
    await prefetch_over(groups_broker)
    assert (saved(groups_broker), groups_broker.quorum.end_offset) == (PRODUCER_ID_BLOCK, offset)  # none yet
    assert await idempotent(groups_broker) == (ErrorCode.NONE, 900)
    await prefetch_over(groups_broker)
    assert (saved(groups_broker), groups_broker.quorum.end_offset) == (2 * PRODUCER_ID_BLOCK, offset + 1)
    monkeypatch.setattr(fileops, "fsync", full_disk_for_blocks())
    assert await handed_out(groups_broker, 200) == [(ErrorCode.NONE, 901 + i) for i in range(200)]
    assert groups_broker.quorum.end_offset == offset + 1


async def test_a_refused_background_save_hands_out_nothing_and_a_later_request_saves(groups_broker,  # noqa: F811
                                                                                     monkeypatch):  # fmt: skip
    """The disk refuses the block id 900 starts saving: logged, nothing changes, not tried again while
    the block lasts; the request that needs it tries again (COORDINATOR_LOAD_IN_PROGRESS while refused,
    its id once the disk takes it)."""
    refused: list[int] = []
    assert await idempotent(groups_broker) == (ErrorCode.NONE, 0)
    offset = groups_broker.quorum.end_offset
    monkeypatch.setattr(fileops, "fsync", full_disk_for_blocks(refused=refused))
    await handed_out(groups_broker, PREFETCH_AT)
    await prefetch_over(groups_broker)
    assert len(refused) == 1  # the background save was tried
    last = await handed_out(groups_broker, PRODUCER_ID_BLOCK - PREFETCH_AT - 1)
    await prefetch_over(groups_broker)
    assert last[-1] == (ErrorCode.NONE, PRODUCER_ID_BLOCK - 1) and len(refused) == 1
    assert await idempotent(groups_broker) == (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1)
    assert len(refused) == 2
    assert (saved(groups_broker), groups_broker.quorum.end_offset) == (PRODUCER_ID_BLOCK, offset)
    assert not groups_broker.topics.manager.failures.metadata_offline
    monkeypatch.undo()
    assert await idempotent(groups_broker) == (ErrorCode.NONE, PRODUCER_ID_BLOCK)
    assert (saved(groups_broker), groups_broker.quorum.end_offset) == (2 * PRODUCER_ID_BLOCK, offset + 1)


async def test_a_background_save_in_doubt_stops_the_broker_and_the_run_goes_on(groups_broker,  # noqa: F811
                                                                               monkeypatch):  # fmt: skip
    """The block id 900 starts saving is in doubt: the metadata log dir goes offline (the broker stops)
    and the system task's failure does not end the trio run; the block's ids still go on from memory (on
    disk already), and the request that needs a block then gets nothing: no more is saved."""
    assert await idempotent(groups_broker) == (ErrorCode.NONE, 0)
    monkeypatch.setattr(fileops, "fsync_path", data_dir_fsync_fails(groups_broker))
    await handed_out(groups_broker, PREFETCH_AT)
    await prefetch_over(groups_broker)
    assert groups_broker.topics.manager.failures.metadata_offline
    monkeypatch.undo()
    last = await handed_out(groups_broker, PRODUCER_ID_BLOCK - PREFETCH_AT - 1)
    assert last[-1] == (ErrorCode.NONE, PRODUCER_ID_BLOCK - 1)
    with pytest.raises(CloseConnection, match="offline: nothing more is saved"):
        await idempotent(groups_broker)
    assert saved(groups_broker) == 2 * PRODUCER_ID_BLOCK  # the block in doubt, never used


async def test_a_restart_skips_the_block_saved_ahead(groups_broker):  # noqa: F811
    """A block saved in the background and not yet used is skipped by the next start, as a Kafka broker
    that restarts never uses the block it had fetched: no id of it may have been handed out twice."""
    await handed_out(groups_broker, PREFETCH_AT + 1)
    await prefetch_over(groups_broker)
    again = groups_broker.reopen()
    assert await idempotent(again) == (ErrorCode.NONE, 2 * PRODUCER_ID_BLOCK)


async def test_a_file_damaged_after_the_start_is_not_read_again(groups_broker):  # noqa: F811
    """The next block is known from the start on (the file is read once, see tests/storage/
    test_producer_id_file.py), as Kafka's controller keeps it in memory: a file emptied under the running
    broker is written over with the right block. Before, each save read it again and took the empty file
    for 0: the prefetch saved block 0 again and ids 0 on were handed out a second time."""
    assert await idempotent(groups_broker) == (ErrorCode.NONE, 0)
    (groups_broker.topics.manager.dirs[0] / PRODUCER_IDS).write_text("")
    await handed_out(groups_broker, PREFETCH_AT)
    await prefetch_over(groups_broker)
    assert saved(groups_broker) == 2 * PRODUCER_ID_BLOCK
    last = await handed_out(groups_broker, PRODUCER_ID_BLOCK - PREFETCH_AT)
    assert last[-1] == (ErrorCode.NONE, PRODUCER_ID_BLOCK)


INT64_MAX = (1 << 63) - 1


@pytest.mark.parametrize(("next_block", "answer"), [
    (INT64_MAX - PRODUCER_ID_BLOCK, (ErrorCode.NONE, INT64_MAX - PRODUCER_ID_BLOCK)),
    (INT64_MAX - PRODUCER_ID_BLOCK + 1, (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1)),
], ids=["the last block", "exhausted"])  # fmt: skip
async def test_exhausted_producer_ids_are_answered_retriable(groups_broker, next_block, answer):  # noqa: F811
    """A block that would end past int64's range is not saved, as Kafka's controller refuses it
    (``ProducerIdControlManager.generateNextProducerId``: first id > Long.MAX_VALUE - 1000) and its broker,
    with no block, answers COORDINATOR_LOAD_IN_PROGRESS; the block before it is handed out. Before, the
    block was saved and its ids went past int64."""
    (groups_broker.topics.manager.dirs[0] / PRODUCER_IDS).write_text(f"{next_block}\n")
    again = groups_broker.reopen()
    assert await idempotent(again) == answer
    assert saved(again) == next_block + (PRODUCER_ID_BLOCK if answer[0] == ErrorCode.NONE else 0)
