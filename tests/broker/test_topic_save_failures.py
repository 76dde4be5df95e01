"""A topic change the disk refuses to save is not answered: the metadata log dir goes offline (the broker
stops, as Kafka halts when it cannot write its metadata log), the connection closes, the topic keeps its
partitions and configs in memory, and a restart finds what the disk kept (here: nothing of the change).

The save is one fsynced line of ``__topics.journal`` (``storage/topic_journal.py``), written through
``storage/fileops.py``; here its write fails as a full disk makes it fail (ENOSPC). Before, the change was
answered KAFKA_STORAGE_ERROR and taken back out of the journal, best effort: a take-back that failed too
brought back after a crash a change the client had been told was refused.
"""

from __future__ import annotations

import errno

import pytest

from broker.dispatch import CloseConnection
from storage import fileops

from ._admin_client import call, create_ok, open_broker, req
from .test_config_handlers import alter, overrides


@pytest.fixture
def failing_saves(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    return lambda: monkeypatch.setattr(fileops, "pwrite", refuse)


async def test_a_deletion_not_saved_is_not_answered_and_leaves_the_topic(tmp_path, failing_saves, monkeypatch):
    broker = open_broker(tmp_path)
    await create_ok(broker, "kept", 2)
    failing_saves()
    with pytest.raises(CloseConnection, match="DeleteTopics not answered"):
        await call(broker, 20, 5, req(20, topic_names=["kept"], timeout_ms=1000))
    assert broker.topics.manager.failures.metadata_offline  # the broker stops (server.py's watcher)
    assert broker.topics.get("kept").num_partitions == 2 and broker.topics.partition("kept", 1) is not None
    broker.close()
    monkeypatch.undo()  # the disk has room again
    again = open_broker(tmp_path)
    assert again.topics.get("kept") is not None
    again.close()


async def test_configs_not_saved_are_not_applied_nor_answered(tmp_path, failing_saves, monkeypatch):
    broker = open_broker(tmp_path)
    await create_ok(broker, "conf", configs={"cleanup.policy": "compact"})
    failing_saves()
    with pytest.raises(CloseConnection, match="not answered"):
        await alter(broker, "conf", {"cleanup.policy": "delete"})
    assert overrides(broker, "conf") == {"cleanup.policy": "compact"}
    assert broker.topics.partition("conf", 0).validation_config.compacted
    broker.close()
    monkeypatch.undo()  # the disk has room again
    again = open_broker(tmp_path)
    assert overrides(again, "conf") == {"cleanup.policy": "compact"}
    again.close()
