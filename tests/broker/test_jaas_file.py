"""The static JAAS file of ``KAFKA_OPTS`` (``broker/jaas_file.py``) and which entries a SASL listener's mechanism
uses (``broker/jaas_context.py``), as Kafka's JaasContext picks them; every way the start stops over it."""

from __future__ import annotations

import logging
import os

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.env_config import check_sasl_opts, image_config
from broker.env_ssl import ImageScriptError
from broker.jaas_file import JaasFile, system_properties
from broker.listeners import served_listeners
from broker.sasl_auth import AuthenticationFailed
from broker.sasl_oauthbearer import ValidatorOptions
from broker.sasl_plain import check_plain_token

from .test_jaas import IMAGE_EXAMPLE, PLAIN, SCRAM

OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
SASL = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,OTHER:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}  # fmt: skip
NOT_FOUND = ("Could not find a 'KafkaServer' or '{}.KafkaServer' entry in the JAAS configuration. "
             "System property 'java.security.auth.login.config' is {}")  # fmt: skip


def _file(tmp_path, text: str, name: str = "kafka_server_jaas.conf") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _listeners(tmp_path, kafka_opts: str, **props) -> dict:
    """The SASL settings of each listener of a broker started with ``KAFKA_OPTS=kafka_opts``."""
    config = BrokerConfig.load(None, {"log.dirs": str(tmp_path / "data"), **SASL, **props}, frozenset(),
                               JaasFile.from_kafka_opts(kafka_opts))  # fmt: skip
    return {lst.name: lst.sasl for lst in served_listeners(config)}


def _refused(tmp_path, kafka_opts: str, message: str, **props) -> None:
    with pytest.raises(ConfigError) as caught:
        _listeners(tmp_path, kafka_opts, **props)
    assert str(caught.value) == message


# --- KAFKA_OPTS ----------------------------------------------------------------------------------------------------


def test_kafka_opts_is_split_as_the_start_script_splits_it():
    opts = ' -Xmx1G  -Dx=1\t-Djava.security.auth.login.config="/a b.conf" -Dflag -Dx=2 -D -Dy==z\n-cp q'
    assert system_properties(opts) == {"x": "2", "java.security.auth.login.config": '"/a', "flag": "", "y": "=z"}
    assert JaasFile.from_kafka_opts(None) == JaasFile(None, {})


def test_the_image_example_file_serves_plain_on_every_listener(tmp_path):
    path = _file(tmp_path, IMAGE_EXAMPLE)
    for opts in (f"-Djava.security.auth.login.config={path}", f"-Djava.security.auth.login.config=={path}",
                 f"-Dconf.dir={tmp_path} -Djava.security.auth.login.config=${{conf.dir}}${{/}}kafka_server_jaas.conf",
                 f"-Djava.security.auth.login.config=file:{path}"):  # fmt: skip
        sasl = _listeners(tmp_path, opts, **{"sasl.enabled.mechanisms": "PLAIN"})
        assert sasl["SASL_PLAINTEXT"].plain_users == sasl["OTHER"].plain_users == {"admin": "admin-secret",
                                                                                    "alice": "alice-secret"}
        assert sasl["PLAINTEXT"] is None


# --- which section, and precedence -------------------------------------------------------------------------------

SECTIONS = f"""
KafkaServer {{
    {PLAIN} required user_admin="from-global" user_bob="bob-secret";
    {SCRAM} required user_ignored="not a plain user";
    {PLAIN} required user_admin="second entry" user_carol="carol-secret";
}};
sasl_plaintext.KafkaServer {{ {PLAIN} required user_admin="from-listener-section"; {SCRAM} required; }};
Client {{ org.apache.zookeeper.server.auth.DigestLoginModule required username="zk" password="zk"; }};
"""


def test_the_listener_key_then_the_listeners_section_then_kafkaserver(tmp_path):
    opts = f"-Djava.security.auth.login.config={_file(tmp_path, SECTIONS)}"
    sasl = _listeners(tmp_path, opts)
    assert sasl["SASL_PLAINTEXT"].plain_users == {"admin": "from-listener-section"}
    # the global section: PLAIN takes its PlainLoginModule entries only, the first value of a user winning
    assert sasl["OTHER"].plain_users == {"admin": "from-global", "bob": "bob-secret", "carol": "carol-secret"}
    assert sasl["OTHER"].mechanisms == ("PLAIN", "SCRAM-SHA-256")
    key = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": f'{PLAIN} required user_admin="from-key";'}
    sasl = _listeners(tmp_path, opts, **key)
    assert sasl["SASL_PLAINTEXT"].plain_users == {"admin": "from-key"}  # and SCRAM still has the section


def test_no_jaas_configuration_stops_the_start_with_kafkas_message(tmp_path):
    _refused(tmp_path, "", NOT_FOUND.format("sasl_plaintext", "not set"))
    _refused(tmp_path, "-Xmx1G", NOT_FOUND.format("sasl_plaintext", "not set"))
    client_only = _file(tmp_path, f'Client {{ {PLAIN} required; }};\nKafkaServer {{ }};\nKafkaClient {{ {PLAIN} '
                                  'required; };')  # fmt: skip
    _refused(tmp_path, f"-Djava.security.auth.login.config=={client_only}",
             NOT_FOUND.format("sasl_plaintext", "=" + client_only))  # the property as given
    listener_only = _file(tmp_path, f"sasl_plaintext.KafkaServer {{ {PLAIN} required user_a=\"b\"; }};", "l.conf")
    _refused(tmp_path, f"-Djava.security.auth.login.config={listener_only}", NOT_FOUND.format("other", listener_only))


def test_a_file_no_listener_needs_is_never_read(tmp_path):
    opts = f"-Djava.security.auth.login.config={tmp_path}/absent.conf"
    keys = {f"listener.name.{l}.{m}.sasl.jaas.config": f'{module} required user_a="b";'
            for l in ("sasl_plaintext", "other") for m, module in (("plain", PLAIN), ("scram-sha-256", SCRAM))}
    assert _listeners(tmp_path, opts, **keys)["OTHER"].plain_users == {"a": "b"}
    _listeners(tmp_path, opts, listeners="PLAINTEXT://127.0.0.1:0")


def test_a_section_without_plain_users_serves_plain_as_kafka_does_every_login_failing(tmp_path, caplog):
    opts = f"-Djava.security.auth.login.config={_file(tmp_path, f'KafkaServer {{ {SCRAM} required; }};')}"
    with caplog.at_level(logging.WARNING, "minibroker"):
        users = _listeners(tmp_path, opts)["SASL_PLAINTEXT"].plain_users
    assert users == {} and "every SASL/PLAIN login on listener SASL_PLAINTEXT will fail" in caplog.text
    with pytest.raises(AuthenticationFailed, match="^Authentication failed: Invalid username or password$"):
        check_plain_token(b"\x00admin\x00admin-secret", users)


def test_oauthbearer_takes_the_one_entry_of_its_section(tmp_path):
    one = _file(tmp_path, f'KafkaServer {{ {OAUTH} required unsecuredValidatorRequiredScope="read write"; }};')
    oauth = {"sasl.enabled.mechanisms": "OAUTHBEARER"}
    sasl = _listeners(tmp_path, f"-Djava.security.auth.login.config={one}", **oauth)
    assert sasl["OTHER"].oauthbearer == ValidatorOptions(required_scope=("read", "write"))
    two = _file(tmp_path, f"KafkaServer {{ {OAUTH} required; {PLAIN} required; }};", "two.conf")
    _refused(tmp_path, f"-Djava.security.auth.login.config={two}", f"section KafkaServer of the JAAS file {two}: Must "
             "supply exactly 1 non-null JAAS mechanism configuration (size was 2)",
             **{"sasl.enabled.mechanisms": "OAUTHBEARER"})  # fmt: skip


def test_modules_kafka_disallows_or_we_cannot_load_stop_the_start(tmp_path):
    jndi = "com.sun.security.auth.module.JndiLoginModule"
    path = _file(tmp_path, f"KafkaServer {{ {PLAIN} required user_a=\"b\"; {jndi} optional; }};")
    source = f"section KafkaServer of the JAAS file {path}"
    _refused(tmp_path, f"-Djava.security.auth.login.config={path}", f"{source}: {jndi} is not allowed. Update System "
             f"property 'org.apache.kafka.disallowed.login.modules' to allow {jndi}")  # fmt: skip
    allowed = f"-Dorg.apache.kafka.disallowed.login.modules={PLAIN} -Djava.security.auth.login.config={path}"
    _refused(tmp_path, allowed, f"{source}: {PLAIN} is not allowed. Update System property "
             f"'org.apache.kafka.disallowed.login.modules' to allow {PLAIN}")  # fmt: skip
    krb5 = _file(tmp_path, f"KafkaServer {{ com.sun.security.auth.module.Krb5LoginModule required; }};", "k.conf")
    with pytest.raises(ConfigError, match="Krb5LoginModule cannot be used \\(no Java class is loaded here\\)"):
        _listeners(tmp_path, f"-Djava.security.auth.login.config={krb5}")


def test_a_listener_key_holds_one_entry(tmp_path):
    key = "listener.name.sasl_plaintext.plain.sasl.jaas.config"
    _refused(tmp_path, "", f"{key}: JAAS config property contains 2 login modules, should be 1 module",
             **{key: f'{PLAIN} required user_a="b"; {PLAIN} required;'})
    _refused(tmp_path, "", f"{key}: Login module not specified in JAAS config", **{key: " /* none */ "})


# --- the file that cannot be read ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("setting", "message"), [
    ("{dir}/absent.conf", "java.security.auth.login.config={dir}/absent.conf: {dir}/absent.conf (No such file or "
                          "directory)"),
    ("={dir}/absent.conf", "java.security.auth.login.config=={dir}/absent.conf: {dir}/absent.conf (No such file "
                            "or directory)"),
    ("{dir}", "java.security.auth.login.config={dir}: Configuration Error: No such file or directory ({dir}: Is a "
              "directory)"),
    ("${{no.such.property}}/x.conf", "java.security.auth.login.config=${{no.such.property}}/x.conf: unable to "
                                     "expand property no.such.property"),
    ("https://example.com/jaas.conf", "java.security.auth.login.config=https://example.com/jaas.conf: only a file "
                                      "or a file: URL can be read here"),
])  # fmt: skip
def test_a_file_that_cannot_be_read_stops_the_start(tmp_path, setting, message):
    setting = setting.format(dir=tmp_path)
    _refused(tmp_path, f"-Djava.security.auth.login.config={setting}", message.format(dir=tmp_path))


@pytest.mark.parametrize(("text", "message"), [
    (f"KafkaServer {{\n  {PLAIN} required\n    user_a=\"b\"\n}};", "Line 4: expected [option key], found [}]"),
    ("KafkaServer {\n  x required a=\"${nope}\";\n};", "Line 2: unable to expand property nope"),
    ("KafkaServer {\n  x required a=\"${empty}\";\n};", "Line 2: system property [${empty}] expanded to empty value"),
])  # fmt: skip
def test_a_file_that_does_not_parse_stops_the_start_naming_file_and_line(tmp_path, text, message):
    path = _file(tmp_path, text)
    _refused(tmp_path, f"-Dempty= -Djava.security.auth.login.config={path}",
             f"JAAS file {path}: Configuration Error: {message}")


def test_option_values_expand_system_properties(tmp_path):
    text = f'KafkaServer {{ {PLAIN} required user_admin="${{pw}}-${{user.home}}" user_x="${{{{kept}}}}"; }};'
    opts = f"-Dpw=secret -Djava.security.auth.login.config={_file(tmp_path, text)}"
    users = _listeners(tmp_path, opts, **{"sasl.enabled.mechanisms": "PLAIN"})["OTHER"].plain_users
    assert users == {"admin": f"secret-{os.path.expanduser('~')}", "x": "${{kept}}"}


# --- Kafka's other checks of SASL settings, and the image's -------------------------------------------------------


def test_the_inter_broker_mechanism_must_be_enabled_on_a_sasl_inter_broker_listener(tmp_path):
    opts = f"-Djava.security.auth.login.config={_file(tmp_path, SECTIONS)}"
    _refused(tmp_path, opts, "requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
             "sasl.enabled.mechanisms when SASL is used for inter-broker communication",
             **{"inter.broker.listener.name": "SASL_PLAINTEXT"})  # GSSAPI unless set  # fmt: skip
    sasl = _listeners(tmp_path, opts, **{"inter.broker.listener.name": "SASL_PLAINTEXT",
                                         "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"})  # fmt: skip
    assert sasl["SASL_PLAINTEXT"].mechanisms == ("PLAIN", "SCRAM-SHA-256")
    _listeners(tmp_path, opts, **{"sasl.mechanism.controller.protocol": "PLAIN",  # accepted: no controller here
                                  "share.coordinator.state.topic.replication.factor": "1",
                                  "share.coordinator.state.topic.min.isr": "1"})  # fmt: skip
    with pytest.raises(ConfigError, match="^Invalid value 0 for configuration share.coordinator.state.topic.min.isr: Value must be "
                                          "at least 1$"):
        _listeners(tmp_path, opts, **{"share.coordinator.state.topic.min.isr": "0"})


@pytest.mark.parametrize(("advertised", "applies"), [
    ("SASL_PLAINTEXT://localhost:9094", True),
    ("PLAINTEXT://broker:9092,SASL_SSL://broker:9094", True),
    ("MY_SASL_LISTENER://localhost:9094", True),  # the script looks at the text, not the protocol map
    ("PLAINTEXT://localhost:9092,CLIENT://broker:9093", False),
    ("", False),
])  # fmt: skip
def test_the_image_requires_kafka_opts_for_an_advertised_sasl_endpoint(advertised, applies, caplog):
    env = {"KAFKA_ADVERTISED_LISTENERS": advertised}
    for opts in (None, ""):
        if opts is not None:
            env["KAFKA_OPTS"] = opts
        if applies:
            with pytest.raises(ImageScriptError, match="^KAFKA_OPTS environment variable not set$") as caught:
                check_sasl_opts(env)
            assert caught.value.exit_status == 1
        else:
            check_sasl_opts(env)
    with caplog.at_level(logging.WARNING, "minibroker"):
        check_sasl_opts({**env, "KAFKA_OPTS": "-Xmx1G"})
    warned = "KAFKA_OPTS should contain 'java.security.auth.login.config' property." in caplog.messages
    assert warned == applies


def test_serve_kafka_env_checks_kafka_opts_after_the_ssl_helpers(tmp_path):
    env = {"KAFKA_ADVERTISED_LISTENERS": "SASL_SSL://localhost:9094"}
    with pytest.raises(ImageScriptError, match="^KAFKA_SSL_KEYSTORE_FILENAME environment variable not set$"):
        image_config("config/docker.properties", env, str(tmp_path), str(tmp_path))
    env = {"KAFKA_ADVERTISED_LISTENERS": "SASL_PLAINTEXT://localhost:9094"}
    with pytest.raises(ImageScriptError, match="^KAFKA_OPTS environment variable not set$"):
        image_config("config/docker.properties", env, str(tmp_path), str(tmp_path))
    keys = image_config("config/docker.properties", {**env, "KAFKA_OPTS": "-Dx=1"}, str(tmp_path), str(tmp_path))[1]
    assert keys == {"advertised.listeners": "SASL_PLAINTEXT://localhost:9094",
                    "listeners": "SASL_PLAINTEXT://0.0.0.0:9094"}  # KAFKA_OPTS is no key  # fmt: skip
