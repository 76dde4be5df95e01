"""``serve --kafka-env``: the apache/kafka image's log4j variables set the broker's log levels.

A broker process with ``message.max.bytes=1000`` refuses confluent-kafka's
5000-byte record; ``broker.handlers.produce`` logs that refusal at DEBUG, so
the line is in the output only when a variable makes that logger DEBUG:
``KAFKA_LOG4J_LOGGERS`` naming it, or ``KAFKA_LOG4J_ROOT_LOGLEVEL=DEBUG``
with nothing more specific (a logger's own level wins over the root's, and
``--log-level`` over ``KAFKA_LOG4J_ROOT_LOGLEVEL``). kafka-python's
DescribeConfigs of BROKER_LOGGER reports the levels the variables set.
"""

from __future__ import annotations

import warnings

import pytest
from confluent_kafka import KafkaError, Producer

from .harness import BrokerProcess

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(90)]
REFUSED = "DEBUG broker.handlers.produce: produce to big-0 refused"


def _refused_produce(bootstrap: str) -> KafkaError:
    errors: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    producer.produce("big", value=b"x" * 5000, on_delivery=lambda err, _msg: errors.append(err))
    assert producer.flush(30) == 0
    return errors[0]


def _logger_levels(bootstrap: str) -> dict[str, str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20_000)
    try:
        described = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER_LOGGER, "1")])
    finally:
        admin.close()
    return {name: entry["value"] for name, entry in described["broker_logger"]["1"].items()}


@pytest.mark.parametrize(("env", "args", "logged", "levels"), [
    ({}, [], False, {"root": "INFO", "broker.handlers.produce": "INFO"}),
    ({"KAFKA_LOG4J_LOGGERS": "broker.handlers.produce=DEBUG,kafka.authorizer.logger=WARN"}, [], True,
     {"root": "INFO", "broker.handlers.produce": "DEBUG", "kafka.authorizer.logger": "WARN"}),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "DEBUG"}, [], True, {"root": "DEBUG", "broker.handlers.produce": "DEBUG"}),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "DEBUG", "KAFKA_LOG4J_LOGGERS": "broker.handlers=INFO"}, [], False,
     {"root": "DEBUG", "broker.handlers": "INFO", "broker.handlers.produce": "INFO"}),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "DEBUG"}, ["--log-level", "INFO"], False, {"root": "INFO"}),
    ({"KAFKA_LOG4J_ROOT_LOGLEVEL": "WARN", "KAFKA_LOG4J_LOGGERS": "minibroker=INFO"}, [], False,
     {"root": "WARN", "minibroker": "INFO", "broker.handlers.produce": "WARN"}),
])  # fmt: skip
def test_the_log4j_variables_change_what_is_logged(tmp_path, env, args, logged, levels):
    broker = BrokerProcess(tmp_path / "data", {"message.max.bytes": "1000"}, ["--kafka-env", *args], env).start()
    try:
        assert _refused_produce(broker.bootstrap).code() == KafkaError.MSG_SIZE_TOO_LARGE
        reported = _logger_levels(broker.bootstrap)
        assert {name: reported[name] for name in levels} == levels
    finally:
        assert broker.stop() == 0
        broker.kill()
    assert (REFUSED in broker.log_text()) == logged
