"""broker.__main__.use_accelerator: the C down-conversion loop is used unless MINIBROKER_PURE_PYTHON=1."""

from __future__ import annotations

import pytest

from broker.__main__ import use_accelerator
from protocol.records import _downconvert_runs, set_accelerated

cdc = pytest.importorskip("protocol.records._cdownconvert")


def test_the_broker_switch(monkeypatch):
    try:
        monkeypatch.setenv("MINIBROKER_PURE_PYTHON", "1")
        assert use_accelerator() is False and _downconvert_runs.C_EMIT is None
        monkeypatch.delenv("MINIBROKER_PURE_PYTHON")
        assert use_accelerator() is True and _downconvert_runs.C_EMIT is cdc.emit
    finally:
        set_accelerated(True)
