"""Fixtures for end-to-end tests: a real broker process per test, on port 0."""

from __future__ import annotations

import pytest

from .acl_users import start_acl_broker
from .harness import BrokerProcess


@pytest.fixture
def broker_factory(tmp_path):
    started: list[BrokerProcess] = []

    def make(**overrides: str) -> BrokerProcess:
        proc = BrokerProcess(tmp_path / f"data{len(started)}", {k.replace("_", "."): v for k, v in overrides.items()})
        started.append(proc)
        return proc.start()

    yield make
    for proc in started:
        proc.kill()


@pytest.fixture
def broker(broker_factory) -> BrokerProcess:
    return broker_factory()


@pytest.fixture
def acl_broker(tmp_path) -> BrokerProcess:
    """A broker with the ACL authorizer and SASL/PLAIN users admin (super user), alice and bob (``acl_users``)."""
    broker = start_acl_broker(tmp_path / "acl-data")
    yield broker
    broker.kill()
