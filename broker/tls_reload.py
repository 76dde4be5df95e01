"""Keystore and truststore reloads of SSL listeners, through dynamic broker configs (Kafka's SslFactory).

As in Kafka, a listener's key and trust material may change at runtime for
this node (never at the cluster-default level): the ``listener.name.<l>.``
forms of ``RELOADABLE`` (``ssl.keystore.location``, its type and passwords,
the inline PEM keys, the truststore's). Every change to this node's dynamic
configs builds the TLS context of each SSL or SASL_SSL listener that has
such keys again, from the files as they are at that moment, so setting
``ssl.keystore.location`` to the path it already has loads a keystore
rotated in place (how Kafka reloads one). Kafka's checks refuse the change
when the context cannot be built (an unreadable store, a wrong password) or
when the new certificate's subject or subject alternative names differ from
the one served now. New connections get the new context; open ones keep
theirs.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from .config import ConfigError
from .listeners import served_listeners
from .ssl_config import certificate_names, ssl_context

log = logging.getLogger("minibroker")
RELOADABLE = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.type", "ssl.truststore.location",
    "ssl.truststore.password", "ssl.truststore.certificates",
})  # fmt: skip


class NotReloadable(Exception):
    """Why a listener's new TLS context is refused (Kafka answers "Invalid dynamic configuration")."""


def reloadable_key(name: str) -> bool:
    """``listener.name.<listener>.<key>`` with a key of ``RELOADABLE``."""
    parts = name.split(".", 3)
    return len(parts) == 4 and parts[:2] == ["listener", "name"] and parts[3] in RELOADABLE


def reloaded_contexts(broker: Any, candidate: Any, node_props: dict[str, str]) -> dict[str, ssl.SSLContext]:
    """The new TLS context of each SSL listener with reloadable keys in ``node_props``, built from
    ``candidate`` (the config the change would give); ``NotReloadable`` says why one is refused."""
    contexts = {}
    for listener in served_listeners_of(candidate):
        prefix = f"listener.name.{listener.name.lower()}."
        if not any(reloadable_key(k) and k.startswith(prefix) for k in node_props):
            continue
        try:
            context = ssl_context(candidate, listener.name)
        except ConfigError as exc:
            raise NotReloadable(str(exc)) from None
        current = broker.tls_contexts.get(listener.name)
        if current is not None:
            _check_names(listener.name, certificate_names(current), certificate_names(context))
        contexts[listener.name] = context
    return contexts


def served_listeners_of(config: Any) -> list:
    """The SSL and SASL_SSL listeners of ``config`` (without building their contexts)."""
    return [l for l in served_listeners(config, contexts=False) if l.protocol.endswith("SSL")]


def _check_names(listener: str, old: tuple[str, frozenset[str]], new: tuple[str, frozenset[str]]) -> None:
    if old[0] != new[0]:
        raise NotReloadable(f"{listener}: Keystore DistinguishedName does not match: existing={old[0]}, new={new[0]}")
    if old[1] != new[1]:
        raise NotReloadable(f"{listener}: Keystore SubjectAltNames do not match: existing={sorted(old[1])}, "
                            f"new={sorted(new[1])}")  # fmt: skip
