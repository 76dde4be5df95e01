"""A failed metadata save (``storage.MetadataDirFailed``) is no ``OSError``, hence no ``StorageError``.

Every handler that answers a disk failure KAFKA_STORAGE_ERROR (``except
OSError``, ``except StorageError``) lets it through without a guard of its
own, and dispatch closes the connection unanswered: the broker stops, as
Kafka halts when its metadata log cannot be written. Before, it was a
``StorageError``, and each such handler needed ``except MetadataDirFailed:
raise`` ahead of its own: one that forgot it answered KAFKA_STORAGE_ERROR
for a change neither made nor refused. Here CreateTopics and
CreatePartitions run through ``topics._disk_failures_answered``, which
catches ``StorageError`` and has no such guard any more.
"""

from __future__ import annotations

import errno
import os

import pytest

from broker.dispatch import CloseConnection
from storage import LogDirsFailed, MetadataDirFailed, StorageError, fileops
from storage.topic_journal import JOURNAL_FILE

from ._admin_client import call, create, create_ok, creatable, open_broker, req, sub


def test_a_failed_metadata_dir_is_no_storage_error():
    """Nothing that catches a disk failure catches it; ``__main__`` still exits 1 on it (a ``LogDirsFailed``),
    and it reads as the ``OSError`` it was (its messages are unchanged)."""
    failed = MetadataDirFailed(errno.EIO, "the metadata log dir /d is offline")
    assert not isinstance(failed, (OSError, StorageError)) and not issubclass(LogDirsFailed, OSError)
    assert isinstance(failed, LogDirsFailed)
    with pytest.raises(MetadataDirFailed):
        try:
            raise failed
        except (OSError, StorageError):  # as every handler of a disk failure catches
            pytest.fail("a failed metadata dir was caught as a disk failure")
    assert (failed.errno, failed.strerror) == (errno.EIO, "the metadata log dir /d is offline")
    assert str(failed) == "[Errno 5] the metadata log dir /d is offline"


def _journal_full(real=fileops.pwrite):
    """``fileops.pwrite`` failing (a full disk) for the topics' journal only: the new logs are made."""

    def pwrite(fd: int, data, position: int) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(JOURNAL_FILE):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, position)

    return pwrite


async def _grow(broker, name: str, count: int):
    Topic = sub(37, "CreatePartitionsTopic")
    body = req(37, topics=[Topic(name=name, count=count, assignments=None)], timeout_ms=1000, validate_only=False)
    return await call(broker, 37, 3, body)


@pytest.mark.parametrize("api", ["CreateTopics", "CreatePartitions"])
async def test_a_topic_save_that_fails_is_not_answered_kafka_storage_error(tmp_path, monkeypatch, api):
    """The journal line cannot be written (a full disk): the metadata dir fails and the request is not answered,
    through a handler that answers ``StorageError`` KAFKA_STORAGE_ERROR; nothing of the change is left (a
    growth's logs were made, then removed)."""
    broker = open_broker(tmp_path)
    try:
        await create_ok(broker, "grown", 1)
        monkeypatch.setattr(fileops, "pwrite", _journal_full())
        with pytest.raises(CloseConnection, match=f"{api} not answered: .*saving the topics failed"):
            await (_grow(broker, "grown", 3) if api == "CreatePartitions" else create(broker, creatable("new", 2)))
        assert broker.topics.manager.failures.metadata_offline  # the broker stops (server.py's watcher)
        assert broker.topics.get("grown").num_partitions == 1 and broker.topics.get("new") is None
        root = broker.topics.manager.dirs[0]
        assert sorted(p.name for p in root.iterdir() if p.name[:4] in ("grow", "new-")) == ["grown-0"]
    finally:
        broker.close()
