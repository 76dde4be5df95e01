"""A test that switches the C accelerator off must switch it back: later tests would otherwise test
only the Python paths and pass for the wrong reason (this caught one)."""

from __future__ import annotations

import pytest

from protocol.records import _downconvert_runs


@pytest.fixture(autouse=True)
def accelerator_left_as_found():
    before = _downconvert_runs.C_EMIT
    yield
    after, _downconvert_runs.C_EMIT = _downconvert_runs.C_EMIT, before
    assert after is before, "the test left the C accelerator switched differently"
