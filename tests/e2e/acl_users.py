"""The SASL/PLAIN users and the ACL-enforcing broker that the authorization end-to-end tests share (``acl_broker`` in conftest).

``start_acl_broker(directory)`` starts a broker process with Kafka's
StandardAuthorizer and a SASL_PLAINTEXT listener (after a PLAINTEXT one with
``plaintext=True``) whose PLAIN users are ``admin`` (the one super user),
``alice`` and ``bob``, each with the password ``<name>-secret``.
``confluent_conf``, ``kafka_python_conf`` and ``java_login`` are the client
settings that log in as one of them.
"""

from __future__ import annotations

from pathlib import Path

from .harness import BrokerProcess

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
JAAS = (f'{PLAIN_MODULE} required username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret" user_bob="bob-secret";')  # fmt: skip
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def start_acl_broker(directory: Path, *, plaintext: bool = False) -> BrokerProcess:
    listeners = ("PLAINTEXT://127.0.0.1:0," if plaintext else "") + "SASL_PLAINTEXT://127.0.0.1:0"
    return BrokerProcess(directory, {
        "listeners": listeners, "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:admin",
    }).start()  # fmt: skip


def sasl_bootstrap(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.ports[-1]}"


def confluent_conf(broker: BrokerProcess, who: str) -> dict:
    return {"bootstrap.servers": sasl_bootstrap(broker), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "PLAIN", "sasl.username": who, "sasl.password": f"{who}-secret"}  # fmt: skip


def kafka_python_conf(broker: BrokerProcess, who: str) -> dict:
    return {"bootstrap_servers": sasl_bootstrap(broker), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": who, "sasl_plain_password": f"{who}-secret"}  # fmt: skip


def java_login(who: str) -> str:
    """The Java client's properties (one per line) that log in as ``who``."""
    return (f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={PLAIN_MODULE} required username="{who}" password="{who}-secret";')  # fmt: skip
