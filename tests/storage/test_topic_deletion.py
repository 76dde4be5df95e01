"""Deleting a topic's logs as Kafka's LogManager does: names that fit."""

from __future__ import annotations

import uuid

from storage.topic_store import write_partition_metadata

from .lead_helpers import Clock, append, manager, read_all

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
