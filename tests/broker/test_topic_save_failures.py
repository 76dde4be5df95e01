"""A topic change the disk refuses to save changes nothing: DeleteTopics and AlterConfigs answer
KAFKA_STORAGE_ERROR, and the topic keeps its partitions and configs, in memory and after a restart.

The save is one fsynced line of ``__topics.journal`` (``storage/topic_journal.py``); here it fails as a full
or failing disk makes it fail (``OSError``). Before, the deletion and the new configs were made in memory
first, so the broker went on without a topic (or with configs) that a restart brought back (or dropped).
"""

from __future__ import annotations

import errno

import pytest

from protocol import ErrorCode
from storage.topic_journal import TopicJournal

from ._admin_client import call, create_ok, open_broker, req
from .test_config_handlers import alter, overrides


@pytest.fixture
def failing_saves(monkeypatch):
    def refuse(self, change, name, entry):
        raise OSError(errno.ENOSPC, "No space left on device")

    return lambda: monkeypatch.setattr(TopicJournal, "_change", refuse)


async def test_a_deletion_not_saved_leaves_the_topic(tmp_path, failing_saves):
    broker = open_broker(tmp_path)
    await create_ok(broker, "kept", 2)
    failing_saves()
    resp = await call(broker, 20, 5, req(20, topic_names=["kept"], timeout_ms=1000))
    assert [(r.name, r.error_code) for r in resp.responses] == [("kept", ErrorCode.KAFKA_STORAGE_ERROR)]
    assert broker.topics.get("kept").num_partitions == 2 and broker.topics.partition("kept", 1) is not None
    broker.close()
    again = open_broker(tmp_path)
    assert again.topics.get("kept") is not None
    again.close()


async def test_configs_not_saved_are_not_applied(tmp_path, failing_saves):
    broker = open_broker(tmp_path)
    await create_ok(broker, "conf", configs={"cleanup.policy": "compact"})
    failing_saves()
    result = await alter(broker, "conf", {"cleanup.policy": "delete"})
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert overrides(broker, "conf") == {"cleanup.policy": "compact"}
    assert broker.topics.partition("conf", 0).validation_config.compacted
    broker.close()
    again = open_broker(tmp_path)
    assert overrides(again, "conf") == {"cleanup.policy": "compact"}
    again.close()
