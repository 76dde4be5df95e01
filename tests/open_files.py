"""Descriptor-leak checks that other tests cannot disturb: count only what is open under one directory.

The whole process's descriptor count moves whenever the garbage collector
frees an earlier test's files, so a test that wants to show its own files were
closed counts the descriptors whose target lies under its own directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from storage.dir_locks import LOCK_FILE


def open_files_under(directory: Path) -> int:
    """How many of this process's descriptors are open on files under ``directory`` (deleted ones too), but
    log dirs' ``.lock`` files."""
    prefix, count = str(directory), 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor, for one)
            continue
        count += target.startswith(prefix) and os.path.basename(target) != LOCK_FILE
    return count
