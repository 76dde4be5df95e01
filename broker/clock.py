"""The broker's wall clock: milliseconds since the epoch, as Kafka's ``Time.milliseconds()``.

The ``Broker`` passes its clock to everything it makes, so tests can put a
fake one in; the parts that can also be made alone (the authorizer, the
metadata quorum) default to this one.
"""

from __future__ import annotations

import time


def wall_clock_ms() -> int:
    return int(time.time() * 1000)
