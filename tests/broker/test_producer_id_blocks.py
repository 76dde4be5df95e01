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
"""

from __future__ import annotations

import errno
import os

import pytest

from broker.dispatch import CloseConnection
from protocol import ErrorCode
from storage import fileops
from storage.topic_store import PRODUCER_IDS

from ._admin_client import call, req
from ._group_client import clock, group_props, groups_broker  # noqa: F401  (fixtures)
from .test_transactions import init


async def idempotent(broker) -> tuple[int, int]:
    resp = await call(broker, 22, 4, req(22, transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1,
                                         producer_epoch=-1))  # fmt: skip
    return resp.error_code, resp.producer_id


def full_disk_for_blocks(real=fileops.fsync):
    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(PRODUCER_IDS):
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


async def test_a_block_save_in_doubt_is_not_answered_and_fails_the_metadata_dir(groups_broker, monkeypatch):  # noqa: F811
    real, data_dir = fileops.fsync_path, groups_broker.topics.manager.dirs[0]

    def fsync_path(path) -> None:  # the block's file is renamed in place; its directory's fsync fails
        if os.path.samefile(path, data_dir):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(path)

    monkeypatch.setattr(fileops, "fsync_path", fsync_path)
    with pytest.raises(CloseConnection, match="not answered: .*producer ids is in doubt"):
        await idempotent(groups_broker)
    assert groups_broker.topics.manager.failures.metadata_offline
