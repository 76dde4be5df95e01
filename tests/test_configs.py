"""Shipped configuration files load, and bad keys stop startup naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from storage.config import ConfigModel

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["server.properties", "docker.properties"])
def test_shipped_configs_are_valid(name):
    config = BrokerConfig.load(ROOT / "config" / name)
    ConfigModel.from_broker_props(config.log_props)
    assert config.node_id == 1


def test_docker_config_advertises_a_name_and_listens_everywhere():
    config = BrokerConfig.load(ROOT / "config" / "docker.properties")
    assert config.listeners == "PLAINTEXT://0.0.0.0:9092"
    assert config.advertised_listeners.startswith("PLAINTEXT://")


@pytest.mark.parametrize(
    "override,named",
    [("log.segmnt.bytes=5", "log.segmnt.bytes"), ("node.id=x", "node.id"), ("log.segment.bytes=3", "log.segment.bytes"),
     ("listeners=SSL://:9093", "listeners"), ("compression.lz4.level=18", "compression.lz4.level")],
)  # fmt: skip
@pytest.mark.timeout(60)
def test_bad_keys_stop_startup_with_the_key_named(tmp_path, override, named):
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
         "--override", f"log.dirs={tmp_path}", "--override", override, "--override", "prometheus.port=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert named in result.stderr


def test_bad_value_in_properties_names_the_key():
    with pytest.raises(ConfigError, match="socket.request.max.bytes"):
        BrokerConfig.from_props({"socket.request.max.bytes": "-1"})
