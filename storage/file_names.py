"""Kafka's file names: segments named by base offset, zero-padded to 20 digits.

``00000000000000000000.log`` / ``.index`` / ``.timeindex`` / ``.txnindex``; temporary suffixes
``.cleaned`` (cleaner output being written), ``.swap`` (ready to replace) and
``.deleted`` (waiting for ``file.delete.delay.ms``). Partition directories
are ``<topic>-<partition>``; ``<topic>-<partition>.<id>`` with the suffix
``-delete`` is one being removed, ``-stray`` one set aside, ``-future`` the
copy a move to another log dir is making (``log_move.py``). A ``-delete`` or
``-stray`` name keeps within ``NAME_MAX`` characters by cutting the topic part
short (``set_aside_name``, Kafka's ``logDirNameWithSuffixCappedLength``): a
topic name may have 249 characters, too many for ``-0.<32 hex>-delete`` after it.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

LOG, INDEX, TIME_INDEX, TXN_INDEX = ".log", ".index", ".timeindex", ".txnindex"
CLEANED, SWAP, DELETED = ".cleaned", ".swap", ".deleted"
DELETE_SUFFIX, STRAY_SUFFIX, FUTURE_SUFFIX = "-delete", "-stray", "-future"
NAME_MAX = 255  # the longest file name Linux file systems take


def file_stem(offset: int) -> str:
    return f"{offset:020d}"


def log_path(directory: Path, offset: int) -> Path:
    return directory / (file_stem(offset) + LOG)


def index_path(directory: Path, offset: int) -> Path:
    return directory / (file_stem(offset) + INDEX)


def time_index_path(directory: Path, offset: int) -> Path:
    return directory / (file_stem(offset) + TIME_INDEX)


def txn_index_path(directory: Path, offset: int) -> Path:
    return directory / (file_stem(offset) + TXN_INDEX)


def cleaned_log_path(directory: Path, base_offset: int) -> Path:
    """Where the cleaner writes a new segment: ``<base>.log.cleaned`` (deleted if the broker crashes)."""
    return directory / f"{file_stem(base_offset)}{LOG}{CLEANED}"


def cleaned_txn_index_path(directory: Path, base_offset: int) -> Path:
    """Where the cleaner writes the new segment's ``.txnindex`` (``<base>.txnindex.cleaned``, optional)."""
    return directory / f"{file_stem(base_offset)}{TXN_INDEX}{CLEANED}"


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    return root / f"{topic}-{partition}"


def set_aside_name(topic: str, partition: int, suffix: str) -> str:
    """``<topic>-<partition>.<unique id><suffix>`` for a partition directory being deleted or set aside,
    with the topic cut short when the whole would pass ``NAME_MAX`` characters."""
    tail = f"-{partition}.{uuid.uuid4().hex}{suffix}"
    return topic[: NAME_MAX - len(tail)] + tail


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    topic, sep, number = name.rpartition("-")
    if not sep or not topic or not number.isdigit():
        return None
    return topic, int(number)


def parse_future_dir(name: str) -> tuple[str, int] | None:
    """The (topic, partition) of a ``<topic>-<partition>.<id>-future`` directory name, or None."""
    if not name.endswith(FUTURE_SUFFIX):
        return None
    stem, dot, unique = name[: -len(FUTURE_SUFFIX)].rpartition(".")
    return parse_partition_dir(stem) if dot and unique else None


def offset_of(path: Path | str) -> int | None:
    """The base offset a file name starts with, or None if it is not a segment file."""
    name = path if isinstance(path, str) else path.name
    stem = name.split(".", 1)[0]
    return int(stem) if len(stem) == 20 and stem.isdigit() else None


def remove_dir(directory: Path) -> None:
    """Remove a partition directory and what is in it, if it is there."""
    shutil.rmtree(directory, ignore_errors=True)
