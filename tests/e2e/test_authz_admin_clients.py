"""The ACL authorizer on the admin requests, with real clients on a SASL_PLAINTEXT listener.

The broker runs Kafka's StandardAuthorizer rules with ``super.users=User:admin``.
``bob``, with no ACL, is refused: kafka-python's and confluent-kafka's
CreateTopics fail with TOPIC_AUTHORIZATION_FAILED and DescribeConfigs of a
topic is refused (confluent-kafka raises it, kafka-python gets no configs),
ListConfigResources is CLUSTER_AUTHORIZATION_FAILED. Then the admin grants
bob CREATE and DESCRIBE_CONFIGS on a topic prefix through CreateAcls, and the
same calls succeed.
"""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient, ConfigResource, NewTopic,
                                   ResourcePatternType, ResourceType)  # fmt: skip

from .acl_users import confluent_conf, kafka_python_conf, start_acl_broker

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka import errors as kafka_errors
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, ConfigResourceType,
                             KafkaAdminClient, ResourcePattern)  # fmt: skip
    from kafka.admin import ConfigResource as KpConfigResource
    from kafka.admin import ResourceType as KpResourceType

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(120)]
TIMEOUT_S = 30


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    broker = start_acl_broker(tmp_path_factory.mktemp("acl") / "data")
    yield broker
    broker.kill()


def _kafka_python(broker, who: str) -> KafkaAdminClient:
    return KafkaAdminClient(**kafka_python_conf(broker, who), request_timeout_ms=TIMEOUT_S * 1000,
                            client_id=f"kp-{who}")  # fmt: skip


def _confluent(broker, who: str) -> AdminClient:
    return AdminClient({**confluent_conf(broker, who), "socket.timeout.ms": TIMEOUT_S * 1000,
                        "client.id": f"ck-{who}"})  # fmt: skip


def test_kafka_python_admin_is_refused_until_granted(acl_broker):
    admin, bob = _kafka_python(acl_broker, "admin"), _kafka_python(acl_broker, "bob")
    try:
        with pytest.raises(kafka_errors.TopicAuthorizationFailedError):
            bob.create_topics({"kp-topic": {"num_partitions": 1}}, timeout_ms=TIMEOUT_S * 1000)
        admin.create_topics({"kp-shared": {"num_partitions": 1}}, timeout_ms=TIMEOUT_S * 1000)
        wanted = [KpConfigResource(ConfigResourceType.TOPIC, "kp-shared")]
        assert bob.describe_configs(wanted, config_filter="all") == {"topic": {"kp-shared": {}}}  # refused: no configs
        with pytest.raises(kafka_errors.ClusterAuthorizationFailedError):
            bob.list_config_resources(["TOPIC"])
        grants = [ACL("User:bob", "*", op, ACLPermissionType.ALLOW,
                      ResourcePattern(KpResourceType.TOPIC, "kp-", ACLResourcePatternType.PREFIXED))
                  for op in (ACLOperation.CREATE, ACLOperation.DESCRIBE_CONFIGS)]  # fmt: skip
        assert len(admin.create_acls(grants)["succeeded"]) == 2
        created = bob.create_topics({"kp-topic": {"num_partitions": 2}}, timeout_ms=TIMEOUT_S * 1000)
        topic = created["topics"][0]
        assert (topic["name"], topic["error_code"], topic["num_partitions"]) == ("kp-topic", 0, 2)
        assert "retention.ms" in topic["configs"]  # DESCRIBE_CONFIGS: the answer carries the configs
        configs = bob.describe_configs(wanted, config_filter="all")["topic"]["kp-shared"]
        assert configs["retention.ms"]["value"] == "604800000"
    finally:
        bob.close()
        admin.close()


def test_confluent_admin_is_refused_until_granted(acl_broker):
    admin, bob = _confluent(acl_broker, "admin"), _confluent(acl_broker, "bob")
    with pytest.raises(KafkaException) as refused:
        bob.create_topics([NewTopic("ck-topic", 1, 1)])["ck-topic"].result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin.create_topics([NewTopic("ck-shared", 1, 1)])["ck-shared"].result(TIMEOUT_S)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "ck-shared")
    with pytest.raises(KafkaException) as refused:
        bob.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grants = [AclBinding(ResourceType.TOPIC, "ck-", ResourcePatternType.PREFIXED, "User:bob", "*", op,
                         AclPermissionType.ALLOW) for op in (AclOperation.CREATE, AclOperation.DESCRIBE_CONFIGS)]
    for future in admin.create_acls(grants).values():
        future.result(TIMEOUT_S)
    bob.create_topics([NewTopic("ck-topic", 1, 1)])["ck-topic"].result(TIMEOUT_S)
    configs = bob.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["retention.ms"].value == "604800000"
    with pytest.raises(KafkaException) as refused:
        bob.delete_topics(["ck-topic"])["ck-topic"].result(TIMEOUT_S)  # no DELETE granted
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
