"""Checkpoints written on a worker thread while the owner thread changes the logs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from storage.checkpoint import read_checkpoint
from storage.dir_checkpoints import LOG_STARTS, RECOVERY_POINTS, DirCheckpoints


def a_log(name: str, start: int, bases: list[int]) -> SimpleNamespace:
    segments = [SimpleNamespace(base_offset=b) for b in bases]
    return SimpleNamespace(topic=name, partition=0, checkpointed_recovery_point=7, log_start_offset=start,
                           segments=segments)  # fmt: skip


def test_a_log_emptied_by_a_deletion_meanwhile_is_left_out_of_the_log_starts(tmp_path: Path) -> None:
    """``Log.delete`` on the owner thread empties ``segments`` while the checkpoint thread reads the logs: the
    checkpoint round still writes, without that log's start (it had an IndexError and wrote nothing)."""
    logs = [a_log("gone", 5, []), a_log("kept", 5, [0]), a_log("at-base", 3, [3])]
    DirCheckpoints(lambda: [tmp_path], lambda: logs, lambda key, root: True).write_offsets(tmp_path)
    assert read_checkpoint(tmp_path / LOG_STARTS) == {("kept", 0): 5}
    assert read_checkpoint(tmp_path / RECOVERY_POINTS) == {("gone", 0): 7, ("kept", 0): 7, ("at-base", 0): 7}
