"""The open-files limit: raised at startup to the most the process may have, as the JVM does for Kafka.

Every partition keeps three files open (its active segment's ``.log``,
``.index`` and ``.timeindex``), as Kafka's broker does, so the common soft
limit of 1024 descriptors stops a broker near 300 partitions with "Too many
open files". HotSpot raises its soft ``RLIMIT_NOFILE`` to the hard limit when
it starts, so a Kafka broker gets the hard limit without being asked;
``raise_open_files_limit`` does the same for ours (capped by the kernel's
``fs.nr_open`` when the hard limit is unlimited). Past the raised limit,
creating partitions fails cleanly with KAFKA_STORAGE_ERROR (``storage``
removes what the request had made).
"""

from __future__ import annotations

import resource
from pathlib import Path

NR_OPEN = Path("/proc/sys/fs/nr_open")


def raise_open_files_limit() -> tuple[int, int]:
    """Set the soft open-files limit to the hard one; returns ``(old soft, new soft)``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            target = int(NR_OPEN.read_text())
        except (OSError, ValueError):
            return soft, soft
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):
            return soft, soft
        return soft, target
    return soft, soft
