"""Topic creation and growth one log at a time (``storage.new_logs``): unseen until the last step.

Readers (``topics()``, ``get_log``, ``logs()``) see a new topic or a higher
partition count only once every log is made; the saved topics
(``__topics.json`` and its journal) hold a new topic from the first step, so
a crash part way is finished at the next start; ``abort`` and a failing step
undo everything; ``partition.metadata`` is not fsynced but rewritten on open
when it is missing or stale.
"""

from __future__ import annotations

import os

import pytest

from storage import LogManager, MetadataDirFailed, StorageError
from storage.topic_journal import read_topics
from storage.topic_store import TOPICS_FILE

from ..open_files import open_files_under
from .lead_helpers import Clock, append, crash, manager, read_all


def _dirs(root, topic: str) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(f"{topic}-"))


def _saved(root) -> dict:
    return read_topics(root)


def test_a_new_topic_appears_with_all_its_logs_after_the_last_step(tmp_path):
    lm = manager(tmp_path, Clock())
    steps = lm.create_topic_steps("t", 3, {"cleanup.policy": "compact"})
    assert next(steps) == 0 and next(steps) == 1
    assert "t" not in lm.topics() and lm.get_log("t", 0) is None and lm.logs() == []
    assert _saved(tmp_path)["t"]["num_partitions"] == 3  # a crash from here on is finished at the next start
    assert _dirs(tmp_path, "t") == ["t-0", "t-1"]
    with pytest.raises(ValueError):
        lm.create_topic_steps("t", 1, {})
    assert next(steps) == 2 and "t" not in lm.topics()
    assert list(steps) == [] and lm.topics()["t"].num_partitions == 3
    assert [lm.get_log("t", p).config.cleanup_policy for p in range(3)] == [("compact",)] * 3


def test_a_creation_cut_short_by_a_crash_is_finished_at_the_next_start(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    steps = lm.create_topic_steps("t", 4, {})
    next(steps), next(steps)  # t-0, t-1 made; then the process dies (nothing closed)
    crash(lm)
    lm2 = manager(tmp_path, clock)
    assert lm2.topics()["t"].num_partitions == 4 and _dirs(tmp_path, "t") == [f"t-{p}" for p in range(4)]
    append(lm2.get_log("t", 3))
    assert len(read_all(lm2.get_log("t", 3))) == 1


def test_abort_removes_what_the_steps_made(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("keep", 1, {})
    steps = lm.create_topic_steps("t", 5, {})
    next(steps), next(steps), next(steps)
    steps.abort()
    assert _dirs(tmp_path, "t") == [] and "t" not in _saved(tmp_path) and open_files_under(tmp_path) == 3
    assert list(steps) == [] and "t" not in lm.topics()
    lm.create_topic("t", 1, {})  # the name is free again
    assert lm.get_log("t", 0) is not None


def test_new_partitions_appear_together_with_the_config_of_the_last_step(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    steps = lm.add_partitions_steps("t", 4)
    assert next(steps) == 1
    lm.set_topic_overrides("t", {"retention.ms": "1234"})  # altered while the growth runs
    assert next(steps) == 2 and lm.topics()["t"].num_partitions == 1 and lm.get_log("t", 1) is None
    assert _saved(tmp_path)["t"]["num_partitions"] == 1
    assert list(steps) == [3]
    assert lm.topics()["t"].num_partitions == 4 and _saved(tmp_path)["t"]["num_partitions"] == 4
    assert [lm.get_log("t", p).config.retention_ms for p in range(4)] == [1234] * 4


def test_a_growth_cut_short_by_a_crash_is_forgotten_at_the_next_start(tmp_path):
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 2, {})
    steps = lm.add_partitions_steps("t", 5)
    next(steps), next(steps)  # t-2, t-3 made, never answered; the process dies
    crash(lm)
    lm2 = manager(tmp_path, clock)
    assert lm2.topics()["t"].num_partitions == 2 and _dirs(tmp_path, "t") == ["t-0", "t-1"]
    assert sorted(log_.partition for log_ in lm2.logs()) == [0, 1]


def test_a_growth_of_a_topic_deleted_meanwhile_is_undone(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    steps = lm.add_partitions_steps("t", 3)
    next(steps)
    lm.delete_topic("t")
    with pytest.raises(StorageError, match="deleted"):
        list(steps)
    assert [d for d in _dirs(tmp_path, "t") if not d.endswith("-delete")] == []  # t-0's waits its delay
    assert lm.logs() == [] and open_files_under(tmp_path) == 0


def test_a_failing_step_of_a_growth_leaves_the_topic_as_it_was(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    steps = lm.add_partitions_steps("t", 4)
    next(steps)
    monkeypatch.setattr("storage.new_logs.Log.open", _no_space)
    with pytest.raises(StorageError, match="t-2"):
        next(steps)
    assert _dirs(tmp_path, "t") == ["t-0"] and lm.topics()["t"].num_partitions == 1 and list(steps) == []


def _no_space(*args, **kwargs):
    raise OSError(28, os.strerror(28))


def test_a_creation_on_one_log_dir_makes_no_pass_over_the_logs(tmp_path, monkeypatch):
    """Counting every log's dir for each creation made creations slower as partitions grew."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 2, {})

    def no_pass():
        raise AssertionError("a pass over every log")

    monkeypatch.setattr(lm, "logs", no_pass)
    lm.create_topic("u", 3, {})
    lm.add_partitions("u", 4)
    assert _dirs(tmp_path, "u") == [f"u-{p}" for p in range(4)]


def test_new_logs_go_to_the_log_dir_with_fewest_partitions_counting_their_own(tmp_path):
    roots = [tmp_path / "a", tmp_path / "b"]
    lm = LogManager.open(roots, {}, Clock())
    lm.create_topic("old", 3, {})
    lm.create_topic("t", 5, {})
    per_root = {r.name: len([d for d in r.iterdir() if d.is_dir()]) for r in roots}
    assert per_root == {"a": 4, "b": 4}


def _closed_topic_with_a_record(root, clock) -> None:
    lm = manager(root, clock)
    lm.create_topic("t", 1, {})
    append(lm.get_log("t", 0))
    lm.close()


@pytest.mark.parametrize("damage", ["missing", "empty"])
def test_a_lost_partition_metadata_is_rewritten_on_open_and_the_log_kept(tmp_path, damage):
    clock = Clock()
    _closed_topic_with_a_record(tmp_path, clock)
    path = tmp_path / "t-0" / "partition.metadata"
    good = path.read_text()
    if damage == "missing":
        path.unlink()
    else:
        path.write_text("")
    lm2 = manager(tmp_path, clock)
    assert path.read_text() == good and len(read_all(lm2.get_log("t", 0))) == 1


def test_a_log_of_an_older_topic_of_the_same_name_is_set_aside_as_stray(tmp_path):
    """Kafka's KRaft stray handling: a directory whose topic id is not the topic's is renamed, not adopted."""
    clock = Clock()
    _closed_topic_with_a_record(tmp_path, clock)
    (tmp_path / "t-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
    lm2 = manager(tmp_path, clock)
    (stray,) = [p.name for p in tmp_path.iterdir() if p.name.endswith("-stray")]
    assert stray.startswith("t-0.") and (tmp_path / stray / "00000000000000000000.log").stat().st_size > 0
    assert read_all(lm2.get_log("t", 0)) == []  # the topic's own partition starts empty


def test_a_partition_of_an_unknown_topic_is_set_aside_and_never_adopted(tmp_path):
    """A deletion cut short after the topic was forgotten left t-0 behind: a new topic t must not take it."""
    clock = Clock()
    _closed_topic_with_a_record(tmp_path, clock)
    (tmp_path / TOPICS_FILE).write_text("{}")  # the topic is gone, its directory is not
    lm2 = manager(tmp_path, clock)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("t-0")][0].endswith("-stray")
    lm2.create_topic("t", 1, {})
    assert read_all(lm2.get_log("t", 0)) == []
    lm2.close()
    assert len([p for p in tmp_path.iterdir() if p.name.endswith("-stray")]) == 1  # kept, not opened again


@pytest.mark.parametrize("grow", [False, True], ids=["create", "add partitions"])
def test_topics_that_cannot_be_saved_undo_the_change(tmp_path, monkeypatch, grow):
    """The saved partition count decides what the next start keeps, so a change it cannot save is undone."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm.create_topic("t", 1, {})
    steps = lm.add_partitions_steps("t", 3) if grow else lm.create_topic_steps("u", 2, {})
    if grow:
        next(steps), next(steps)
    monkeypatch.setattr("storage.topic_journal.TopicJournal._change", _no_space)
    with pytest.raises(MetadataDirFailed, match="saving the topics failed"):
        list(steps)
    monkeypatch.undo()
    assert _dirs(tmp_path, "t") == ["t-0"] and _dirs(tmp_path, "u") == [] and list(lm.topics()) == ["t"]
    assert lm.topics()["t"].num_partitions == 1 and [log_.partition for log_ in lm.logs()] == [0]
    lm.close()
    assert list(manager(tmp_path, clock).topics()) == ["t"]


def test_an_undone_creation_whose_forgetting_cannot_be_saved_is_left_to_the_next_start(tmp_path, monkeypatch):
    """Its log could not be made and the topic cannot be forgotten: the metadata dir is offline (the broker
    stops without an answer); the next start finishes the creation, as Kafka's controller keeps a topic whose
    record is committed."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    steps = lm.create_topic_steps("u", 3, {})
    next(steps)
    monkeypatch.setattr("storage.new_logs.Log.open", _no_space)
    with pytest.raises(MetadataDirFailed):
        next(steps)
    monkeypatch.undo()
    assert "u" not in lm.topics() and _dirs(tmp_path, "u") == [] and lm.logs() == []
    assert lm.failures.metadata_offline
    crash(lm)
    assert manager(tmp_path, clock).topics()["u"].num_partitions == 3


def test_new_and_reopened_logs_take_producer_id_expiration_ms(tmp_path):
    """``producer.id.expiration.ms`` reaches a log when it is made (``Log.open``), when the topic grows, and when
    the directory is opened again."""
    clock = Clock()
    lm = manager(tmp_path, clock, **{"producer.id.expiration.ms": 1234})
    lm.create_topic("t", 1, {})
    lm.add_partitions("t", 2)
    assert [lm.get_log("t", p).producer_state.expiration_ms for p in (0, 1)] == [1234, 1234]
    lm.close()
    again = manager(tmp_path, clock, **{"producer.id.expiration.ms": 4321})
    assert [again.get_log("t", p).producer_state.expiration_ms for p in (0, 1)] == [4321, 4321]
    again.close()
