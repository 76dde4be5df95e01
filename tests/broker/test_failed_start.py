"""A start that fails after the logs loaded closes them, as Kafka's shutdown on a startup failure closes its
LogManager: the clean-shutdown marker the load removed is written back, so the next start does not recover
every log. The old start closed only the metrics endpoint: the marker stayed missing, the logs open."""

from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.scram_store import CREDENTIALS_FILE, CredentialFileError
from broker.server import serve_broker
from storage import LogManager
from storage.log_opening import CLEAN_SHUTDOWN


async def test_a_start_failing_after_the_load_leaves_the_logs_cleanly_shut_down(tmp_path):
    data = tmp_path / "data"
    manager = LogManager.open([data], {}, lambda: 1_700_000_000_000)
    manager.create_topic("t", 3, {})
    manager.close()
    assert (data / CLEAN_SHUTDOWN).exists()
    (data / CREDENTIALS_FILE).write_text("{not json")  # read by the broker once the logs loaded
    config = BrokerConfig.from_props({"node.id": "1", "log.dirs": str(data), "prometheus.port": "0",
                                      "listeners": "PLAINTEXT://127.0.0.1:0"})  # fmt: skip
    with pytest.raises(CredentialFileError):
        await serve_broker(config)
    assert (data / CLEAN_SHUTDOWN).exists()  # the old start: missing
