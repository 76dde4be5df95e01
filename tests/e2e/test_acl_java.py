"""ACLs end to end with the Java client (kafka-clients 4.3.0 and 3.9.1): kafka-acls.sh's Admin calls, then clients.

The broker has a SASL_PLAINTEXT listener with PLAIN users ``admin`` (a super
user) and ``alice``. Alice first can do nothing: her producer and consumer
fail with Kafka's authorization exceptions and her topic listing is empty.
Admin grants her WRITE and READ on the topic and READ on the group, the way
``kafka-acls.sh --add`` does, and her default (idempotent) producer and
group consumer work; once the topic's bindings are removed she is refused
again.
"""

from __future__ import annotations

import subprocess

import pytest

from .acl_users import java_login

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def _run(classpath: str, broker, user: str, *commands: str) -> list[str]:
    result = subprocess.run(["java", f"-Dclient.props={java_login(user)}", "-cp", classpath, "AclCheck",
                             f"127.0.0.1:{broker.port}", *commands], capture_output=True, text=True,
                            timeout=240)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


@pytest.mark.parametrize("client", ["4.3", "3.9"])
def test_java_clients_under_acls(acl_broker, client):
    from ..java_jars import compile_java

    classpath = compile_java("AclCheck.java", client=client)
    assert _run(classpath, acl_broker, "admin", "produce orders 5") == ["produced 5"]
    denied = "error TopicAuthorizationException: Not authorized to access topics: [orders]"
    before = _run(classpath, acl_broker, "alice", "topics", "produce orders 3", "consume orders g1 5", "list")
    assert before[:3] == ["topics []", denied, denied]  # the producer fails on the topic's metadata, before its id
    assert before[3].startswith("error ClusterAuthorizationException: Request Request(processor=0, connectionId=")
    assert "session=Session(User:alice,/127.0.0.1), listenerName=ListenerName(SASL_PLAINTEXT)" in before[3]
    granted = _run(classpath, acl_broker, "admin", "allow User:alice WRITE TOPIC orders",
                   "allow User:alice READ TOPIC orders", "allow User:alice READ GROUP g PREFIXED", "list")
    assert granted[:3] == ["added"] * 3
    assert granted[3:] == [
        "(pattern=ResourcePattern(resourceType=GROUP, name=g, patternType=PREFIXED), entry=(principal=User:alice, "
        "host=*, operation=READ, permissionType=ALLOW))",
        "(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), entry=(principal=User:alice, "
        "host=*, operation=READ, permissionType=ALLOW))",
        "(pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), entry=(principal=User:alice, "
        "host=*, operation=WRITE, permissionType=ALLOW))",
        "listed 3"]  # fmt: skip
    assert _run(classpath, acl_broker, "alice", "topics", "produce orders 3", "consume orders g1 8") == [
        "topics [orders]", "produced 3", "consumed 8"]  # fmt: skip
    assert _run(classpath, acl_broker, "admin", "remove TOPIC orders") == ["removed 2"]
    after = _run(classpath, acl_broker, "alice", "consume orders g1 1")
    assert after == [denied]
