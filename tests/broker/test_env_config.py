"""``--kafka-env``: the apache/kafka image's variable names, the listener group, CLUSTER_ID, the SSL helper
variables (stores named in the secrets directory, the script's errors), a mounted server.properties, and the
log4j variables on Python's loggers."""

from __future__ import annotations

import logging
import re

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.env_config import (
    DEFAULT_CLUSTER_ID,
    LISTENER_KEYS,
    dropped_file_keys,
    env_overrides,
    format_cluster_id,
    image_config,
    key_of,
)
from broker.env_logging import LogSettings, log_settings
from broker.env_ssl import ImageScriptError, ssl_helper_keys
from broker.handlers._broker_loggers import describe_entries
from broker.log_levels import TRACE
from storage.topic_store import read_cluster_id
from tests.image_env import SSL_EXAMPLE

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
    ({"security.inter.broker.protocol"}, frozenset()),
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
    for bad in ("short", CLUSTER_ID + "A", "!" * 22):
        with pytest.raises(ConfigError, match="is not a cluster id"):
            format_cluster_id(tmp_path / "other", bad)


# --- the SSL helper variables (env_ssl) ---



def _secrets(directory) -> str:
    directory.mkdir(exist_ok=True)
    for name, text in (("kafka01.keystore.jks", "store"), ("kafka.truststore.jks", "trust"),
                       ("kafka_keystore_creds", "store pass\n"), ("kafka_ssl_key_creds", "key pass\n\n"),
                       ("kafka_truststore_creds", " trust pass ")):  # fmt: skip
        (directory / name).write_text(text)
    return str(directory)


def test_the_helper_variables_give_the_stores_and_passwords(tmp_path):
    secrets = _secrets(tmp_path / "secrets")
    assert ssl_helper_keys(SSL_EXAMPLE, secrets) == {
        "ssl.keystore.location": f"{secrets}/kafka01.keystore.jks",
        "ssl.key.password": "key pass",  # as $(cat file): trailing newlines go, nothing else
        "ssl.keystore.password": "store pass",
        "ssl.truststore.location": f"{secrets}/kafka.truststore.jks",
        "ssl.truststore.password": " trust pass ",
    }  # fmt: skip
    keys = env_overrides(SSL_EXAMPLE)  # the helpers are no keys; the other two are ordinary ones
    assert keys == {"advertised.listeners": SSL_EXAMPLE["KAFKA_ADVERTISED_LISTENERS"],
                    "listeners": "SSL://0.0.0.0:9093,SSL-INTERNAL://0.0.0.0:19093", "ssl.client.auth": "required",
                    "ssl.endpoint.identification.algorithm": ""}  # fmt: skip


@pytest.mark.parametrize("client_auth", ["", "none", "REQUIRED"])
def test_the_truststore_only_with_client_certificates_asked_for(tmp_path, client_auth):
    env = {**SSL_EXAMPLE, "KAFKA_SSL_CLIENT_AUTH": client_auth, "KAFKA_SSL_TRUSTSTORE_FILENAME": "absent"}
    assert sorted(ssl_helper_keys(env, _secrets(tmp_path))) == [
        "ssl.key.password", "ssl.keystore.location", "ssl.keystore.password"]  # fmt: skip
    requested = ssl_helper_keys({**SSL_EXAMPLE, "KAFKA_SSL_CLIENT_AUTH": "requested"}, str(tmp_path))
    assert requested["ssl.truststore.location"] == f"{tmp_path}/kafka.truststore.jks"


@pytest.mark.parametrize(("advertised", "applies"), [
    ("SSL://localhost:9093", True),
    ("PLAINTEXT://broker:9092,SASL_SSL://broker:9094", True),
    ("EXTERNAL_SSL://localhost:9093", True),  # the image looks for "SSL://", not at the protocol map
    ("PLAINTEXT://localhost:9092,SASL_PLAINTEXT://broker:9093", False),
    ("", False),
])  # fmt: skip
def test_the_helpers_are_read_only_for_an_advertised_ssl_endpoint(advertised, applies):
    env = {"KAFKA_ADVERTISED_LISTENERS": advertised}  # no helper variable at all
    if applies:
        with pytest.raises(ImageScriptError, match="^KAFKA_SSL_KEYSTORE_FILENAME environment variable not set$"):
            ssl_helper_keys(env, "/nowhere")
    else:
        assert ssl_helper_keys(env, "/nowhere") == {}


@pytest.mark.parametrize(("variable", "change", "message"), [
    ("KAFKA_SSL_KEYSTORE_FILENAME", None, "KAFKA_SSL_KEYSTORE_FILENAME environment variable not set"),
    ("KAFKA_SSL_KEYSTORE_FILENAME", "", "KAFKA_SSL_KEYSTORE_FILENAME environment variable not set"),
    ("KAFKA_SSL_KEYSTORE_FILENAME", "gone.jks", "{dir}/gone.jks file does not exist"),
    ("KAFKA_SSL_KEY_CREDENTIALS", None, "KAFKA_SSL_KEY_CREDENTIALS environment variable not set"),
    ("KAFKA_SSL_KEY_CREDENTIALS", "gone", "{dir}/gone file does not exist"),
    ("KAFKA_SSL_KEYSTORE_CREDENTIALS", None, "KAFKA_SSL_KEYSTORE_CREDENTIALS environment variable not set"),
    ("KAFKA_SSL_KEYSTORE_CREDENTIALS", "gone", "{dir}/gone file does not exist"),
    ("KAFKA_SSL_TRUSTSTORE_FILENAME", None, "KAFKA_SSL_TRUSTSTORE_FILENAME environment variable not set"),
    ("KAFKA_SSL_TRUSTSTORE_FILENAME", "gone.jks", "{dir}/gone.jks file does not exist"),
    ("KAFKA_SSL_TRUSTSTORE_CREDENTIALS", None, "KAFKA_SSL_TRUSTSTORE_CREDENTIALS environment variable not set"),
    ("KAFKA_SSL_TRUSTSTORE_CREDENTIALS", "gone", "{dir}/gone file does not exist"),
    ("KAFKA_SSL_KEY_CREDENTIALS", ".", "cat: {dir}/.: Is a directory"),
])  # fmt: skip
def test_a_missing_helper_variable_or_file_stops_as_the_image_script_does(tmp_path, variable, change, message):
    secrets = _secrets(tmp_path / "secrets")
    env = {k: v for k, v in SSL_EXAMPLE.items() if k != variable or change is not None}
    if change is not None:
        env[variable] = change
    with pytest.raises(ImageScriptError) as caught:
        ssl_helper_keys(env, secrets)
    assert (str(caught.value), caught.value.exit_status) == (message.format(dir=secrets), 1)


def test_the_secrets_directory_is_the_images_unless_moved(tmp_path):
    with pytest.raises(ImageScriptError, match="^/etc/kafka/secrets/x.jks file does not exist$"):
        ssl_helper_keys({**SSL_EXAMPLE, "KAFKA_SSL_KEYSTORE_FILENAME": "x.jks"})
    (tmp_path / "kafka_ssl_key_creds").write_bytes(b"\xff\xfe")
    (tmp_path / "kafka01.keystore.jks").write_text("x")
    with pytest.raises(ImageScriptError, match="kafka_ssl_key_creds: not a text file"):
        ssl_helper_keys(SSL_EXAMPLE, str(tmp_path) + "/")


# --- what serve --kafka-env reads (env_config.image_config) ---


def test_the_helper_keys_override_the_same_keys_given_directly(tmp_path, caplog):
    env = {**SSL_EXAMPLE, "KAFKA_SSL_KEYSTORE_LOCATION": "/elsewhere.p12", "KAFKA_SSL_KEYSTORE_TYPE": "PKCS12",
           "KAFKA_SECURITY_PROTOCOL": "SSL"}  # fmt: skip
    secrets = _secrets(tmp_path / "secrets")
    with caplog.at_level(logging.INFO, "minibroker"):
        path, keys, dropped = image_config("config/docker.properties", env, secrets, str(tmp_path / "mnt"))
    assert (path, dropped) == ("config/docker.properties", LISTENER_KEYS)
    assert (keys["ssl.keystore.location"], keys["ssl.keystore.type"]) == (f"{secrets}/kafka01.keystore.jks", "PKCS12")
    assert "security.protocol" not in keys  # a client key: Kafka's broker ignores it, and so do we
    assert ("These configurations '[security.protocol, ssl.key.credentials, ssl.keystore.credentials, "
            "ssl.keystore.filename, ssl.truststore.credentials, ssl.truststore.filename]' were supplied but are "
            "not used yet.") in caplog.messages  # fmt: skip


def test_a_mounted_server_properties_replaces_the_file_and_is_overridden_key_by_key(tmp_path):
    (tmp_path / "server.properties").write_text("node.id=1\n")
    env = {"KAFKA_LISTENERS": "PLAINTEXT://:19092", "KAFKA_NODE_ID": "2"}
    path, keys, dropped = image_config("config/docker.properties", env, "/nowhere", str(tmp_path))
    assert (path, keys, dropped) == (str(tmp_path / "server.properties"), {"listeners": "PLAINTEXT://:19092",
                                                                           "node.id": "2"}, frozenset())  # fmt: skip
    (tmp_path / "server.properties").unlink()
    (tmp_path / "server.properties").mkdir()  # not a file: not used
    assert image_config("config/docker.properties", env, "/nowhere", str(tmp_path))[0] == "config/docker.properties"


def test_without_cluster_id_a_new_dir_gets_the_images_default(tmp_path, caplog):
    with caplog.at_level(logging.INFO, "minibroker"):
        format_cluster_id(tmp_path / "new", None)
    assert read_cluster_id(tmp_path / "new") == DEFAULT_CLUSTER_ID == "5L6g3nShT-eMCtK--X86sw"
    assert 'CLUSTER_ID not set. Setting it to default value: "5L6g3nShT-eMCtK--X86sw"' in caplog.messages
    format_cluster_id(tmp_path / "old", CLUSTER_ID)
    format_cluster_id(tmp_path / "old", "")  # empty is not set, as in the image; a formatted dir keeps its id
    assert read_cluster_id(tmp_path / "old") == CLUSTER_ID


# --- the logging variables (env_logging) ---


def test_the_logging_variables_give_levels():
    settings = log_settings({"KAFKA_LOG4J_ROOT_LOGLEVEL": "warn",
                             "KAFKA_LOG4J_LOGGERS": "kafka.authorizer.logger=WARN, broker.connection = debug,,"
                                                    "kafka.controller=TRACE,x=FATAL,y=ERROR,z=INFO,off=Off,all=ALL"})  # fmt: skip
    assert settings == LogSettings(logging.WARNING, (
        ("kafka.authorizer.logger", logging.WARNING), ("broker.connection", logging.DEBUG),
        ("kafka.controller", 5), ("x", logging.CRITICAL), ("y", logging.ERROR), ("z", logging.INFO),
        ("off", logging.CRITICAL + 10), ("all", 1)))  # fmt: skip
    assert log_settings({"KAFKA_LOG4J_ROOT_LOGLEVEL": "", "KAFKA_LOG4J_LOGGERS": ""}) == LogSettings(None)


def test_the_loggers_get_their_levels_as_broker_logger_configs_report_them(log_levels_restored):
    log_settings({"KAFKA_LOG4J_LOGGERS": "kafka.authorizer.logger=ERROR,never.made.before=TRACE,"
                                         "quiet.one=OFF,loud.one=ALL"}).apply()  # fmt: skip
    levels = {e.name: e.value for e in describe_entries(1, "1")}
    assert [levels[n] for n in ("kafka.authorizer.logger", "never.made.before", "quiet.one", "loud.one")] == [
        "ERROR", "TRACE", "OFF", "ALL"]  # fmt: skip
    assert logging.getLogger("kafka.authorizer.logger").level == logging.ERROR
    assert not logging.getLogger("quiet.one").isEnabledFor(logging.CRITICAL)
    assert logging.getLogger("loud.one").isEnabledFor(TRACE)


@pytest.mark.parametrize(("env", "message"), [
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "LOUD"}, "KAFKA_LOG4J_ROOT_LOGLEVEL: 'LOUD' is not a log level; valid log levels "
                                            "are ALL, DEBUG, ERROR, FATAL, INFO, OFF, TRACE, WARN"),
    ({"KAFKA_LOG4J_LOGGERS": "a=INFO,b=WARNING"}, "KAFKA_LOG4J_LOGGERS: 'WARNING' (logger b) is not a log level"),
    ({"KAFKA_LOG4J_LOGGERS": "a=INFO,b"}, "KAFKA_LOG4J_LOGGERS: 'b' is not logger=level"),
    ({"KAFKA_LOG4J_LOGGERS": "=INFO"}, "KAFKA_LOG4J_LOGGERS: '=INFO' is not logger=level"),
])  # fmt: skip
def test_a_logging_variable_not_understood_stops_the_start(env, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        log_settings(env)


def test_a_key_or_its_older_name_in_the_environment_replaces_both_in_the_file(tmp_path):
    """The image's file holds the variables' keys alone, so KAFKA_LOG_DIR and KAFKA_BROKER_ID win over the
    file's log.dirs and node.id; among the variables (and in a mounted file with them), log.dirs comes before
    log.dir and broker.id must equal node.id, as in Kafka."""
    mnt = tmp_path / "mnt"
    env = {"KAFKA_LOG_DIR": str(tmp_path / "env"), "KAFKA_BROKER_ID": "7"}
    path, keys, dropped = image_config("config/docker.properties", env, "/nowhere", str(mnt))
    assert {"log.dirs", "log.dir", "node.id", "broker.id"} <= dropped
    config = BrokerConfig.load(path, keys, dropped)
    assert (config.log_dir_list(), config.node_id) == ([str(tmp_path / "env")], 7)
    both = {**env, "KAFKA_LOG_DIRS": str(tmp_path / "dirs"), "KAFKA_BROKER_ID": "1"}
    config = BrokerConfig.load(*image_config("config/docker.properties", both, "/nowhere", str(mnt)))
    assert config.log_dir_list() == [str(tmp_path / "dirs")]
    mnt.mkdir()
    (mnt / "server.properties").write_text(f"log.dirs={tmp_path / 'mounted'}\nnode.id=1\n")
    config = BrokerConfig.load(*image_config("config/docker.properties", {**env, "KAFKA_BROKER_ID": "1"},
                                             "/nowhere", str(mnt)))  # fmt: skip
    assert config.log_dir_list() == [str(tmp_path / "mounted")]
    with pytest.raises(ConfigError, match="to the same value as `broker.id`"):
        BrokerConfig.load(*image_config("config/docker.properties", env, "/nowhere", str(mnt)))


def test_listeners_on_0_0_0_0_need_advertised_ones_under_kafka_env_too(tmp_path):
    """KAFKA_LISTENERS on 0.0.0.0 alone stops the start as in Kafka; with KAFKA_ADVERTISED_LISTENERS alone the
    derived listeners are on 0.0.0.0 and advertise the given names."""
    mnt = str(tmp_path / "mnt")
    with pytest.raises(ConfigError, match="cannot use the nonroutable meta-address 0.0.0.0"):
        BrokerConfig.load(*image_config("config/docker.properties", {"KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092"},
                                        "/nowhere", mnt))  # fmt: skip
    env = {"KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://broker:19092,PLAINTEXT_HOST://localhost:9092",
           "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"}  # fmt: skip
    config = BrokerConfig.load(*image_config("config/docker.properties", env, "/nowhere", mnt))
    assert [(x.name, x.host) for x in config.served] == [("PLAINTEXT", "0.0.0.0"), ("PLAINTEXT_HOST", "0.0.0.0")]


def test_a_variable_whose_key_kafka_does_not_know_is_warned_about_and_left_out(tmp_path, caplog):
    """Kafka gets every KAFKA_* variable as a key from the apache/kafka image and ignores those it does not know
    (a Kubernetes Service named kafka, other images' variables); a known key's bad value still stops the start."""
    env = {"KAFKA_PORT": "tcp://10.96.0.12:9092", "KAFKA_SERVICE_HOST": "10.96.0.12",
           "KAFKA_CFG_LISTENERS": "PLAINTEXT://:9092", "KAFKA_LISTENER_NAME_PLAINTEXT_NO_SUCH_KEY": "1",
           "KAFKA_NUM_PARTITIONS": "3", "KAFKA_NUM_REPLICA_FETCHERS": "2"}  # fmt: skip
    with caplog.at_level(logging.WARNING, "minibroker"):
        path, keys, dropped = image_config("config/docker.properties", env, "/nowhere", str(tmp_path))
    assert keys == {"num.partitions": "3", "num.replica.fetchers": "2"}
    assert "KAFKA_PORT sets port, which is not a Kafka broker config: ignored (Kafka removed it; use listeners)" in (
        caplog.messages)  # fmt: skip
    assert sorted(m.split()[0] for m in caplog.messages if "ignored" in m) == [
        "KAFKA_CFG_LISTENERS", "KAFKA_LISTENER_NAME_PLAINTEXT_NO_SUCH_KEY", "KAFKA_PORT", "KAFKA_SERVICE_HOST"]
    assert BrokerConfig.load(path, keys, dropped).num_partitions == 3
    with pytest.raises(ConfigError, match="port: unknown configuration key"):
        BrokerConfig.load(path, {**keys, "port": "9092"}, dropped)  # a file's or an override's key still stops it


def test_variables_are_read_back_as_kafka_reads_the_images_file(tmp_path):
    """The image writes key=value lines and Kafka reads them with Properties.load: escapes are read and leading
    blanks dropped (the broker then trims the value, as Kafka's ConfigDef does)."""
    env = {"KAFKA_SASL_OAUTHBEARER_EXPECTED_ISSUER": "  https:\\/\\/idp.example\\u002ecom ",
           "KAFKA_SUPER_USERS": "User:C:\\admin"}  # fmt: skip
    keys = image_config("config/docker.properties", env, "/nowhere", str(tmp_path))[1]
    assert keys == {"sasl.oauthbearer.expected.issuer": "https://idp.example.com ", "super.users": "User:C:admin"}
