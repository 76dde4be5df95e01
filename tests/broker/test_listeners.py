"""Named listeners (``listener.security.protocol.map``), what each advertises, and socket buffer sizes."""

from __future__ import annotations

import re
import socket

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.listeners import advertised_endpoints, parse_listeners, parse_protocol_map, served_listeners
from broker.server import _set_buffers

PAIR = {"listeners": "INTERNAL://0.0.0.0:29092,EXTERNAL://:9092",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT"}  # fmt: skip


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({k.replace("_", "."): v for k, v in props.items()})


def test_kafkas_default_map_takes_the_four_protocols_and_refuses_other_names():
    assert [x.name for x in parse_listeners("plaintext://:1,PLAINTEXT_X://:2", "listeners",
                                            {"PLAINTEXT": "PLAINTEXT", "PLAINTEXT_X": "PLAINTEXT"})] == [
        "PLAINTEXT", "PLAINTEXT_X"]  # fmt: skip
    assert [x.protocol for x in parse_listeners("SSL://:1,SASL_SSL://:2", "listeners")] == ["SSL", "SASL_SSL"]
    with pytest.raises(ConfigError, match="^Invalid security protocol `TLS` defined in listener.security.protocol.map$"):
        parse_protocol_map("X:TLS")
    with pytest.raises(ConfigError, match="^Error creating broker listeners from 'INTERNAL://:9093': No security "
                                          "protocol defined for listener INTERNAL$"):  # fmt: skip
        parse_listeners("INTERNAL://:9093", "listeners")
    with pytest.raises(ConfigError, match="^requirement failed: Each listener must have a different name, "
                                          "listeners: PLAINTEXT://:1,PLAINTEXT://:2$"):  # fmt: skip
        parse_listeners("PLAINTEXT://:1,PLAINTEXT://:2", "listeners")


@pytest.mark.parametrize(("text", "message"), [
    ("PLAINTEXT://nohost", "Error creating broker listeners from 'PLAINTEXT://nohost': Unable to parse "
                           "PLAINTEXT://nohost to a broker endpoint"),
    ("PLAINTEXT://host:9092/x", "Unable to parse PLAINTEXT://host:9092/x to a broker endpoint"),
    ("PLAINTEXT://host_*:9092", "Unable to parse PLAINTEXT://host_*:9092 to a broker endpoint"),
    ("PLAINTEXT://127.0.0.1:99999", "listeners: port out of range:99999"),
    ("PLAINTEXT://127.0.0.1:65536", "listeners: port out of range:65536"),
    ("PLAINTEXT://127.0.0.1:-1", "listeners: port out of range:-1"),
    ("PLAINTEXT://127.0.0.1:99999999999", 'Error creating broker listeners from \'PLAINTEXT://127.0.0.1:99999999999\': '
                                          'For input string: "99999999999"'),
])  # fmt: skip
def test_a_listener_kafka_cannot_parse_or_bind_stops_the_start(text, message):
    """Kafka's listener syntax (SocketServerConfigs.listenerListToEndPoints) and a port a socket can have: Kafka
    fails to bind 99999 ("port out of range"), where the broker bound another port (getaddrinfo takes it modulo
    65536)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        served_listeners(_config(listeners=text))


def test_listener_hosts_as_kafka_reads_them():
    parsed = parse_listeners("PLAINTEXT://[::1]:1,SSL://::1:2,SASL_SSL://my-host.example_1:65535", "listeners")
    assert [(x.host, x.port) for x in parsed] == [("::1", 1), ("::1", 2), ("my-host.example_1", 65535)]


def test_protocol_map_names_are_case_insensitive_and_must_be_pairs():
    assert parse_protocol_map(" internal:plaintext , EXTERNAL:SASL_SSL") == {
        "INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}  # fmt: skip
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        parse_protocol_map("INTERNAL")


def test_each_listener_advertises_its_own_address():
    config = _config(**PAIR, advertised_listeners="INTERNAL://broker:29092")
    bound = [("INTERNAL", "0.0.0.0", 29092), ("EXTERNAL", "0.0.0.0", 9092), ("EXTERNAL", "::", 9092)]
    assert advertised_endpoints(config, bound) == {
        "INTERNAL": ("broker", 29092),  # advertised
        "EXTERNAL": (socket.getfqdn(), 9092),  # not advertised, no host in listeners: this machine's name
    }


def test_a_listener_without_an_advertised_entry_advertises_its_listeners_entry_as_written():
    """Kafka advertises the ``listeners`` entry itself (``localhost`` stays ``localhost``, not the address bound);
    only an empty host becomes this machine's name, and port 0 the port bound."""
    config = _config(listeners="PLAINTEXT://localhost:0,SSL://[::]:9093,SASL_PLAINTEXT://:0")
    bound = [("PLAINTEXT", "127.0.0.1", 40001), ("SSL", "::", 9093), ("SASL_PLAINTEXT", "0.0.0.0", 40002)]
    assert advertised_endpoints(config, bound) == {"PLAINTEXT": ("localhost", 40001), "SSL": ("::", 9093),
                                                   "SASL_PLAINTEXT": (socket.getfqdn(), 40002)}  # fmt: skip


_COMBINED = {"listeners": "PLAINTEXT://:9092,CONTROLLER://0.0.0.0:9093", "controller.listener.names": "CONTROLLER",
             "advertised.listeners": "PLAINTEXT://localhost:9092", "process.roles": "broker,controller",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}  # fmt: skip


@pytest.mark.parametrize(("props", "refused"), [
    ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, True),
    ({"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://broker:9092"}, False),
    ({"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, True),
    ({"listeners": "PLAINTEXT://[::]:9092"}, False),  # Kafka refuses 0.0.0.0 alone
    ({**PAIR, "advertised.listeners": "EXTERNAL://localhost:9092"}, False),  # INTERNAL has no advertised address
    (_COMBINED, True),  # the controller listener advertises its listeners entry
    ({**_COMBINED, "advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://broker:9093"}, False),
])  # fmt: skip
def test_advertising_0_0_0_0_stops_the_start_as_in_kafka(props, refused):
    """KafkaConfig.validateValues: the broker's and the controller's advertised endpoints (a listener with no
    advertised.listeners entry advertises its listeners one) may not be the meta-address 0.0.0.0."""
    config = BrokerConfig.from_props(props)
    if not refused:
        served_listeners(config)
        return
    with pytest.raises(ConfigError, match=r"^requirement failed: advertised.listeners cannot use the nonroutable "
                                          r"meta-address 0.0.0.0. Use a routable IP address.$"):  # fmt: skip
        served_listeners(config)


def test_controller_listeners_are_not_bound_and_names_must_match():
    config = _config(listeners="PLAINTEXT://:9092,CONTROLLER://:9093", controller_listener_names="CONTROLLER",
                     listener_security_protocol_map="CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT")  # fmt: skip
    assert [x.name for x in served_listeners(config)] == ["PLAINTEXT"]
    with pytest.raises(ConfigError, match="other than the controller's"):
        served_listeners(_config(listeners="CONTROLLER://:9093", controller_listener_names="CONTROLLER",
                                 listener_security_protocol_map="CONTROLLER:PLAINTEXT"))  # fmt: skip
    three = {**PAIR, "listener.security.protocol.map": PAIR["listener.security.protocol.map"] + ",OTHER:PLAINTEXT"}
    with pytest.raises(ConfigError, match="advertised.listeners: OTHER is not one of the listeners"):
        served_listeners(_config(**three, advertised_listeners="OTHER://x:1"))
    with pytest.raises(ConfigError, match="inter.broker.listener.name: REPLICATION"):
        served_listeners(_config(**PAIR, inter_broker_listener_name="REPLICATION"))


@pytest.mark.parametrize("size", [65536, -1])
def test_socket_buffer_sizes_are_applied_as_kafka_does(size):
    config = _config(socket_send_buffer_bytes=str(size), socket_receive_buffer_bytes=str(size))
    with socket.socket() as fresh, socket.socket() as sock:
        _set_buffers(sock, config)
        for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
            got = sock.getsockopt(socket.SOL_SOCKET, option)
            # Linux doubles the size asked for (bookkeeping); -1 leaves the OS default untouched
            assert got == (2 * size if size != -1 else fresh.getsockopt(socket.SOL_SOCKET, option))
