"""Broker keys Kafka defines that this broker has no use for: accepted, warned about, described.

A ``server.properties`` or docker-compose file written for Kafka carries keys
that mean nothing on one node (``num.replica.fetchers``, ``zookeeper.connect``,
``metric.reporters`` ...). Kafka never refuses a key; this broker refuses a
typo, so a key is one of three kinds:

* ours (``config.BROKER_KEYS``, the storage layer's): read and used;
* Kafka's, listed here (``KAFKA_KEYS``): accepted, its value checked only
  against its Kafka type (INT, SHORT, LONG, DOUBLE, BOOLEAN: a number or
  true/false, as Kafka's ConfigDef parses it; LIST, STRING, CLASS, PASSWORD:
  any text), logged once at startup at WARN as having no effect
  (``warn_unused``), and listed by DescribeConfigs when set
  (STATIC_BROKER_CONFIG, read-only, a PASSWORD's value hidden);
* neither: stops the start, naming the key. So does a value for one of the
  plugins that enforce policy or map principals (``ENFORCING``): running
  without them would allow what the operator meant to refuse.

The names are those of Kafka's broker ConfigDef (``KafkaConfig.configDef``,
merged from ServerConfigs, KRaftConfigs, ZkConfigs, ReplicationConfigs,
SocketServerConfigs, QuotaConfig, MetricConfigs, RemoteLogManagerConfig,
BrokerSecurityConfigs, DelegationTokenManagerConfigs, PasswordEncoderConfigs,
GroupCoordinatorConfig, ShareGroupConfig, ShareCoordinatorConfig ...), with
three that 3.9 still had (``auto.include.jmx.reporter``,
``delegation.token.master.key``, ``offsets.commit.required.acks``), less
those this broker declares itself. They are grouped by why they do nothing
here; each line is a name and its Kafka type. ``KAFKA_DYNAMIC`` holds those
Kafka also changes at runtime (its ``DynamicBrokerConfig.AllDynamicConfigs``):
IncrementalAlterConfigs refuses them here (``dynamic_config.py``) and the
others with Kafka's "Cannot update these configs dynamically".
"""

from __future__ import annotations

import logging
from typing import Any

from storage.config_values import TYPE_PARSERS

from .config_values import SHORT, parse_value

log = logging.getLogger("minibroker")

REPLICATION = """
    alter.log.dirs.replication.quota.window.num          INT
    alter.log.dirs.replication.quota.window.size.seconds INT
    auto.leader.rebalance.enable                         BOOLEAN
    broker.id.generation.enable                          BOOLEAN
    control.plane.listener.name                          STRING
    controlled.shutdown.enable                           BOOLEAN
    controlled.shutdown.max.retries                      INT
    controlled.shutdown.retry.backoff.ms                 LONG
    controller.socket.timeout.ms                         INT
    early.start.listeners                                STRING
    eligible.leader.replicas.enable                      BOOLEAN
    inter.broker.protocol.version                        STRING
    leader.imbalance.check.interval.seconds              LONG
    leader.imbalance.per.broker.percentage               INT
    num.replica.fetchers                                 INT
    replica.fetch.backoff.ms                             INT
    replica.fetch.max.bytes                              INT
    replica.fetch.min.bytes                              INT
    replica.fetch.response.max.bytes                     INT
    replica.fetch.wait.max.ms                            INT
    replica.high.watermark.checkpoint.interval.ms        LONG
    replica.lag.time.max.ms                              LONG
    replica.selector.class                               STRING
    replica.socket.receive.buffer.bytes                  INT
    replica.socket.timeout.ms                            INT
    replication.quota.window.num                         INT
    replication.quota.window.size.seconds                INT
    request.timeout.ms                                   INT
    reserved.broker.max.id                               INT
    socket.connection.setup.timeout.max.ms               LONG
    socket.connection.setup.timeout.ms                   LONG
    unclean.leader.election.interval.ms                  LONG
"""
KRAFT = """
    broker.heartbeat.interval.ms                    INT
    broker.session.timeout.ms                       INT
    controller.quorum.append.linger.ms              INT
    controller.quorum.election.backoff.max.ms       INT
    controller.quorum.election.timeout.ms           INT
    controller.quorum.fetch.timeout.ms              INT
    controller.quorum.request.timeout.ms            INT
    controller.quorum.retry.backoff.ms              INT
    initial.broker.registration.timeout.ms          INT
    metadata.log.dir                                STRING
    metadata.log.max.record.bytes.between.snapshots LONG
    metadata.log.max.snapshot.interval.ms           LONG
    metadata.log.segment.bytes                      INT
    metadata.log.segment.min.bytes                  INT
    metadata.log.segment.ms                         LONG
    metadata.max.idle.interval.ms                   INT
    metadata.max.retention.bytes                    LONG
    metadata.max.retention.ms                       LONG
    server.max.startup.time.ms                      LONG
"""
ZOOKEEPER = """
    zookeeper.clientCnxnSocket                      STRING
    zookeeper.connect                               STRING
    zookeeper.connection.timeout.ms                 INT
    zookeeper.max.in.flight.requests                INT
    zookeeper.metadata.migration.enable             BOOLEAN
    zookeeper.metadata.migration.min.batch.size     INT
    zookeeper.session.timeout.ms                    INT
    zookeeper.set.acl                               BOOLEAN
    zookeeper.ssl.cipher.suites                     LIST
    zookeeper.ssl.client.enable                     BOOLEAN
    zookeeper.ssl.crl.enable                        BOOLEAN
    zookeeper.ssl.enabled.protocols                 LIST
    zookeeper.ssl.endpoint.identification.algorithm STRING
    zookeeper.ssl.keystore.location                 STRING
    zookeeper.ssl.keystore.password                 PASSWORD
    zookeeper.ssl.keystore.type                     STRING
    zookeeper.ssl.ocsp.enable                       BOOLEAN
    zookeeper.ssl.protocol                          STRING
    zookeeper.ssl.truststore.location               STRING
    zookeeper.ssl.truststore.password               PASSWORD
    zookeeper.ssl.truststore.type                   STRING
"""
THREADS = """
    background.threads                               INT
    delete.records.purgatory.purge.interval.requests INT
    fetch.purgatory.purge.interval.requests          INT
    group.coordinator.append.linger.ms               INT
    group.coordinator.new.enable                     BOOLEAN
    group.coordinator.threads                        INT
    log.dir.failure.timeout.ms                       LONG
    num.replica.alter.log.dirs.threads               INT
    offsets.commit.required.acks                     SHORT
    offsets.commit.timeout.ms                        INT
    offsets.load.buffer.size                         INT
    offsets.topic.compression.codec                  INT
    producer.purgatory.purge.interval.requests       INT
    queued.max.request.bytes                         LONG
    queued.max.requests                              INT
    socket.listen.backlog.size                       INT
    transaction.state.log.load.buffer.size           INT
    unstable.api.versions.enable                     BOOLEAN
    unstable.feature.versions.enable                 BOOLEAN
"""
METRICS = """
    auto.include.jmx.reporter           BOOLEAN
    kafka.metrics.polling.interval.secs INT
    kafka.metrics.reporters             LIST
    metric.reporters                    LIST
    telemetry.max.bytes                 INT
"""
RECORDING = """
    metrics.recording.level             STRING
"""
REMOTE = """
    remote.fetch.max.wait.ms                           INT
    remote.list.offsets.request.timeout.ms             LONG
    remote.log.index.file.cache.total.size.bytes       LONG
    remote.log.manager.copier.thread.pool.size         INT
    remote.log.manager.copy.max.bytes.per.second       LONG
    remote.log.manager.copy.quota.window.num           INT
    remote.log.manager.copy.quota.window.size.seconds  INT
    remote.log.manager.expiration.thread.pool.size     INT
    remote.log.manager.fetch.max.bytes.per.second      LONG
    remote.log.manager.fetch.quota.window.num          INT
    remote.log.manager.fetch.quota.window.size.seconds INT
    remote.log.manager.task.interval.ms                LONG
    remote.log.manager.task.retry.backoff.max.ms       LONG
    remote.log.manager.task.retry.backoff.ms           LONG
    remote.log.manager.task.retry.jitter               DOUBLE
    remote.log.manager.thread.pool.size                INT
    remote.log.metadata.custom.metadata.max.bytes      INT
    remote.log.metadata.manager.class.name             STRING
    remote.log.metadata.manager.class.path             STRING
    remote.log.metadata.manager.impl.prefix            STRING
    remote.log.metadata.manager.listener.name          STRING
    remote.log.reader.max.pending.tasks                INT
    remote.log.reader.threads                          INT
    remote.log.storage.manager.class.name              STRING
    remote.log.storage.manager.class.path              STRING
    remote.log.storage.manager.impl.prefix             STRING
    remote.log.storage.system.enable                   BOOLEAN
"""
PLUGINS = """
    alter.config.policy.class.name            CLASS
    client.quota.callback.class               CLASS
    create.topic.policy.class.name            CLASS
    delegation.token.expiry.check.interval.ms LONG
    delegation.token.expiry.time.ms           LONG
    delegation.token.master.key               PASSWORD
    delegation.token.max.lifetime.ms          LONG
    delegation.token.secret.key               PASSWORD
    password.encoder.cipher.algorithm         STRING
    password.encoder.iterations               INT
    password.encoder.key.length               INT
    password.encoder.keyfactory.algorithm     STRING
    password.encoder.old.secret               PASSWORD
    password.encoder.secret                   PASSWORD
    principal.builder.class                   CLASS
    sasl.client.callback.handler.class        CLASS
    sasl.jaas.config                          PASSWORD
    sasl.kerberos.kinit.cmd                   STRING
    sasl.kerberos.min.time.before.relogin     LONG
    sasl.kerberos.principal.to.local.rules    LIST
    sasl.kerberos.service.name                STRING
    sasl.kerberos.ticket.renew.jitter         DOUBLE
    sasl.kerberos.ticket.renew.window.factor  DOUBLE
    sasl.login.callback.handler.class         CLASS
    sasl.login.class                          CLASS
    sasl.login.connect.timeout.ms             INT
    sasl.login.read.timeout.ms                INT
    sasl.login.refresh.buffer.seconds         SHORT
    sasl.login.refresh.min.period.seconds     SHORT
    sasl.login.refresh.window.factor          DOUBLE
    sasl.login.refresh.window.jitter          DOUBLE
    sasl.login.retry.backoff.max.ms           LONG
    sasl.login.retry.backoff.ms               LONG
    security.providers                        STRING
    ssl.allow.dn.changes                      BOOLEAN
    ssl.allow.san.changes                     BOOLEAN
"""
SHARE = """
    group.share.delivery.count.limit                       INT
    group.share.enable                                     BOOLEAN
    group.share.max.groups                                 SHORT
    group.share.max.size                                   INT
    group.share.partition.max.record.locks                 INT
    share.coordinator.append.linger.ms                     INT
    share.coordinator.load.buffer.size                     INT
    share.coordinator.snapshot.update.records.per.snapshot INT
    share.coordinator.state.topic.compression.codec        INT
    share.coordinator.state.topic.segment.bytes            INT
    share.coordinator.threads                              INT
    share.coordinator.write.timeout.ms                     INT
    share.fetch.max.fetch.records                          INT
    share.fetch.purgatory.purge.interval.requests          INT
"""


# Why each group has no effect here, as the startup warning and DescribeConfigs' documentation say it.
_REASONS = {
    REPLICATION: "replication and inter-broker traffic: a single node has no followers, leaders to move or peers",
    KRAFT: "KRaft quorum and metadata log tuning: no Raft quorum runs; metadata lives in the log dir's files",
    ZOOKEEPER: "ZooKeeper: not used",
    THREADS: "threads, queues and coordinator tuning of Kafka's JVM: one event loop serves every request",
    METRICS: "metrics reporters: metrics are served on the Prometheus endpoint (prometheus.port)",
    RECORDING: "no metric is recorded at DEBUG or TRACE level, here as in Kafka's broker (only its clients and "
               "Streams have such sensors), so every level records the same",
    REMOTE: "tiered storage: there is no remote storage",
    PLUGINS: "Java plugins, Kerberos and login classes, delegation tokens, password encoding: not read here",
    SHARE: "share groups (KIP-932): not served",
}
KAFKA_KEYS: dict[str, tuple[str, str]] = {  # name -> (Kafka type, why it has no effect)
    name: (kind, reason) for block, reason in _REASONS.items()
    for name, kind in (line.split() for line in block.strip().splitlines())
}  # fmt: skip
KAFKA_DYNAMIC = frozenset({
    "num.replica.fetchers", "background.threads", "metric.reporters", "principal.builder.class", "sasl.jaas.config",
    "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
    "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
    "remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
    "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
    "remote.list.offsets.request.timeout.ms",
})  # fmt: skip


# Plugins that enforce a rule or decide who a client is: running without them would quietly allow what the
# operator meant to refuse, so a value set for one stops the start (an empty one, Kafka's default, is fine).
ENFORCING = frozenset({"alter.config.policy.class.name", "create.topic.policy.class.name",
                       "client.quota.callback.class", "principal.builder.class"})  # fmt: skip
# Kafka's own defaults of those, which name what this broker does anyway
ENFORCING_DEFAULTS = frozenset({"org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"})


def _recording_level(text: str) -> str:
    """Kafka's broker reads it with ``Sensor.RecordingLevel.forName`` as it starts: case aside, one of three."""
    if text.upper() not in ("INFO", "DEBUG", "TRACE"):
        raise ValueError("String must be one of (case insensitive): INFO, DEBUG, TRACE")
    return text


def _no_plugin(text: str) -> str:
    """One of the ``ENFORCING`` plugins: only empty or Kafka's own default."""
    if text and text not in ENFORCING_DEFAULTS:
        raise ValueError("a Java plugin that enforces policy or maps principals cannot be loaded by minibroker, and "
                         "running without it would allow what it refuses")
    return text


_PARSERS = {**TYPE_PARSERS, "SHORT": SHORT}
# Kafka checks more than the type of these (or we do)
_VALUE_CHECKS = {"metrics.recording.level": _recording_level, **dict.fromkeys(ENFORCING, _no_plugin)}


# Broker keys Kafka removed (its upgrade notes), and what replaced each: set, they name it.
_QUOTA_DEFAULT = ("client quotas, set at runtime: kafka-configs.sh --alter --entity-type clients --entity-default "
                  "--add-config {}=<bytes per second>")
REMOVED = {
    "port": "listeners", "host.name": "listeners",
    "advertised.port": "advertised.listeners", "advertised.host.name": "advertised.listeners",
    "quota.producer.default": _QUOTA_DEFAULT.format("producer_byte_rate"),
    "quota.consumer.default": _QUOTA_DEFAULT.format("consumer_byte_rate"),
    "replica.lag.max.messages": "replica.lag.time.max.ms",
}  # fmt: skip


def unknown_key(name: str) -> str:
    """The refusal of a key the broker does not know, with what replaced it if Kafka removed it."""
    return f"{name}: unknown configuration key{removed_hint(name)}"


def removed_hint(name: str) -> str:
    """`` (Kafka removed it; use ...)`` for a key Kafka removed, naming what replaced it; else empty."""
    return f" (Kafka removed it; use {REMOVED[name]})" if name in REMOVED else ""


def sensitive(name: str) -> bool:
    """Whether Kafka hides the key's value (its PASSWORD type)."""
    return KAFKA_KEYS[name][0] == "PASSWORD"


def split_unused(props: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(the other keys, Kafka's keys with no effect here)``; ``ConfigError`` in Kafka's words for a value its
    Kafka type cannot parse (or a plugin set that we cannot run)."""
    unused = {name: text for name, text in props.items() if name in KAFKA_KEYS}
    for name, text in unused.items():
        parse = _VALUE_CHECKS.get(name) or _PARSERS.get(KAFKA_KEYS[name][0])
        if parse is not None:
            parse_value(name, text.strip(), parse)
    return {n: v for n, v in props.items() if n not in unused}, unused


def warn_unused(unused: dict[str, Any]) -> None:
    """The startup warning: one line per key set that has no effect in this broker."""
    for name in sorted(unused):
        log.warning("%s is a Kafka broker config with no effect in minibroker (%s)", name, KAFKA_KEYS[name][1])
