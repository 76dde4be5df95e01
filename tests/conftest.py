"""Suite-wide settings: Hypothesis without per-example deadlines, derandomized under CI.

A deadline fails an example that is merely slow on a loaded 2-core CI box;
hangs are caught by pytest-timeout instead. With ``CI`` set, Hypothesis
draws the same examples on every run, so CI cannot pass or fail by chance.

Port 0 everywhere: a broker served in a test process must not take the
metrics endpoint's fixed default port (9404), which tests running beside it
on other workers would also take (``Address already in use``). The autouse
fixture ``metrics_on_port_0`` fails any test whose broker binds a fixed metrics port.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def metrics_on_port_0():
    """Fail a test whose in-process broker would bind its metrics endpoint to a fixed port: set
    prometheus.port=0 (no endpoint), or wrap ``broker.metrics.start_http_server`` to bind port 0 itself.

    Patched by hand, not with ``monkeypatch``: an autouse fixture of this conftest that asked for
    ``monkeypatch`` would make the tests' own patches outlive the other autouse fixtures' checks."""
    import broker.metrics

    serve = broker.metrics.start_http_server

    def checked(port: int, *args, **kwargs):
        assert port == 0, f"a test broker's metrics endpoint must not bind the fixed port {port}"
        return serve(port, *args, **kwargs)

    broker.metrics.start_http_server = checked
    yield
    broker.metrics.start_http_server = serve
