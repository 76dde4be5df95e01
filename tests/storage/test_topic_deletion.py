"""Deleting a topic's logs as Kafka's LogManager does: names that fit, checkpoints rewritten at once."""

from __future__ import annotations

import uuid

from storage.checkpoint import read_checkpoint
from storage.dir_checkpoints import LOG_STARTS, RECOVERY_POINTS
from storage.topic_store import write_partition_metadata

from .lead_helpers import Clock, append, crash, manager, read_all

LONGEST = "t" * 249  # Kafka's longest legal topic name


def _set_aside(root) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith(("-delete", "-stray")))


def test_a_topic_with_the_longest_name_is_deleted_and_the_broker_opens_again(tmp_path):
    """``<topic>-<p>.<32 hex>-delete`` would pass 255 characters: Kafka cuts the topic part short
    (``logDirNameWithSuffixCappedLength``). Before, the rename failed after the topic was forgotten, and
    the directory left behind stopped the next start when it was set aside as a stray."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic(LONGEST, 2, {})
    append(lm.get_log(LONGEST, 1))
    lm.delete_topic(LONGEST)
    assert LONGEST not in lm.topics() and lm.get_log(LONGEST, 0) is None
    assert not (tmp_path / f"{LONGEST}-0").exists() and not (tmp_path / f"{LONGEST}-1").exists()
    assert all(len(name) <= 255 for name in _set_aside(tmp_path))
    lm.close()
    assert manager(tmp_path, clock).topics() == {}


def test_a_stray_with_the_longest_name_is_set_aside_and_the_broker_opens(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic(LONGEST, 1, {})
    append(lm.get_log(LONGEST, 0))
    lm.close()
    write_partition_metadata(tmp_path / f"{LONGEST}-0", uuid.uuid4())  # an older topic of that name
    lm2 = manager(tmp_path, clock)
    [stray] = _set_aside(tmp_path)
    assert stray.endswith("-stray") and len(stray) == 255 and stray.startswith("t" * 200)
    assert read_all(lm2.get_log(LONGEST, 0)) == []  # the known topic's log is made again, empty


def test_deletion_rewrites_the_checkpoints_so_a_topic_made_again_keeps_its_records_after_a_crash(tmp_path):
    """Kafka's asyncDelete rewrites the dir's recovery-point and log-start-offset checkpoints at once.
    Before, the old topic's entries stayed until the next periodic write: a crash in between gave the
    new topic of the same name the old log start offset, and its records were deleted on open."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    for _ in range(20):
        append(lm.get_log("t", 0))
    lm.get_log("t", 0).delete_records_before(15)
    lm.write_checkpoints()
    lm.delete_topic("t")
    assert read_checkpoint(tmp_path / LOG_STARTS) == {} and read_checkpoint(tmp_path / RECOVERY_POINTS) == {}
    lm.create_topic("t", 1, {})
    for _ in range(3):
        append(lm.get_log("t", 0))
    crash(lm)  # no close, no clean-shutdown marker
    again = manager(tmp_path, clock)
    log = again.get_log("t", 0)
    assert (log.log_start_offset, log.log_end_offset) == (0, 3) and [o for o, _v in read_all(log)] == [0, 1, 2]


def test_a_deletion_writes_no_snapshot_and_a_failed_rename_leaves_no_old_data(tmp_path, monkeypatch):
    """Kafka's asyncDelete only renames. Before, closing the deleted log wrote a producer snapshot first; when
    that (or the rename) failed, the deletion stopped half-way with later partitions still registered and
    their directories under the live names, so the topic made again read the old topic's records."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 3, {})
    for p in range(3):
        append(lm.get_log("t", p))
    snapshots = []
    monkeypatch.setattr(type(lm.get_log("t", 0).producer_state), "write_snapshot",
                        lambda self, *a: snapshots.append(a))  # fmt: skip
    real_rename = type(tmp_path).rename

    def rename(self, target):
        if self.name == "t-1":
            raise OSError(28, "No space left on device")
        return real_rename(self, target)

    monkeypatch.setattr(type(tmp_path), "rename", rename)
    lm.delete_topic("t")
    assert snapshots == [] and all(lm.get_log("t", p) is None for p in range(3))
    assert not any((tmp_path / f"t-{p}").exists() for p in range(3))
    lm.create_topic("t", 3, {})
    assert all(read_all(lm.get_log("t", p)) == [] for p in range(3))
