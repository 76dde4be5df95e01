"""Suite-wide settings: Hypothesis without per-example deadlines, derandomized under CI.

A deadline fails an example that is merely slow on a loaded 2-core CI box;
hangs are caught by pytest-timeout instead. With ``CI`` set, Hypothesis
draws the same examples on every run, so CI cannot pass or fail by chance.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("dev", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
