"""KIP-724 at startup: rewrite segments that still hold message format v0/v1 as v2.

``log.record.version.force.upgrade=2`` makes the log manager call
``upgrade_log`` on every partition after recovery. A segment is rewritten only
if it holds at least one legacy (magic 0/1) entry: its entries are read in
chunks (``batch_files.iter_entries``), legacy entries become v2 (an uncompressed legacy message a
single-record batch, a compressed wrapper one batch with all its records,
offsets and timestamps kept; ``protocol.records.legacy_to_v2_batch``), v2 batches
are copied as they are, and the result replaces the segment through the same
crash-safe ``.cleaned`` -> ``.swap`` -> ``.deleted`` sequence the cleaner uses.
A crash in the middle leaves either the old segment (an unfinished
``.cleaned`` file is discarded on load) or the new one (a complete ``.swap``
is finished on load), never a mix; the next start simply upgrades what is
left. An active segment with legacy entries is rolled first, since only
inactive segments are replaced.
"""

from __future__ import annotations

import logging
import os

from protocol.records import legacy_to_v2_batch

from .batch_files import iter_entries
from .file_names import cleaned_log_path

log = logging.getLogger(__name__)
CHUNK = 8 << 20


MAGIC_OFFSET = 16  # the magic byte of every entry format sits at byte 16


def _has_legacy(segment) -> bool:
    fd = segment.fileno()
    return any(os.pread(fd, 1, pos + MAGIC_OFFSET)[0] < 2 for pos, _, _ in segment.iter_batch_headers())


def _rewrite(segment, target) -> None:
    """Write the v2 form of ``segment`` to the open file ``target``, entry by entry."""
    for entry in iter_entries(segment.handle, segment.size, CHUNK):
        target.write(entry.buffer if entry.magic == 2 else legacy_to_v2_batch(entry))


def upgrade_log(log_) -> int:
    """Rewrite every segment of ``log_`` holding v0/v1 entries as v2; returns how many were rewritten."""
    if log_.active.size and _has_legacy(log_.active):
        log_.roll()
    rewritten = 0
    for segment in list(log_.segments[:-1]):
        if not _has_legacy(segment):
            continue
        cleaned = cleaned_log_path(log_.dir, segment.base_offset)
        with open(cleaned, "wb") as target:
            _rewrite(segment, target)
        log_.replace_segments(cleaned, [segment])
        rewritten += 1
        log.info("%s: segment %d rewritten as record format v2 (KIP-724)", log_.name, segment.base_offset)
    if rewritten:
        log.info("%s: %d segment(s) upgraded to record format v2", log_.name, rewritten)
    return rewritten
