"""``listeners`` / ``advertised.listeners`` in Kafka's ``NAME://host:port`` form.

``PLAINTEXT://:9092`` binds every interface; ``PLAINTEXT://127.0.0.1:0`` binds
an ephemeral port (tests). What Metadata returns to clients comes from
``advertised.listeners`` when set (a broker in docker-compose advertises the
service name, e.g. ``PLAINTEXT://broker:9092``), else from the bound address,
with an empty or wildcard host replaced by this machine's host name, as
Kafka does. Only PLAINTEXT is supported; other security protocols are refused
at startup.
"""

from __future__ import annotations

import socket

import attrs

from .config import ConfigError


@attrs.frozen
class Listener:
    name: str
    host: str
    port: int


def parse_listeners(text: str, key: str) -> list[Listener]:
    result = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, address = item.partition("://")
        host, colon, port = address.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"{key}: {item!r} is not NAME://host:port")
        if name.upper() != "PLAINTEXT":
            raise ConfigError(f"{key}: only PLAINTEXT listeners are supported, not {name!r}")
        result.append(Listener(name.upper(), host.strip("[]"), int(port)))
    if not result and key == "listeners":
        raise ConfigError("listeners: at least one listener is required")
    return result


def advertised_endpoint(advertised: list[Listener], bound: list[tuple[str, int]]) -> tuple[str, int]:
    """The host and port Metadata gives clients."""
    if advertised:
        return advertised[0].host or socket.getfqdn(), advertised[0].port
    host, port = bound[0][:2]
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    return host, port
