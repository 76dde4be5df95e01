"""``listeners`` / ``advertised.listeners`` in Kafka's ``NAME://host:port`` form.

Each entry is parsed as Kafka parses it (``[host]`` for IPv6, a port that
fits a socket) and a bad one refused in Kafka's words ("Error creating broker
listeners from '...': Unable to parse ... to a broker endpoint").

``PLAINTEXT://:9092`` binds every interface; ``PLAINTEXT://127.0.0.1:0`` binds
an ephemeral port (tests). A listener's name maps to its security protocol
through ``listener.security.protocol.map`` (Kafka's default maps each protocol
to itself), so the usual docker-compose pair works as in Kafka::

    listeners=INTERNAL://0.0.0.0:29092,EXTERNAL://0.0.0.0:9092
    advertised.listeners=INTERNAL://broker:29092,EXTERNAL://localhost:9092
    listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT

Metadata, DescribeCluster and FindCoordinator answer each client with the
advertised address of the listener it connected to: a container gets
``broker:29092``, the host ``localhost:9092``. A listener with no advertised
entry advertises its ``listeners`` entry as written, an empty host replaced by
this machine's host name and port 0 by the port bound, as Kafka does; and as
Kafka, the start stops if ``0.0.0.0`` would be advertised ("advertised.listeners
cannot use the nonroutable meta-address 0.0.0.0"), so a listener bound to
``0.0.0.0`` needs an ``advertised.listeners`` entry. All four of Kafka's security
protocols are served: PLAINTEXT, SSL (TLS, ``ssl_config.py``), SASL_PLAINTEXT
and SASL_SSL (SASL/PLAIN and SCRAM, ``sasl_config.py``, over TLS for the
latter). A listener's settings are checked here, so a bad one stops the start;
a listener mapped to another protocol name is refused.
Listeners named in ``controller.listener.names`` (a KRaft combined-mode file)
are not bound: there is no controller quorum to serve. DescribeQuorum v2
reports them all the same, as this node's endpoints as a voter
(``controller_endpoints``): Kafka's static quorum (``controller.quorum.voters``)
gives its voters the address of their entry there under the first controller
listener name; without an entry for this node, the controller listeners of
``listeners`` are taken, advertised as the broker's listeners are.
"""

from __future__ import annotations

import re
import socket
import ssl

import attrs

from .config import ConfigError
from .sasl_config import SaslSettings, enabled_mechanisms, sasl_settings
from .security_keys import KAFKA_PROTOCOL_MAP, SECURITY_PROTOCOLS
from .ssl_config import ssl_context

SERVED_PROTOCOLS = SECURITY_PROTOCOLS  # all four of Kafka's
_MAP = "listener.security.protocol.map"
_ENDPOINT = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")  # Kafka's listener syntax


@attrs.frozen
class Listener:
    name: str
    host: str
    port: int
    protocol: str = "PLAINTEXT"
    sasl: SaslSettings | None = attrs.field(default=None, eq=False, hash=False)  # SASL_*: mechanisms
    tls: ssl.SSLContext | None = attrs.field(default=None, eq=False, hash=False)  # SSL, SASL_SSL


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map``: listener name -> security protocol, both upper-cased; each protocol
    must be one of Kafka's (``KafkaConfig.effectiveListenerSecurityProtocolMap``)."""
    result: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.rpartition(":")  # at the last colon, as Kafka's Csv.parseCsvMap
        if not sep or not name.strip() or not protocol.strip():
            raise ConfigError(f"Error parsing configuration property '{_MAP}': {item} is not NAME:PROTOCOL", _MAP)
        if protocol.strip().upper() not in SERVED_PROTOCOLS:
            raise ConfigError(f"Invalid security protocol `{protocol.strip()}` defined in {_MAP}", _MAP)
        result[name.strip().upper()] = protocol.strip().upper()
    return result


def parse_listeners(text: str, key: str, protocols: dict[str, str] | None = None) -> list[Listener]:
    """The listeners of ``text`` as Kafka parses them (``SocketServerConfigs.listenerListToEndPoints``, then
    ``CoreUtils``'s checks), in its words: ``NAME://host:port`` (``[host]`` for IPv6), each name mapped to a
    security protocol and given once, each port one a socket can have."""
    protocols = parse_protocol_map(KAFKA_PROTOCOL_MAP) if protocols is None else protocols
    result: list[Listener] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        found = _ENDPOINT.fullmatch(item)
        if not found:
            raise _refused(key, text, f"Unable to parse {item} to a broker endpoint")
        name, host, port = found.group(1).upper(), found.group(2), int(found.group(3))
        if not -(2**31) <= port < 2**31:  # Java's Integer.parseInt
            raise _refused(key, text, f'For input string: "{found.group(3)}"')
        if name not in protocols:
            raise _refused(key, text, f"No security protocol defined for listener {name}")
        if any(other.name == name for other in result):
            raise ConfigError(f"requirement failed: Each listener must have a different name, {key}: {text}", key)
        if not 0 <= port <= 65535:  # Kafka's bind (InetSocketAddress) or broker registration (uint16) fails
            raise ConfigError(f"{key}: port out of range:{port}", key)
        result.append(Listener(name, host, port, protocols[name]))
    return result


def _refused(key: str, text: str, reason: str) -> ConfigError:
    return ConfigError(f"Error creating broker listeners from '{text}': {reason}", key)


def served_listeners(config, *, contexts: bool = True) -> list[Listener]:
    """The listeners to bind: ``listeners`` without the controller's; at least one must be left.
    ``contexts=False``: without their SASL settings and TLS contexts."""
    protocols = parse_protocol_map(config.listener_security_protocol_map)
    controllers = _controller_names(config)
    served = [lst for lst in _all_listeners(config, protocols) if lst.name not in controllers]
    if not served:
        raise ConfigError("listeners: at least one listener other than the controller's is required")
    names = {lst.name for lst in served}
    inter = inter_broker_listener_name(config)
    named = config.inter_broker_listener_name.strip()
    key = "inter.broker.listener.name" if named else "security.inter.broker.protocol"
    if key in config.explicit and inter not in names:  # by default no listener needs to be PLAINTEXT
        raise ConfigError(f"{key}: {inter} is not one of the listeners {sorted(names)}")
    _check_inter_broker_mechanism(config, next((lst for lst in served if lst.name == inter), None))
    if contexts:
        served = [_with_settings(config, lst) for lst in served]
    for adv in parse_listeners(config.advertised_listeners, "advertised.listeners", protocols):
        if adv.name not in names and adv.name not in controllers:
            raise ConfigError(f"advertised.listeners: {adv.name} is not one of the listeners {sorted(names)}")
    _check_routable(config, protocols, controllers)
    return served


def _check_routable(config, protocols: dict[str, str], controllers: list[str]) -> None:
    """Kafka's refusal to advertise ``0.0.0.0`` (``KafkaConfig.validateValues``): what the broker and
    controller listeners advertise (``advertised.listeners``, else ``listeners``; a controller listener left
    out of ``advertised.listeners`` advertises its ``listeners`` entry) must not be that address."""
    listeners = _all_listeners(config, protocols)
    advertised = parse_listeners(config.advertised_listeners, "advertised.listeners", protocols)
    if not config.advertised_listeners.strip():
        advertised = listeners
    named = {lst.name for lst in advertised}
    advertised += [lst for lst in listeners if lst.name in controllers and lst.name not in named]
    if any(lst.host == "0.0.0.0" for lst in advertised):
        raise ConfigError("requirement failed: advertised.listeners cannot use the nonroutable meta-address "
                          "0.0.0.0. Use a routable IP address.")


def inter_broker_listener_name(config) -> str:
    """The inter-broker listener's name as Kafka derives it (``KafkaConfig.interBrokerListenerName``):
    ``inter.broker.listener.name`` upper-cased, else the listener named after ``security.inter.broker.protocol``
    (``PLAINTEXT`` unless set). Setting both is a ``ConfigError``, as in Kafka, even if they agree."""
    name = config.inter_broker_listener_name.strip().upper()
    if name and "security.inter.broker.protocol" in config.explicit:
        raise ConfigError("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.")
    return name or config.security_inter_broker_protocol


def with_current_tls(config, listeners: list[Listener]) -> list[Listener]:
    """``listeners`` with TLS contexts made again from ``config`` as it is now (after the stored dynamic
    configs were applied: a keystore rotated at runtime is the one served after a restart)."""
    return [attrs.evolve(lst, tls=ssl_context(config, lst.name)) if lst.tls is not None else lst for lst in listeners]


def _check_inter_broker_mechanism(config, inter: Listener | None) -> None:
    """Kafka's check of a SASL inter-broker listener (``inter_broker_listener_name``):
    ``sasl.mechanism.inter.broker.protocol`` (GSSAPI unless set) must be enabled on it."""
    if inter is None or not inter.protocol.startswith("SASL_"):
        return
    if config.sasl_mechanism_inter_broker_protocol.strip().upper() not in enabled_mechanisms(config, inter.name):
        raise ConfigError("requirement failed: sasl.mechanism.inter.broker.protocol must be included in "
                          "sasl.enabled.mechanisms when SASL is used for inter-broker communication")


def _with_settings(config, listener: Listener) -> Listener:
    """``listener`` with its SASL mechanisms and users, and its TLS context; or the start stops here."""
    sasl = sasl_settings(config, listener.name) if listener.protocol.startswith("SASL_") else None
    tls = ssl_context(config, listener.name) if listener.protocol.endswith("SSL") else None
    return attrs.evolve(listener, sasl=sasl, tls=tls)


def _controller_names(config) -> list[str]:
    return [n.strip().upper() for n in config.controller_listener_names.split(",") if n.strip()]


def _all_listeners(config, protocols: dict[str, str]) -> list[Listener]:
    """Every listener of ``listeners``, the controller's too."""
    return parse_listeners(config.listeners, "listeners", protocols)


def controller_endpoints(config) -> list[tuple[str, str, int]]:
    """``(listener name, host, port)`` of this node as a controller; none without ``controller.listener.names``."""
    names = _controller_names(config)
    if not names:
        return []
    for entry in filter(None, (part.strip() for part in config.controller_quorum_voters.split(","))):
        node, _, address = entry.partition("@")
        host, colon, port = address.rpartition(":")
        if node.strip() == str(config.node_id) and colon and port.isdigit():
            return [(names[0], host.strip("[]"), int(port))]
    protocols = parse_protocol_map(config.listener_security_protocol_map)
    controllers = [(lst.name, lst.host, lst.port) for lst in _all_listeners(config, protocols) if lst.name in names]
    return [(name, *endpoint) for name, endpoint in advertised_endpoints(config, controllers).items()]


def advertised_endpoints(config, bound: list[tuple[str, str, int]]) -> dict[str, tuple[str, int]]:
    """Per listener name, the host and port Metadata gives clients that connected to it: its
    ``advertised.listeners`` entry, else its ``listeners`` one, as configured (``localhost`` stays
    ``localhost``); an empty host is this machine's name and port 0 the port bound, as Kafka's
    ``ListenerInfo`` resolves them. ``bound``: ``(listener name, host, port)`` of each bound socket."""
    protocols = parse_protocol_map(config.listener_security_protocol_map)
    configured = {lst.name: lst for lst in _all_listeners(config, protocols)}
    configured.update((a.name, a) for a in parse_listeners(config.advertised_listeners, "advertised.listeners",
                                                           protocols))  # fmt: skip
    result: dict[str, tuple[str, int]] = {}
    for name, bound_host, bound_port in bound:
        if name in result:
            continue  # one listener bound on several sockets (IPv4 and IPv6): its first address
        endpoint = configured.get(name)
        host, port = (endpoint.host, endpoint.port) if endpoint else (bound_host, bound_port)
        # 0.0.0.0 is refused at startup; it gets here only for a listener left out of a set advertised.listeners
        # (Kafka advertises no address for such a listener at all)
        result[name] = (host if host not in ("", "0.0.0.0") else socket.getfqdn(), port or bound_port)
    return result
