"""``serve --kafka-env``: configuration from ``KAFKA_*`` environment variables, as the apache/kafka image reads it.

A docker-compose file written for the ``apache/kafka`` image configures the
broker through its environment; the same file works with this one (the
image's entry point passes ``--kafka-env``):

* each ``KAFKA_<NAME>`` variable sets one key: ``<NAME>`` lower-cased, with
  ``___`` read as ``-``, then ``__`` as ``_``, then ``_`` as ``.``
  (``KAFKA_ADVERTISED_LISTENERS`` is ``advertised.listeners``,
  ``KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG`` is
  ``listener.name.sasl_plaintext.plain.sasl.jaas.config``, and
  ``KAFKA_LISTENER_NAME_X_SCRAM___SHA___256_SASL_JAAS_CONFIG`` has
  ``scram-sha-256``). They override the properties file; ``--override``
  overrides them;
* the variables the image gives the JVM and its scripts (``KAFKA_HEAP_OPTS``,
  ``KAFKA_OPTS``, ``KAFKA_JVM_PERFORMANCE_OPTS``, ``KAFKA_LOG4J_OPTS``,
  ``KAFKA_JMX_*`` ...) are not keys and are left alone (``NOT_KEYS``), but
  for the static JAAS file ``-Djava.security.auth.login.config=PATH`` in
  ``KAFKA_OPTS``, which ``serve`` reads in any mode (``jaas_file.py``). As the
  image's ``configure`` script does, a ``KAFKA_ADVERTISED_LISTENERS`` with a
  ``SASL_...://`` endpoint requires ``KAFKA_OPTS`` ("KAFKA_OPTS environment
  variable not set", exit status 1), and one without that property gets the
  script's warning (``check_sasl_opts``);
* variables that shape the listeners (``KAFKA_LISTENERS``,
  ``KAFKA_ADVERTISED_LISTENERS``, ``KAFKA_LISTENER_SECURITY_PROTOCOL_MAP``)
  replace the file's whole listener setup (``LISTENER_KEYS``), which
  would not match theirs; as in the image, ``listeners`` then defaults to
  ``advertised.listeners`` with every host made ``0.0.0.0``. In the same
  way a variable for ``log.dir`` or ``log.dirs`` replaces both in the file,
  and one for ``broker.id`` or ``node.id`` both (the image's file holds the
  variables' keys alone); among the keys the variables set, ``log.dirs``
  comes before ``log.dir``, as in Kafka;
* ``CLUSTER_ID`` is the cluster id a new log dir is formatted with
  (``kafka-storage format -t``); a log dir formatted with another one stops
  the start, as Kafka's ``meta.properties`` check does. Without it (or
  empty) a new log dir gets the image's default, ``5L6g3nShT-eMCtK--X86sw``
  (its ``configureDefaults``); a formatted one keeps its own;
* the SSL helper variables (``KAFKA_SSL_KEYSTORE_FILENAME`` ..., files in
  ``/etc/kafka/secrets``) give the ``ssl.*`` keys (``env_ssl.py``); the
  logging ones (``KAFKA_LOG4J_ROOT_LOGLEVEL``, ``KAFKA_LOG4J_LOGGERS``) set
  the loggers' levels (``env_logging.py``);
* a ``server.properties`` mounted in ``/mnt/shared/config`` (``serve
  --mounted-configs-dir``) replaces the properties file, as the image's
  wrapper takes it instead of its defaults; the variables then override its
  keys one by one (no listener group: the file is the user's own).

Each value is read back as Kafka reads the image's file (``key=value``
lines: escapes, leading blanks). A key Kafka defines that does nothing here
(``KAFKA_NUM_REPLICA_FETCHERS``, ``KAFKA_ZOOKEEPER_CONNECT`` ...) is accepted
with the startup warning a file's gets (``kafka_keys.py``);
``KAFKA_BROKER_RACK`` is the rack Metadata reports. A bad value of a key the
broker knows stops the start naming the variable. A variable whose key is no
Kafka broker config is logged at WARN and left out, as Kafka ignores a key it
does not know (the image writes every ``KAFKA_*`` variable into the file):
Kubernetes' variables of a Service named ``kafka`` (``KAFKA_PORT=tcp://...``,
``KAFKA_SERVICE_HOST``, ``KAFKA_PORT_9092_TCP_ADDR`` ...), other images'
(``KAFKA_CFG_*``, ``KAFKA_CONFLUENT_*``), a removed key (named with what
replaced it). In the file or an ``--override`` an unknown key still stops the
start. The keys the image's examples and helpers set that Kafka ignores
(``UNUSED``: ``KAFKA_SECURITY_PROTOCOL``, a client key, and the SSL helpers)
are left out and listed in an INFO line, as Kafka lists them ("were supplied
but are not used yet").
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Mapping
from pathlib import Path

from storage.topic_store import META_PROPERTIES, read_cluster_id, write_cluster_id

from .config import ConfigError, known_key
from .env_ssl import HELPERS, SECRETS_DIR, ImageScriptError, ssl_helper_keys
from .jaas_file import LOGIN_CONFIG
from .kafka_keys import removed_hint
from .properties import read_properties

log = logging.getLogger("minibroker")

PREFIX = "KAFKA_"
NOT_KEYS = frozenset({
    "KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_JMX_OPTS",
    "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME", "KAFKA_LOG4J_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
    "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_DEBUG", "KAFKA_HOME", "KAFKA_VERSION", "KAFKA_CLASSPATH", "KAFKA_MODE",
})  # fmt: skip
UNUSED = frozenset({"KAFKA_SECURITY_PROTOCOL", *HELPERS})
DEFAULT_CLUSTER_ID = "5L6g3nShT-eMCtK--X86sw"  # the image's configureDefaults
MOUNTED_CONFIGS_DIR = "/mnt/shared/config"
_HOST = re.compile(r"://[^,]*:(\d+)")
_SASL_ENDPOINT = re.compile(r"SASL_.*://", re.S)
INTER_BROKER_KEYS = frozenset({"inter.broker.listener.name", "security.inter.broker.protocol"})
LISTENER_KEYS = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map", *INTER_BROKER_KEYS})
SYNONYM_KEYS = (frozenset({"log.dirs", "log.dir"}), frozenset({"node.id", "broker.id"}))


def dropped_file_keys(from_env: Mapping[str, str]) -> frozenset[str]:
    """The file's keys the environment replaces as a group: its listener setup, if the environment has one,
    and a key and its older name (``log.dirs`` and ``log.dir``, ``node.id`` and ``broker.id``) if it sets
    either."""
    dropped = set(LISTENER_KEYS) if LISTENER_KEYS & from_env.keys() - INTER_BROKER_KEYS else set()
    for group in SYNONYM_KEYS:
        if group & from_env.keys():
            dropped |= group
    return frozenset(dropped)


def key_of(variable: str) -> str:
    """The config key a ``KAFKA_`` variable sets."""
    name = variable[len(PREFIX):].lower()
    return name.replace("___", "\0").replace("__", "\1").replace("_", ".").replace("\0", "-").replace("\1", "_")


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """The keys the ``KAFKA_*`` variables set (with ``listeners`` derived as the image derives it)."""
    found = {key_of(n): v for n, v in sorted(environ.items())
             if n.startswith(PREFIX) and n not in NOT_KEYS | UNUSED and len(n) > len(PREFIX)}  # fmt: skip
    if "listeners" not in found and found.get("advertised.listeners"):
        found["listeners"] = _HOST.sub(r"://0.0.0.0:\1", found["advertised.listeners"])
    return found


def image_config(path: str, environ: Mapping[str, str], secrets_dir: str = SECRETS_DIR,
                 mounted_dir: str = MOUNTED_CONFIGS_DIR) -> tuple[str, dict[str, str], frozenset[str]]:  # fmt: skip
    """The properties file to read, the keys the environment sets over it, and the file's keys it drops."""
    from_env = _as_written({**env_overrides(environ), **ssl_helper_keys(environ, secrets_dir)})
    check_sasl_opts(environ)
    from_env = _known_only(from_env, environ)
    unused = sorted(key_of(n) for n in UNUSED & environ.keys())
    if unused:
        log.info("These configurations '[%s]' were supplied but are not used yet.", ", ".join(unused))
    mounted = Path(mounted_dir) / "server.properties"
    if mounted.is_file():
        log.info("using the mounted %s", mounted)
        return str(mounted), from_env, frozenset()
    return path, from_env, dropped_file_keys(from_env)


def _as_written(from_env: dict[str, str]) -> dict[str, str]:
    """The keys as Kafka reads them back from the ``key=value`` lines the image writes into its properties file
    (``properties.py``: escapes read, leading blanks dropped; a value with a line break gives further keys)."""
    result: dict[str, str] = {}
    for key, value in from_env.items():
        result.update(read_properties(f"{key}={value}"))
    return result


def _known_only(from_env: dict[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The keys the broker knows. Each other one is logged and left out, as Kafka ignores a key it does not
    know: the image writes every ``KAFKA_*`` variable into the file, those of a Kubernetes Service named
    ``kafka`` (``KAFKA_PORT=tcp://...``, ``KAFKA_SERVICE_HOST``) and other images' (``KAFKA_CFG_*``) too."""
    variables = {key_of(name): name for name in environ if name.startswith(PREFIX)}
    known: dict[str, str] = {}
    for key, value in from_env.items():
        if known_key(key):
            known[key] = value
            continue
        log.warning("%s sets %s, which is not a Kafka broker config: ignored%s", variables.get(key, "a variable"),
                    key, removed_hint(key))  # fmt: skip
    return known


def check_sasl_opts(environ: Mapping[str, str]) -> None:
    """The image script's check of ``KAFKA_OPTS`` when ``KAFKA_ADVERTISED_LISTENERS`` has a ``SASL_...://``
    endpoint (its test is on the text, as here: a listener name with ``SASL_`` in it counts)."""
    if not _SASL_ENDPOINT.search(environ.get("KAFKA_ADVERTISED_LISTENERS", "")):
        return
    if not environ.get("KAFKA_OPTS"):
        raise ImageScriptError("KAFKA_OPTS environment variable not set")
    if LOGIN_CONFIG not in environ["KAFKA_OPTS"]:
        log.warning("KAFKA_OPTS should contain '%s' property.", LOGIN_CONFIG)


def format_cluster_id(log_dir: str | Path, cluster_id: str | None) -> None:
    """``CLUSTER_ID``: write it into a new log dir's ``meta.properties``; refuse a dir formatted with another.
    Without one, a new log dir gets the image's default cluster id."""
    if not cluster_id:
        if read_cluster_id(Path(log_dir)) is None:
            log.info('CLUSTER_ID not set. Setting it to default value: "%s"', DEFAULT_CLUSTER_ID)
            write_cluster_id(Path(log_dir), DEFAULT_CLUSTER_ID)
        return
    try:
        raw = base64.urlsafe_b64decode(cluster_id + "==")
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16 or len(cluster_id) != 22:
        raise ConfigError(f"CLUSTER_ID: {cluster_id!r} is not a cluster id (22 characters of URL-safe base64)")
    stored = read_cluster_id(Path(log_dir))
    if stored is None:
        write_cluster_id(Path(log_dir), cluster_id)
    elif stored != cluster_id:
        raise ConfigError(f"Invalid cluster.id in: {Path(log_dir) / META_PROPERTIES}. Expected {cluster_id}, but "
                          f"read {stored}")  # fmt: skip
