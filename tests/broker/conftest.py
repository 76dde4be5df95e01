"""Fixtures of the handler tests: ``log_levels_restored`` puts every logger's level back after a test.

IncrementalAlterConfigs on a BROKER_LOGGER resource changes the levels of
this process's loggers (the broker under test runs in it), so tests that
send such requests, on purpose or drawn by the fuzz, must not leave a level
changed for the tests after them.
"""

from __future__ import annotations

import logging

import pytest


@pytest.fixture
def log_levels_restored():
    saved = {name: lg.level for name, lg in logging.root.manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    root = logging.root.level
    yield
    logging.root.setLevel(root)
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)
