"""Kafka's checkpoint files: ``recovery-point-offset-checkpoint`` and friends.

Format: line 1 the version (``0``), line 2 the entry count, then one
``topic partition offset`` line per entry. Written to ``<file>.tmp``, fsynced,
renamed over the old file, and the directory fsynced, so a crash leaves
either the old or the new file. An error of the disk while reading (EIO and
the like, ``is_disk_failure``) is raised, so the caller takes the log dir
offline as Kafka's ``CheckpointFileWithFailureHandler.read`` does. Bad
content is read forgivingly where Kafka would fail the log directory too: a
bad line or a wrong entry count is logged and the valid lines are used, an
undecodable file is ignored, since every value in these files can be
recomputed (recovery just rescans more).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from . import fileops
from .log_dir_failure import is_disk_failure

log = logging.getLogger(__name__)


def write_checkpoint(path: Path, entries: dict[tuple[str, int], int]) -> None:
    lines = ["0", str(len(entries))] + [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        if isinstance(exc, OSError) and is_disk_failure(exc):
            raise
        log.warning("ignoring unreadable checkpoint %s: %s", path, exc)
        return {}
    if len(lines) < 2 or lines[0].strip() != "0":
        log.warning("ignoring checkpoint %s with a bad header", path)
        return {}
    if lines[1].strip() != str(len(lines) - 2):
        log.warning("checkpoint %s announces %r entries and holds %d lines; reading what is there",
                    path, lines[1].strip(), len(lines) - 2)  # fmt: skip
    entries: dict[tuple[str, int], int] = {}
    for line in lines[2:]:
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit() or not parts[2].lstrip("-").isdigit():
            log.warning("skipping bad line %r in %s", line, path)
            continue
        entries[(parts[0], int(parts[1]))] = int(parts[2])
    return entries


def fsync_dir(path: Path) -> None:
    """fsync a directory: the names made, renamed or removed in it (``fileops``, the fault-injection seam)."""
    fileops.fsync_path(path)
