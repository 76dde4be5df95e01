"""The log cleaner (compaction), after Kafka's LogCleaner, with KIP-354, KIP-87, KIP-724 and KIP-98.

* ``selection``: first dirty / first uncleanable offsets (never past the last
  stable offset), dirty and must-clean ratios, KIP-354's compaction delay, and
  the choice of the next log;
* ``offset_map``: the bounded key -> offset map of pass 1;
* ``recopy``: the keep rules of pass 2, batch by batch (tombstones, delete
  horizons, live producers' last batches, aborted transactions and markers,
  legacy batches rewritten as v2);
* ``transactions``: which batches belong to aborted transactions and which
  markers may go, as a pass walks the log (``.txnindex`` entries kept);
* ``cleaner``: one round of one log (map, recopy into ``.cleaned`` files, swap);
* ``manager``: what is in progress or uncleanable, checkpoints, gauges' inputs;
* ``service``: the background threads; ``throttle``: the shared I/O limit;
* ``gate``: cleaners pause between small steps while the broker answers requests;
* ``metrics``: the scrape-time gauges, named as the JMX exporter names Kafka's.

No trio here: the broker runs the swap steps on its own thread through the
``owner`` callable it passes in (``broker.cleaning``).
"""

from storage.throttle import Throttler

from .cleaner import Cleaner, CleanerStats, CleaningAborted, group_segments
from .gate import RequestGate
from .manager import CleanerManager
from .offset_map import OffsetMap
from .selection import LogToClean, choose, log_to_clean
from .service import CleanerConfig, LogCleaner

__all__ = [
    "Cleaner",
    "CleanerConfig",
    "CleanerManager",
    "CleanerStats",
    "CleaningAborted",
    "LogCleaner",
    "LogToClean",
    "OffsetMap",
    "RequestGate",
    "Throttler",
    "choose",
    "group_segments",
    "log_to_clean",
]
