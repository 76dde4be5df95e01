"""Named listeners (``listener.security.protocol.map``), what each advertises, and socket buffer sizes."""

from __future__ import annotations

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
    with pytest.raises(ConfigError, match="listener X uses TLS, which is not a security protocol"):
        parse_listeners("X://:9093", "listeners", {"X": "TLS"})
    with pytest.raises(ConfigError, match="no security protocol defined for listener INTERNAL"):
        parse_listeners("INTERNAL://:9093", "listeners")
    with pytest.raises(ConfigError, match="different name, PLAINTEXT is given twice"):
        parse_listeners("PLAINTEXT://:1,PLAINTEXT://:2", "listeners")
    with pytest.raises(ConfigError, match="is not NAME://host:port"):
        parse_listeners("PLAINTEXT://nohost", "listeners")


def test_protocol_map_names_are_case_insensitive_and_must_be_pairs():
    assert parse_protocol_map(" internal:plaintext , EXTERNAL:SASL_SSL") == {
        "INTERNAL": "PLAINTEXT", "EXTERNAL": "SASL_SSL"}  # fmt: skip
    with pytest.raises(ConfigError, match="listener.security.protocol.map"):
        parse_protocol_map("INTERNAL")


def test_each_listener_advertises_its_own_address():
    config = _config(**PAIR, advertised_listeners="INTERNAL://broker:29092")
    bound = [("INTERNAL", "0.0.0.0", 29092), ("EXTERNAL", "127.0.0.1", 9092), ("EXTERNAL", "::1", 9092)]
    assert advertised_endpoints(config, bound) == {
        "INTERNAL": ("broker", 29092),  # advertised
        "EXTERNAL": ("127.0.0.1", 9092),  # not advertised: its first bound address
    }
    everywhere = advertised_endpoints(_config(**PAIR), [("INTERNAL", "0.0.0.0", 1), ("EXTERNAL", "::", 2)])
    assert everywhere == {"INTERNAL": (socket.getfqdn(), 1), "EXTERNAL": (socket.getfqdn(), 2)}


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
