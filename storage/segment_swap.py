"""Swapping a cleaner's output in for old segments (Kafka's ``replaceSegments``), a function over a ``Log``.

``replace_segments`` puts a cleaner's ``.cleaned`` file in place of inactive
segments in an order that a crash at any point leaves for the loader
(``log_loader``) to finish or undo: the new files are on disk (fsynced here
unless ``indexed``, whose writer did it), renamed ``.swap``, the old segments
renamed ``.deleted`` (and scheduled for removal as retention does it), then
``.swap`` stripped and the directory fsynced. With ``indexed`` the cleaner
also wrote ``.index.cleaned``/``.timeindex.cleaned``, which move with the
``.log`` and are loaded lazily; otherwise the indexes are rebuilt here.
A ``<base>.txnindex.cleaned`` next to the ``.log.cleaned`` (the cleaner's
kept aborted transactions, written with ``txn_index.write_txn_index`` at
``file_names.cleaned_txn_index_path``) moves with it in either mode; its
``.swap`` is stripped last, after the ``.log``, so that the loader, which
keeps a ``.txnindex.swap`` and strips it, never mistakes the new file for an
old segment's (while a ``.log.swap`` is there, every final-named
``.txnindex`` in its range is old).
``sync_dir=False`` leaves the directory fsync to the caller (the cleaner does
it on its own thread, so the log's owner only waits for renames).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import fileops, retention
from .checkpoint import fsync_dir
from .file_names import CLEANED, INDEX, LOG, SWAP, TIME_INDEX, TXN_INDEX, log_path
from .segment import Segment

if TYPE_CHECKING:
    from .log import Log


def replace_segments(log_: "Log", cleaned: Path, old: list[Segment], *, indexed: bool, sync_dir: bool) -> Segment:
    """Swap ``cleaned`` in for ``old`` (inactive segments of ``log_``); the new segment."""
    if not old or any(seg not in log_.segments[:-1] for seg in old):
        raise ValueError(f"{log_.name}: only inactive segments of this log can be replaced")
    base = old[0].base_offset
    if not indexed:
        with open(cleaned, "rb+") as f:
            fileops.fsync(f.fileno())
    files = [cleaned]
    if indexed:
        files += [cleaned.with_name(f"{base:020d}{ext}{CLEANED}") for ext in (INDEX, TIME_INDEX)]
    txn = cleaned.with_name(f"{base:020d}{TXN_INDEX}{CLEANED}")
    files += [txn] if txn.exists() else []
    swaps = [f.with_name(f.name[: -len(CLEANED)] + SWAP) for f in files]
    for src, dst in zip(files, swaps):
        src.rename(dst)
    at = log_.segments.index(old[0])
    for seg in old:
        log_.segments.remove(seg)
        retention.schedule_delete(log_, seg)
    # The indexes, then the .log (until then the loader redoes the whole swap), then the .txnindex.
    for swap in sorted(swaps, key=lambda p: (p.name.endswith(TXN_INDEX + SWAP), p.name.endswith(LOG + SWAP))):
        swap.rename(swap.with_name(swap.name[: -len(SWAP)]))
    if sync_dir:
        fsync_dir(log_.dir)
    new = Segment(log_.dir, base, log_.config, log_.clock(), size=os.stat(log_path(log_.dir, base)).st_size)
    if not indexed:
        new.recover()
    new.on_become_inactive()
    log_.segments.insert(at, new)
    return new
