"""A sweep over the Java Admin client (kafka-clients 4.3.0): every call answered as Kafka 4.x answers it.

``tests/e2e/java/AdminSweep.java`` runs once against a fresh broker (with the controller settings of a
KRaft combined-mode ``server.properties``, ``KRAFT_COMBINED``) and prints one line per Admin call
(``#call``, name, ``OK`` or the exception class, a short summary or the message). ``EXPECTED`` holds
what a single-node KRaft Kafka 4.x broker without an authorizer answers to each: the outcome and the
exact summary (``None``: not checked), or for an exception a piece of its message. Each call is its
own test case. Where this broker is known to answer differently the case is marked
``xfail(strict=True)`` with the reason (``DIFFERS``), so the list of differences is explicit and a fix
turns its case into an XPASS failure to clean up. ``EITHER`` lists calls whose Kafka answer depends
on a feature level (share and streams groups: the share.version and streams.version features, on in
production only from Kafka 4.2): any of the listed outcomes passes.
"""

from __future__ import annotations

import subprocess

import pytest

from .harness import BrokerProcess
from ..java_jars import compile_java

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

UNSUPPORTED = "UnsupportedVersionException"
_PARTITIONS = "sweep-0,sweep-1,sweep-2"
_TYPE_ACTIVE = "sweep-group state=Optional[Stable] type=Optional[Classic] simple=false"
_TYPE_EMPTY = "sweep-group state=Optional[Empty] type=Optional[Classic] simple=false"

EXPECTED: dict[str, tuple[str, str | None]] = {
    "describeCluster": ("OK", "nodes=1 controller=1 clusterId=true ops=null"),
    "describeCluster.authorizedOperations": (
        "OK", "ops=ALTER,ALTER_CONFIGS,CLUSTER_ACTION,CREATE,DESCRIBE,DESCRIBE_CONFIGS,IDEMPOTENT_WRITE"),
    "describeFeatures": ("OK", "metadata.version finalized=true supported=true epoch=true"),
    "createTopics.validateOnly": ("OK", "validated"),
    "createTopics": ("OK", "partitions=2 rf=1 topicId=true retention.ms=3600000"),
    "createTopics.exists": ("TopicExistsException", "Topic 'sweep' already exists."),
    "createTopics.replicationFactor3": ("InvalidReplicationFactorException", "only 1 broker(s) are registered"),
    "listTopics": ("OK", "sweep,sweep-byid"),
    "describeTopics.byName": ("OK", "sweep internal=false p0:leader=1,replicas=1,isr=1 p1:leader=1,replicas=1,isr=1"),
    "describeTopics.byId": ("OK", "sweep-byid internal=false p0:leader=1,replicas=1,isr=1"),
    "describeTopics.authorizedOperations": (
        "OK", "ops=ALTER,ALTER_CONFIGS,CREATE,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ,WRITE"),
    "describeTopics.unknownId": ("UnknownTopicIdException", ""),
    "describeTopics.unknown": ("UnknownTopicOrPartitionException", ""),
    "createPartitions": ("OK", "partitions=3"),
    "createPartitions.decrease": ("InvalidPartitionsException", "currently has 3 partition(s); 2 would not be an"),
    "describeConfigs.topic": (
        "OK", "retention.ms=3600000/DYNAMIC_TOPIC_CONFIG cleanup.policy=delete/DEFAULT_CONFIG"),
    "describeConfigs.topic.synonymsAndDocs": (
        "OK", "segment.bytes source=STATIC_BROKER_CONFIG synonyms=[log.segment.bytes:STATIC_BROKER_CONFIG, "
              "log.segment.bytes:DEFAULT_CONFIG] documented=true type=INT"),
    "describeConfigs.broker": (
        "OK", "num.partitions=1/STATIC_BROKER_CONFIG/ro log.segment.bytes=1073741824/STATIC_BROKER_CONFIG"),
    "describeConfigs.brokerLogger": ("OK", "loggers=true"),
    "describeConfigs.unknownTopic": ("UnknownTopicOrPartitionException", ""),
    "incrementalAlterConfigs.topic": (
        "OK", "retention.ms=7200000/DYNAMIC_TOPIC_CONFIG cleanup.policy=delete,compact/DYNAMIC_TOPIC_CONFIG"),
    "incrementalAlterConfigs.topic.invalidValue": (
        "InvalidConfigurationException", "Invalid value soon for configuration retention.ms"),
    "incrementalAlterConfigs.broker.readOnlyKey": ("InvalidRequestException", "node.id"),
    "incrementalAlterConfigs.broker.dynamicKey": ("OK", "log.cleaner.threads=2/DYNAMIC_BROKER_CONFIG"),
    "incrementalAlterConfigs.clusterDefault": (
        "OK", "log.segment.bytes=8388608/DYNAMIC_DEFAULT_BROKER_CONFIG log.segment.bytes=8388608/"
              "DYNAMIC_DEFAULT_BROKER_CONFIG segment.bytes=8388608/DYNAMIC_DEFAULT_BROKER_CONFIG"),
    "incrementalAlterConfigs.brokerLogger": ("OK", "root=INFO/DYNAMIC_BROKER_LOGGER_CONFIG"),
    "deleteRecords": ("OK", "lowWatermark=2"),
    "deleteRecords.beyondHighWatermark": ("OffsetOutOfRangeException", ""),
    "listOffsets.earliest": ("OK", "p0=2@-1 p1=0@-1"),
    "listOffsets.latest": ("OK", "p0=10@-1 p1=10@-1"),
    "listOffsets.latest.readCommitted": ("OK", "p0=10@-1 p1=10@-1"),
    "listOffsets.maxTimestamp": ("OK", "p0=9@1780000000009 p1=9@1780000000009"),
    "listOffsets.forTimestamp": ("OK", "p0=5@1780000000005 p1=5@1780000000005"),
    "listOffsets.forTimestamp.future": ("OK", "p0=-1@-1 p1=-1@-1"),
    "listOffsets.earliestLocal": ("OK", "p0=2@-1 p1=0@-1"),
    "listOffsets.latestTiered": ("OK", "p0=-1@-1 p1=-1@-1"),
    "listOffsets.earliestPendingUpload": ("OK", "p0=-1@-1 p1=-1@-1"),
    "describeLogDirs": ("OK", f"dirs=1 partitions={_PARTITIONS}"),
    "describeReplicaLogDirs": ("OK", "dir=true future=null"),
    "alterReplicaLogDirs.sameDir": ("OK", "null"),
    "describeProducers": ("OK", "producers=1"),
    "listConsumerGroups.active": ("OK", _TYPE_ACTIVE),
    "listGroups.active": ("OK", "sweep-group type=Optional[Classic] protocol=consumer state=Optional[Stable]"),
    "listGroups.classicConsumer.active": ("OK", "sweep-group"),
    "describeConsumerGroups.active": (
        "OK", f"state=Stable type=Classic members=1 assignor=range simple=false assigned={_PARTITIONS}"),
    "describeConsumerGroups.authorizedOperations": ("OK", "ops=ALTER_CONFIGS,DELETE,DESCRIBE,DESCRIBE_CONFIGS,READ"),
    "describeConfigs.group": ("OK", "consumer.session.timeout.ms=45000/DEFAULT_CONFIG"),
    "describeClassicGroups.active": ("OK", "state=Stable protocol=consumer members=1"),
    "listConsumerGroupOffsets.active": ("OK", "{sweep-0=5/m, sweep-1=4/}"),
    "alterConsumerGroupOffsets.active": ("UnknownMemberIdException", ""),
    "deleteConsumerGroupOffsets.active": ("GroupSubscribedToTopicException", ""),
    "deleteConsumerGroups.active": ("GroupNotEmptyException", "The group is not empty."),
    "listTopics.listInternal": ("OK", "__consumer_offsets,sweep,sweep-byid"),
    "removeMembersFromConsumerGroup": ("OK", "members=0"),
    "listConsumerGroups.empty": ("OK", _TYPE_EMPTY),
    "listGroups.empty": ("OK", "sweep-group type=Optional[Classic] protocol=consumer state=Optional[Empty]"),
    "listGroups.classicConsumer.empty": ("OK", "sweep-group"),
    "describeConsumerGroups.empty": ("OK", "state=Empty type=Classic members=0 assignor= simple=false assigned="),
    "describeClassicGroups.empty": ("OK", "state=Empty protocol=consumer members=0"),
    "listConsumerGroupOffsets.empty": ("OK", "{sweep-0=5/m, sweep-1=4/}"),
    "alterConsumerGroupOffsets": ("OK", "{sweep-0=3/, sweep-1=4/}"),
    "deleteConsumerGroupOffsets": ("OK", "{sweep-0=3/}"),
    "deleteConsumerGroups": ("OK", "null"),
    "describeConsumerGroups.deleted": ("GroupIdNotFoundException", ""),
    "listConsumerGroupOffsets.deleted": ("OK", "{}"),
    "describeTransactions.unknown": ("TransactionalIdNotFoundException", ""),
    "fenceProducers": ("OK", "null"),
    "describeTransactions": ("OK", "state=Empty coordinator=true partitions=0"),
    "listTransactions": ("OK", "sweep-txn:Empty"),
    "describeAcls": ("SecurityDisabledException", "No Authorizer is configured on the broker"),
    "createAcls": ("SecurityDisabledException", "No Authorizer is configured."),
    "deleteAcls": ("SecurityDisabledException", "No Authorizer is configured."),
    "describeClientQuotas": ("OK", "{}"),
    "alterClientQuotas": ("OK", "{ClientQuotaEntity(entries={user=sweep-user})={producer_byte_rate=1024.0}}"),
    "describeUserScramCredentials": ("OK", "[]"),
    "alterUserScramCredentials": ("OK", "[ScramCredentialInfo{mechanism=SCRAM_SHA_256, iterations=8192}]"),
    "electLeaders.preferred": ("OK", "p0=ElectionNotNeededException"),
    "electLeaders.unclean": ("OK", "p0=ElectionNotNeededException"),
    "listPartitionReassignments": ("OK", "{}"),
    "alterPartitionReassignments.sameReplica": ("OK", "null"),
    "alterPartitionReassignments.cancelNone": ("NoReassignmentInProgressException", ""),
    "describeMetadataQuorum": (
        "OK", "leader=true voters=1 voterIsLeader=true observers=0 epoch>=1=true voterAtHighWatermark=true "
              "caughtUpNow=true nodes=[1=[CONTROLLER://localhost:29093]]"),
    "describeDelegationToken": ("UnsupportedByAuthenticationException", "not allowed on PLAINTEXT"),
    "createDelegationToken": ("UnsupportedByAuthenticationException", "not allowed on PLAINTEXT"),
    "renewDelegationToken": ("UnsupportedByAuthenticationException", "not allowed on PLAINTEXT"),
    "expireDelegationToken": ("UnsupportedByAuthenticationException", "not allowed on PLAINTEXT"),
    "listConfigResources": ("OK", None),
    "listConfigResources.clientMetrics": ("OK", "[]"),
    "describeShareGroups": ("GroupIdNotFoundException", ""),
    "listShareGroupOffsets": ("GroupIdNotFoundException", ""),
    "describeStreamsGroups": ("GroupIdNotFoundException", ""),
    "deleteTopics.byName": ("OK", "null"),
    "deleteTopics.byId": ("OK", "null"),
    "deleteTopics.unknown": ("UnknownTopicOrPartitionException", ""),
    "deleteTopics.unknownId": ("UnknownTopicIdException", ""),
    "listTopics.afterDelete": ("OK", ""),
}  # fmt: skip

DIFFERS: dict[str, str] = {}

# The controller settings of a combined-mode server.properties (the CONTROLLER listener is not bound here).
KRAFT_COMBINED = {
    "process.roles": "broker,controller", "controller.quorum.voters": "1@localhost:29093",
    "controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:29093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
}  # fmt: skip

EITHER: dict[str, set[str]] = {
    "describeShareGroups": {UNSUPPORTED, "GroupIdNotFoundException"},
    "listShareGroupOffsets": {UNSUPPORTED, "GroupIdNotFoundException"},
    "describeStreamsGroups": {UNSUPPORTED, "GroupIdNotFoundException"},
}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Run AdminSweep once against a fresh broker: ``{call name: (outcome, summary or message)}``."""
    classpath = compile_java("AdminSweep.java")
    broker = BrokerProcess(tmp_path_factory.mktemp("admin-sweep") / "data", KRAFT_COMBINED).start()
    try:
        result = subprocess.run(["java", "-cp", classpath, "AdminSweep", broker.bootstrap],
                                capture_output=True, text=True, timeout=240)  # fmt: skip
    finally:
        broker.kill()
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [line.split("\t") for line in result.stdout.splitlines() if line.startswith("#call\t")]
    return {row[1]: (row[2], row[3] if len(row) > 3 else "") for row in rows}


def test_sweep_makes_every_call(sweep):
    assert sorted(sweep) == sorted(EXPECTED)


def _case(name: str):
    marks = [pytest.mark.xfail(strict=True, reason=DIFFERS[name])] if name in DIFFERS else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [_case(name) for name in EXPECTED])
def test_admin_call_answers_as_kafka(sweep, name):
    outcome, text = sweep[name]
    expected_outcome, expected_text = EXPECTED[name]
    if name in EITHER:
        assert outcome in EITHER[name], text
        return
    assert outcome == expected_outcome, text
    if expected_text is None:
        return
    if outcome == "OK":
        assert text == expected_text
    else:
        assert expected_text in text
