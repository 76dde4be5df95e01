"""``--kafka-env``: the apache/kafka image's variable names, the listener group, and CLUSTER_ID's format."""

from __future__ import annotations

import pytest

from broker.config import ConfigError
from broker.env_config import LISTENER_KEYS, dropped_file_keys, env_overrides, format_cluster_id, key_of

CLUSTER_ID = "4L6g3nShT-eMCtK--X86sw"


@pytest.mark.parametrize(("variable", "key"), [
    ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
    ("KAFKA_NODE_ID", "node.id"),
    ("KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG", "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ("KAFKA_LISTENER_NAME_X_SCRAM___SHA___256_SASL_JAAS_CONFIG", "listener.name.x.scram-sha-256.sasl.jaas.config"),
    ("KAFKA_ABC___DEF", "abc-def"),
    ("KAFKA_ABC__DEF", "abc_def"),
])  # fmt: skip
def test_variable_names_map_to_keys_as_the_apache_image_maps_them(variable, key):
    assert key_of(variable) == key


def test_only_config_variables_are_read():
    env = {"KAFKA_NUM_PARTITIONS": "3", "KAFKA_HEAP_OPTS": "-Xmx1G", "KAFKA_OPTS": "-D", "KAFKA_LOG4J_LOGGERS": "a=b",
           "KAFKA_JMX_PORT": "9999", "KAFKA_": "x", "PATH": "/bin", "CLUSTER_ID": CLUSTER_ID}  # fmt: skip
    assert env_overrides(env) == {"num.partitions": "3"}


def test_listeners_follow_the_advertised_ones_unless_given():
    advertised = "PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092,SSL://[::1]:9093"
    assert env_overrides({"KAFKA_ADVERTISED_LISTENERS": advertised})["listeners"] == (
        "PLAINTEXT_HOST://0.0.0.0:9092,PLAINTEXT://0.0.0.0:19092,SSL://0.0.0.0:9093")  # fmt: skip
    given = env_overrides({"KAFKA_ADVERTISED_LISTENERS": advertised, "KAFKA_LISTENERS": "PLAINTEXT://:1"})
    assert given["listeners"] == "PLAINTEXT://:1"


@pytest.mark.parametrize(("keys", "dropped"), [
    ({"num.partitions"}, frozenset()),
    ({"inter.broker.listener.name"}, frozenset()),
    ({"advertised.listeners"}, LISTENER_KEYS),
    ({"listener.security.protocol.map"}, LISTENER_KEYS),
])  # fmt: skip
def test_the_files_listener_setup_goes_as_a_group(keys, dropped):
    assert dropped_file_keys(dict.fromkeys(keys, "x")) == dropped


def test_cluster_id_formats_a_new_dir_and_must_match_a_formatted_one(tmp_path):
    format_cluster_id(tmp_path / "new", CLUSTER_ID)
    assert (tmp_path / "new" / "meta.properties").read_text() == f"version=1\ncluster.id={CLUSTER_ID}\n"
    format_cluster_id(tmp_path / "new", CLUSTER_ID)  # the same again: fine
    with pytest.raises(ConfigError, match=f"Expected MkU3OEVBNTcwNTJENDM2Qk, but read {CLUSTER_ID}"):
        format_cluster_id(tmp_path / "new", "MkU3OEVBNTcwNTJENDM2Qk")
    for bad in ("", "short", CLUSTER_ID + "A", "!" * 22):
        with pytest.raises(ConfigError, match="is not a cluster id"):
            format_cluster_id(tmp_path / "other", bad)
