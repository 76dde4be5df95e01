"""Shipped configuration files load, and bad keys stop startup naming the key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.listeners import advertised_endpoints, served_listeners
from storage.config import ConfigModel

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["server.properties", "docker.properties"])
def test_shipped_configs_are_valid(name):
    config = BrokerConfig.load(ROOT / "config" / name)
    ConfigModel.from_broker_props(config.log_props)
    assert config.node_id == 1


def test_docker_config_advertises_a_name_per_listener_and_listens_everywhere():
    config = BrokerConfig.load(ROOT / "config" / "docker.properties")
    assert [(x.name, x.host, x.port) for x in served_listeners(config)] == [
        ("INTERNAL", "0.0.0.0", 29092), ("EXTERNAL", "0.0.0.0", 9092)]  # fmt: skip
    bound = [("INTERNAL", "0.0.0.0", 29092), ("EXTERNAL", "0.0.0.0", 9092)]
    assert advertised_endpoints(config, bound) == {"INTERNAL": ("broker", 29092), "EXTERNAL": ("localhost", 9092)}
    compose = (ROOT / "docker" / "docker-compose.yml").read_text()
    assert '"127.0.0.1:9092:9092"' in compose and "29092" in compose  # the host gets EXTERNAL, containers INTERNAL


def test_a_stock_kafka_kraft_server_properties_starts_as_is(tmp_path):
    """Kafka's own config/kraft/server.properties (combined mode) is accepted: KRaft, thread and socket keys
    are taken, the CONTROLLER listener is not bound, and the PLAINTEXT one is."""
    stock = tmp_path / "server.properties"
    stock.write_text(KAFKA_KRAFT_PROPERTIES)
    config = BrokerConfig.load(stock, {"log.dirs": str(tmp_path / "data")})
    assert [(x.name, x.port) for x in served_listeners(config)] == [("PLAINTEXT", 9092)]
    assert (config.socket_send_buffer_bytes, config.socket_receive_buffer_bytes) == (102400, 102400)
    assert (config.num_network_threads, config.num_io_threads, config.process_roles) == (3, 8, "broker,controller")


KAFKA_KRAFT_PROPERTIES = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


@pytest.mark.parametrize(
    "override,named",
    [("log.segmnt.bytes=5", "log.segmnt.bytes"), ("node.id=x", "node.id"), ("log.segment.bytes=3", "log.segment.bytes"),
     ("listeners=SSL://:9093", "ssl.keystore.location"), ("listeners=X://:9093", "listeners"),
     ("compression.lz4.level=18", "compression.lz4.level"),
     ("listeners=INTERNAL://:9093", "listeners"), ("process.roles=controller", "process.roles"),
     ("listeners=PLAINTEXT://127.0.0.1:99999", "listeners: port out of range:99999"),
     ("socket.send.buffer.bytes=0", "socket.send.buffer.bytes"),
     ("inter.broker.listener.name=REPLICATION", "inter.broker.listener.name"),
     ("log.cleaner.backoff.ms=-5", "Invalid value -5 for configuration log.cleaner.backoff.ms: Value must be at least 0"),
     ("log.cleaner.dedupe.buffer.size=1000", "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread")],
)  # fmt: skip
@pytest.mark.timeout(60)
def test_bad_keys_stop_startup_with_the_key_named(tmp_path, override, named):
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
         "--override", f"log.dirs={tmp_path}", "--override", override, "--override", "prometheus.port=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert named in result.stderr


def test_bad_value_in_properties_names_the_key():
    with pytest.raises(ConfigError, match="socket.request.max.bytes"):
        BrokerConfig.from_props({"socket.request.max.bytes": "-1"})


def test_the_commented_sasl_example_of_server_properties_serves_plain_and_scram(tmp_path):
    """Uncommenting the SASL lines of the shipped file gives a listener with PLAIN and both SCRAM mechanisms."""
    text = (ROOT / "config" / "server.properties").read_text()
    wanted = ("#listeners=", "#sasl.", "#listener.name.", "#connection.failed.")
    enabled = "\n".join(line[1:] for line in text.splitlines() if line.startswith(wanted))
    path = tmp_path / "sasl.properties"
    path.write_text(text + "\n" + enabled + "\n")
    config = BrokerConfig.load(path, {"log.dirs": str(tmp_path / "data")})
    sasl = served_listeners(config)[1].sasl
    assert sasl.mechanisms == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    assert sasl.plain_users == {"admin": "admin-secret", "alice": "alice-secret"}


@pytest.mark.parametrize("lines", [["log.dirs=/a", "log.dir=/b"], ["log.dir=/b", "log.dirs=/a"]])
def test_log_dirs_comes_before_log_dir_whichever_line_is_last(tmp_path, lines):
    """Kafka's KafkaConfig.logDirs: log.dirs if set, else log.dir."""
    path = tmp_path / "server.properties"
    path.write_text("\n".join(["listeners=PLAINTEXT://127.0.0.1:0", *lines]) + "\n")
    assert BrokerConfig.load(path).log_dir_list() == ["/a"]
    assert BrokerConfig.load(path, {"log.dir": "/c"}).log_dir_list() == ["/a"]  # an override of log.dir too
    assert BrokerConfig.from_props({"log.dir": "/b"}).log_dir_list() == ["/b"]


def test_broker_id_is_node_id_and_both_must_agree():
    """Kafka's KafkaConfig.validateValues: node.id and broker.id stand for each other, and if both are set they
    must be the same number."""
    assert BrokerConfig.from_props({"broker.id": "3"}).node_id == 3
    assert BrokerConfig.from_props({"broker.id": "3", "node.id": "03"}).node_id == 3
    with pytest.raises(ConfigError, match=r"^You must set `node.id` to the same value as `broker.id`.$"):
        BrokerConfig.from_props({"broker.id": "3", "node.id": "1"})
    with pytest.raises(ConfigError, match="broker.id"):
        BrokerConfig.from_props({"broker.id": "x", "node.id": "1"})


@pytest.mark.parametrize(("props", "message"), [
    ({"num.partitions": "abc"}, "Invalid value abc for configuration num.partitions: Not a number of type INT"),
    ({"num.partitions": "0"}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"num.partitions": "4294967296"}, "Invalid value 4294967296 for configuration num.partitions: Not a number of "
                                       "type INT"),
    ({"auto.create.topics.enable": "yes"}, "Invalid value yes for configuration auto.create.topics.enable: Expected "
                                           "value to be either true or false"),
    ({"offsets.topic.replication.factor": "40000"}, "Invalid value 40000 for configuration "
                                                    "offsets.topic.replication.factor: Not a number of type SHORT"),
    ({"fetch.max.bytes": "1000"}, "Invalid value 1000 for configuration fetch.max.bytes: Value must be at least 1024"),
    ({"prometheus.port": "70000"}, "Invalid value 70000 for configuration prometheus.port: Value must be no more "
                                   "than 65535"),
    ({"process.roles": "broker,observer"}, "Invalid value observer for configuration process.roles: String must be "
                                           "one of: broker, controller"),
    ({"node.id": "-1"}, "Missing configuration `node.id` which is required when `process.roles` is defined (i.e. "
                        "when running in KRaft mode)."),
    ({"listener.name.plaintext.max.connections": "-1"}, "Invalid value -1 for configuration "
                                                        "listener.name.plaintext.max.connections: Value must be at "
                                                        "least 0"),
])  # fmt: skip
def test_bad_values_are_refused_in_kafkas_words(props, message):
    """Kafka's ConfigException: "Invalid value <value> for configuration <key>: <reason>", with ConfigDef's
    reasons (parseType, Range, ValidString); no Python text."""
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_props(props)
    assert str(refused.value) == message


def test_a_refused_variable_is_named_under_kafka_env(tmp_path, monkeypatch, capsys):
    from broker.__main__ import main

    monkeypatch.setenv("KAFKA_NUM_PARTITIONS", "0")
    code = main(["serve", str(ROOT / "config" / "docker.properties"), "--kafka-env", "--mounted-configs-dir",
                 str(tmp_path)])  # fmt: skip
    assert code == 1
    assert ("Invalid value 0 for configuration num.partitions: Value must be at least 1 (set by KAFKA_NUM_PARTITIONS)"
            in capsys.readouterr().err)  # fmt: skip


@pytest.mark.parametrize("argv", [["serve"], ["serve", "a.properties", "--no-such-option"], ["no-such-command"], []])
def test_a_command_line_that_cannot_be_parsed_prints_the_usage_and_exits_1(argv, capsys):
    """kafka-server-start.sh without its properties file, and Kafka's printUsageAndExit for a bad option, exit 1."""
    from broker.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 1
    assert "usage: minibroker" in capsys.readouterr().err
