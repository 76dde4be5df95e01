"""The authorizer's metrics, as Kafka's StandardAuthorizer has them, read from the broker's metrics registry.

Every decision counts once in ``authorization-request-rate-per-minute`` and
in the allowed or denied rate, cached ones too; the rates are Kafka's
``Rate(MINUTES)`` over 2 windows of 30 s on a clock the tests move, so the
values are exact: N decisions just made read 2N per minute. The ACL count
follows CreateAcls and DeleteAcls and outlives a restart. A broker without an
authorizer has none of these metrics.
"""

from __future__ import annotations

import time

import pytest

from broker.acl_model import AclBinding, PatternType, PermissionType
from broker.authorizer import Authorizer, parse_super_users
from broker.config import BrokerConfig
from broker.core import Broker

from ._admin_client import broker, call, req, sub  # noqa: F401  (broker: a fixture)
from ._authz import Op, Res, authz_broker, grant, user  # noqa: F401  (authz_broker: a fixture)
from ._authz_data import make_topics
from ._dtp_client import dtp
from .test_acl_apis import ADMIN, creation, describe_filter

LABELS = {"config": "authorizer.class.name", "class": "StandardAuthorizer", "role": "broker"}
NAMES = {"request": "authorization_request_rate_per_minute", "allowed": "authorization_allowed_rate_per_minute",
         "denied": "authorization_denied_rate_per_minute", "acls": "acls_total_count"}  # fmt: skip
T0 = 1_700_000_000_000


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def read(broker) -> dict:
    """The four metrics as the registry (what /metrics serves) has them."""
    return {key: broker.metrics.registry.get_sample_value(f"kafka_server_plugins_{name}", LABELS)
            for key, name in NAMES.items()}  # fmt: skip


def rates(authorizer: Authorizer) -> tuple[float, float, float]:
    """(request, allowed, denied) per minute, from the authorizer's own samples."""
    got = {name: samples[0][1] for name, _doc, _labels, samples in authorizer.metric_samples()}
    return tuple(got[f"kafka_server_plugins_{NAMES[k]}"] for k in ("request", "allowed", "denied"))


@pytest.fixture
def clock(authz_broker):
    """The authorizer's clock, moved past everything the setup decided (10 minutes on) when the test reads."""
    c = Clock(int(time.time() * 1000))  # not before what the broker may have recorded on the wall clock
    authz_broker.authorizer.metrics.clock = c
    return c


async def test_every_decision_counts_once_cached_or_not():
    clock = Clock()
    a = Authorizer(None, parse_super_users("User:admin"), False, clock)
    await a.create([AclBinding(Res.TOPIC, "t", PatternType.LITERAL, "User:bob", "*", Op.READ, PermissionType.ALLOW)])
    for _ in range(3):  # the last two come from the cache
        assert a.authorize("User:bob", "10.0.0.1", Op.READ, Res.TOPIC, "t")
    assert a.authorize("User:admin", "10.0.0.1", Op.ALTER, Res.CLUSTER, "kafka-cluster")  # a super user
    for _ in range(2):
        assert not a.authorize("User:bob", "10.0.0.1", Op.WRITE, Res.TOPIC, "t", log_denied=False)
    assert rates(a) == (12.0, 8.0, 4.0)  # 6, 4 and 2 decisions in the first 30 s window


def test_the_rates_are_kafkas_two_windows_of_30_seconds():
    clock = Clock()
    a = Authorizer(None, frozenset(), True, clock)  # no ACLs: allow.everyone.if.no.acl.found allows
    for _ in range(3):
        a.authorize("User:bob", "10.0.0.1", Op.READ, Res.TOPIC, "t")
    assert rates(a) == (6.0, 6.0, 0.0)
    clock.now += 30_000
    a.authorize("User:bob", "10.0.0.1", Op.READ, Res.TOPIC, "t")  # a second window
    assert rates(a) == (8.0, 8.0, 0.0)  # 4 over the 30 s the windows span
    clock.now += 30_000
    assert rates(a) == (2.0, 2.0, 0.0)  # the first window has expired
    clock.now += 30_000
    assert rates(a) == (0.0, 0.0, 0.0)  # both expired: this read starts a window, as Kafka's does
    clock.now += 10_000
    a.authorize("User:bob", "10.0.0.1", Op.READ, Res.TOPIC, "t")
    assert rates(a) == pytest.approx((1.5, 1.5, 0.0))  # 1 over the 10 s since that read, padded to 40 s


async def test_a_request_counts_each_decision_kafka_makes_for_it(authz_broker, clock):
    """DescribeTopicPartitions of a and b by bob, who may DESCRIBE a: DESCRIBE a (allowed) and b (denied), then
    the 8 TOPIC operations of the answered a (DESCRIBE allowed, 7 denied): 2 allowed, 8 denied."""
    await make_topics(authz_broker, "a", "b")
    grant(authz_broker, "bob", Op.DESCRIBE, Res.TOPIC, "a")
    clock.now += 600_000
    assert read(authz_broker) == {"request": 0.0, "allowed": 0.0, "denied": 0.0, "acls": 1.0}
    await dtp(authz_broker, ["a", "b"], who=user("bob"))
    assert read(authz_broker) == {"request": 20.0, "allowed": 4.0, "denied": 16.0, "acls": 1.0}
    await dtp(authz_broker, ["a", "b"], who=user("bob"))  # the same decisions, from the cache
    assert read(authz_broker) == {"request": 40.0, "allowed": 8.0, "denied": 32.0, "acls": 1.0}


async def _create_acls(broker, *creations) -> None:
    resp = await call(broker, 30, 3, req(30, creations=list(creations)), connection=ADMIN)
    assert [r.error_code for r in resp.results] == [0] * len(creations)


async def test_acls_total_count_follows_create_and_delete_and_a_restart(authz_broker, clock):
    assert read(authz_broker)["acls"] == 0.0
    await _create_acls(authz_broker, creation("orders"), creation("orders", op=4), creation("pay", pattern=4))
    assert read(authz_broker)["acls"] == 3.0
    await _create_acls(authz_broker, creation("orders"), creation("logs", principal="User:carol"))  # one again
    assert read(authz_broker)["acls"] == 4.0
    Filter = sub(31, "DeleteAclsFilter")
    resp = await call(authz_broker, 31, 3, req(31, filters=[describe_filter("orders", cls=Filter, rtype=2,
                                                                            pattern=3)]), connection=ADMIN)  # fmt: skip
    assert [len(r.matching_acls) for r in resp.filter_results] == [2]
    assert read(authz_broker)["acls"] == 2.0
    authz_broker.close()  # a restart: the dir's lock goes with the first broker, then the second opens it
    again = Broker.open(authz_broker.config)
    try:
        assert read(again)["acls"] == 2.0
    finally:
        again.close()


def test_no_authorizer_no_authorizer_metrics(broker):  # noqa: F811
    assert read(broker) == {key: None for key in NAMES}
    assert "kafka_server_plugins" not in "".join(m.name for m in broker.metrics.registry.collect())


def test_the_class_name_kept_for_old_configs_reports_standard_authorizer(tmp_path):
    props = {"log.dirs": str(tmp_path), "prometheus.port": "0",
             "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}  # fmt: skip
    b = Broker.open(BrokerConfig.from_props(props))
    try:
        assert read(b)["acls"] == 0.0
    finally:
        b.close()
