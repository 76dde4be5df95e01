"""Topic metadata saved one change at a time (``storage.topic_journal``), as Kafka's metadata log.

A topic change appends one fsynced line to ``__topics.journal`` instead of
rewriting ``__topics.json`` whole (which cost O(topics) per creation: 8-27 ms at
1,000-3,000 topics); the journal is folded into ``__topics.json`` once it outgrows
it, at the start after a crash and at a clean stop. A crash (``crash``: nothing
closed) loses no answered change; a last line cut by a crash is ignored, any other
damage stops the start; a journal that follows another snapshot is left out.
"""

from __future__ import annotations

import errno
import json
import os
import uuid
from pathlib import Path

import crc32c
import pytest

from storage import LogDirsFailed, MetadataDirFailed, StorageError, fileops
from storage.topic_journal import JOURNAL_FILE, TopicJournal
from storage.topic_store import TOPICS_FILE, atomic_write

from .lead_helpers import Clock, crash, manager


def _count_rewrites(monkeypatch) -> list[int]:
    """The size of every whole write of ``__topics.json`` from now on."""
    sizes: list[int] = []

    def counting(path, text, **kwargs):
        if path.name == TOPICS_FILE:
            sizes.append(len(text))
        atomic_write(path, text, **kwargs)

    monkeypatch.setattr("storage.topic_store.atomic_write", counting)
    monkeypatch.setattr("storage.topic_journal.atomic_write", counting)
    return sizes


def test_a_creation_does_not_rewrite_the_topics_file_as_the_topics_grow(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock())
    rewrites = _count_rewrites(monkeypatch)
    for i in range(200):
        lm.create_topic(f"t{i}", 1, {"retention.ms": "1000"})
    assert rewrites == []  # the old store rewrote all of it 200 times, the last time with 200 topics
    journal = (tmp_path / JOURNAL_FILE).read_bytes().splitlines()
    assert len(journal) == 201 and max(map(len, journal)) < 200  # a header and one short line per creation


def test_folds_cost_a_bounded_number_of_bytes_per_change_over_time(tmp_path, monkeypatch):
    """A fold once the journal outgrows the snapshot: the rewrites add up to O(1) bytes a change."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    lm._store.fold_bytes = 2000
    rewrites = _count_rewrites(monkeypatch)
    for i in range(600):
        lm.create_topic(f"topic-{i:04d}", 1, {})
    line = max(map(len, (tmp_path / JOURNAL_FILE).read_bytes().splitlines()))
    assert 4 <= len(rewrites) <= 12  # each fold waits for the journal to outgrow a bigger snapshot
    assert sum(rewrites) / 600 < 3 * line  # the old store: 300 topics' worth a creation, on average
    crash(lm)
    assert len(manager(tmp_path, clock).topics()) == 600  # the last snapshot and the journal after it


def _changes(tmp_path):
    """A manager after one of each change, and what the topics must be."""
    lm = manager(tmp_path, Clock())
    keep = lm.create_topic("keep", 1, {"cleanup.policy": "compact"})
    lm.add_partitions("keep", 3)
    lm.set_topic_overrides("keep", {"cleanup.policy": "compact", "retention.ms": "5000"})
    lm.create_topic("gone", 2, {})
    lm.delete_topic("gone")
    again = lm.create_topic("gone", 1, {"max.message.bytes": "2000"})
    expected = {"keep": (keep.topic_id, 3, {"cleanup.policy": "compact", "retention.ms": "5000"}),
                "gone": (again.topic_id, 1, {"max.message.bytes": "2000"})}  # fmt: skip
    return lm, expected


def _state(lm) -> dict:
    return {name: (meta.topic_id, meta.num_partitions, meta.overrides) for name, meta in lm.topics().items()}


def test_every_kind_of_change_survives_a_crash_and_the_start_folds_the_journal(tmp_path):
    clock = Clock()
    lm, expected = _changes(tmp_path)
    assert not (tmp_path / TOPICS_FILE).exists()  # every change is in the journal alone
    crash(lm)
    lm2 = manager(tmp_path, clock)
    assert _state(lm2) == expected
    assert not (tmp_path / JOURNAL_FILE).exists()  # folded at the start
    saved = json.loads((tmp_path / TOPICS_FILE).read_text())  # the format of before
    assert saved["keep"] == {"topic_id": str(expected["keep"][0]), "num_partitions": 3,
                             "overrides": {"cleanup.policy": "compact", "retention.ms": "5000"}}  # fmt: skip
    assert lm2.get_log("keep", 2).config.retention_ms == 5000 and lm2.get_log("gone", 1) is None


def test_a_clean_stop_folds_the_journal(tmp_path):
    lm, expected = _changes(tmp_path)
    lm.close()
    assert not (tmp_path / JOURNAL_FILE).exists()
    assert set(json.loads((tmp_path / TOPICS_FILE).read_text())) == {"keep", "gone"}
    assert _state(manager(tmp_path, Clock())) == expected


def test_a_data_dir_of_the_old_store_loads_and_takes_changes(tmp_path):
    topic_id = uuid.uuid4()
    old = {"old": {"topic_id": str(topic_id), "num_partitions": 2, "overrides": {"cleanup.policy": "compact"}}}
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / TOPICS_FILE).write_text(json.dumps(old, indent=1, sort_keys=True))
    lm = manager(tmp_path, Clock())
    assert _state(lm) == {"old": (topic_id, 2, {"cleanup.policy": "compact"})}
    new = lm.create_topic("new", 1, {})
    crash(lm)
    assert _state(manager(tmp_path, Clock())) == {"old": (topic_id, 2, {"cleanup.policy": "compact"}),
                                                  "new": (new.topic_id, 1, {})}  # fmt: skip


def _journal_with_two_topics(tmp_path) -> list[bytes]:
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {"cleanup.policy": "compact"})
    lm.create_topic("b", 1, {})
    crash(lm)
    return (tmp_path / JOURNAL_FILE).read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("tail", [b'{"name": "c", "op": "pu', b"\0" * 40, b"\0" * 39 + b"\n", b'{"op": "put", "n\n'],
                         ids=["cut", "zeros", "zeros with newline", "cut with newline"])  # fmt: skip
def test_a_last_line_cut_by_a_crash_is_ignored(tmp_path, tail):
    lines = _journal_with_two_topics(tmp_path)
    (tmp_path / JOURNAL_FILE).write_bytes(b"".join(lines) + tail)
    lm = manager(tmp_path, Clock())
    assert sorted(lm.topics()) == ["a", "b"] and lm.topics()["a"].overrides == {"cleanup.policy": "compact"}
    lm.create_topic("c", 1, {})  # the cut line is gone for good: later changes follow whole lines
    crash(lm)
    assert sorted(manager(tmp_path, Clock()).topics()) == ["a", "b", "c"]


@pytest.mark.parametrize("damage", ["middle", "middle and cut tail", "header", "header alone"])
def test_a_damaged_journal_stops_the_start(tmp_path, damage):
    lines = _journal_with_two_topics(tmp_path)
    if damage == "header":
        lines[0] = b'{"follows": \n'
    elif damage == "header alone":  # it is written with the first change, never without
        del lines[1:]
    else:
        lines.insert(2, b'{"op": "put", "name": "x", "topic_id": "zz", "num_partitions": 1, "overrides": {}}\n')
        if damage == "middle and cut tail":
            del lines[3:]
            lines.append(b'{"op": "pu')
    (tmp_path / JOURNAL_FILE).write_bytes(b"".join(lines))
    with pytest.raises(StorageError) as info:
        manager(tmp_path, Clock())
    assert JOURNAL_FILE in str(info.value) and info.value.errno == errno.EIO
    assert (tmp_path / JOURNAL_FILE).read_bytes() == b"".join(lines)  # left as it was, for a person to mend


def test_a_value_changed_by_damage_inside_a_line_is_found_by_its_checksum(tmp_path):
    """Damage that keeps the JSON valid (``compact`` -> ``delete``) must not load as the topic's config."""
    lines = _journal_with_two_topics(tmp_path)
    lines.append(lines[-1])  # a third line, so the damaged one is not the last (which a crash may cut)
    lines[1] = lines[1].replace(b'"compact"', b'"delete"')
    (tmp_path / JOURNAL_FILE).write_bytes(b"".join(lines))
    with pytest.raises(StorageError, match="line 2"):
        manager(tmp_path, Clock())


def test_a_last_line_whose_checksum_holds_but_is_no_change_is_damage(tmp_path):
    lines = _journal_with_two_topics(tmp_path)
    text = json.dumps({"name": "x", "op": "rename"}, sort_keys=True)
    lines.append(f"{crc32c.crc32c(text.encode()):08x} {text}\n".encode())  # written whole, so not cut by a crash
    (tmp_path / JOURNAL_FILE).write_bytes(b"".join(lines))
    with pytest.raises(StorageError, match="line 4"):
        manager(tmp_path, Clock())


def test_a_journal_that_follows_another_snapshot_is_left_out(tmp_path):
    """A fold cut short by a crash after the new ``__topics.json``: the old journal's changes are in it already,
    and a change it holds that was undone since must not come back."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("t", 1, {})
    lm.create_topic("u", 1, {})
    old_journal = (tmp_path / JOURNAL_FILE).read_bytes()
    lm.delete_topic("t")
    lm.close()  # the fold: __topics.json without t, the journal removed
    (tmp_path / JOURNAL_FILE).write_bytes(old_journal)  # as if the crash came before the removal
    assert sorted(manager(tmp_path, Clock()).topics()) == ["u"]


def _fail(patch, name: str) -> None:
    """``fileops.<name>`` fails from now on, as a failing disk makes it fail."""

    def failing(*args, **kwargs):
        raise OSError(errno.EIO, f"injected {name} failure")

    patch.setattr(fileops, name, failing)


@pytest.mark.parametrize("fault", ["fsync", "pwrite"], ids=["fsync failed", "write failed"])
@pytest.mark.parametrize("first", [False, True], ids=["appended", "journal started"])
def test_a_change_the_disk_refuses_takes_the_metadata_dir_offline_and_nothing_more_is_written(
        tmp_path, monkeypatch, fault, first):  # fmt: skip
    """Kafka halts when its metadata log cannot be written: the change is not answered, and the next start
    finds what the disk kept of it. Before, the change was cut back out of the journal, best effort, and the
    next change folded; a cut that failed too brought back after a crash a change refused to the client."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    if first:
        lm.close()  # folded: the refused change starts a new journal (written whole, then renamed)
        lm = manager(tmp_path, Clock())
    with monkeypatch.context() as patch:
        _fail(patch, fault)
        with pytest.raises(MetadataDirFailed, match="saving the topics failed"):
            lm.create_topic("refused", 1, {})
    assert lm.failures.metadata_offline and "refused" not in lm.topics()
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name != ".lock"}
    with pytest.raises(MetadataDirFailed, match="offline"):
        lm.create_topic("later", 1, {})
    lm.close()  # no fold, no clean-shutdown marker in the failed dir
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file() and p.name != ".lock"} == files
    kept = fault == "fsync" and not first  # the line was written whole; only its fsync failed
    assert sorted(manager(tmp_path, Clock()).topics()) == (["a", "refused"] if kept else ["a"])


@pytest.mark.parametrize("fault", ["replace", "fsync_path"], ids=["rename failed", "directory fsync failed"])
def test_a_fold_that_fails_keeps_the_change_and_takes_the_metadata_dir_offline(tmp_path, monkeypatch, fault):
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    lm._store.fold_bytes = 0  # the next change folds
    with monkeypatch.context() as patch:
        _fail(patch, fault)
        lm.set_topic_overrides("a", {"retention.ms": "5000"})  # appended and fsynced: saved; the fold failed
    assert lm.failures.metadata_offline and lm.topics()["a"].overrides == {"retention.ms": "5000"}
    with pytest.raises(MetadataDirFailed):
        lm.set_topic_overrides("a", {})
    crash(lm)
    assert manager(tmp_path, Clock()).topics()["a"].overrides == {"retention.ms": "5000"}


def _out_of_descriptors(patch) -> None:
    """``fileops.open_file`` fails as a process at its open-files limit fails (EMFILE) from now on."""

    def failing(*args, **kwargs):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    patch.setattr(fileops, "open_file", failing)


@pytest.mark.parametrize("first", [False, True], ids=["appended", "journal started"])
def test_a_change_refused_for_want_of_descriptors_leaves_the_metadata_dir_online(tmp_path, monkeypatch, first):
    """Out of descriptors at a save's first step nothing was written: the change is refused
    (StorageError, answered KAFKA_STORAGE_ERROR), as a log write out of descriptors is, and the files
    take the next change."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    if first:
        lm.close()
        lm = manager(tmp_path, Clock())
    with monkeypatch.context() as patch:
        _out_of_descriptors(patch)
        with pytest.raises(StorageError, match="Too many open files") as refused:
            lm.set_topic_overrides("a", {"retention.ms": "5000"})
    assert not isinstance(refused.value, MetadataDirFailed) and not lm.failures.metadata_offline
    assert lm.topics()["a"].overrides == {}
    lm.create_topic("b", 1, {})
    crash(lm)
    reopened = manager(tmp_path, Clock())
    assert sorted(reopened.topics()) == ["a", "b"] and reopened.topics()["a"].overrides == {}


def test_a_creation_undone_out_of_descriptors_is_not_refused_while_the_journal_keeps_it(tmp_path, monkeypatch):
    """A creation's pending topic is saved, then a log cannot be made (out of descriptors) and the undo's
    save of its removal writes nothing either: the journal keeps the topic, which the next start (or the
    next fold) would bring back. Refusing the creation (KAFKA_STORAGE_ERROR) would be untrue, so the
    metadata dir fails: not answered, as any save part way through a change."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    steps = lm.create_topic_steps("t", 2, {})
    pending = steps.send()
    pending()  # the pending topic is in the journal
    with monkeypatch.context() as patch:
        _out_of_descriptors(patch)  # from here the first log and the undo's save both fail
        with pytest.raises(MetadataDirFailed):
            list(steps)
    assert lm.failures.metadata_offline and "t" not in lm.topics()
    crash(lm)
    assert sorted(manager(tmp_path, Clock()).topics()) == ["a", "t"]  # the next start finishes what it kept


def test_a_fold_put_off_for_want_of_descriptors_keeps_the_change_and_folds_later(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    lm._store.fold_bytes = 0  # the next change folds
    real_open = fileops.open_file

    def journal_only(path, *args, **kwargs):  # the append opens the journal; the fold's new file fails
        if Path(path).name == JOURNAL_FILE:
            return real_open(path, *args, **kwargs)
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    with monkeypatch.context() as patch:
        patch.setattr(fileops, "open_file", journal_only)
        lm.set_topic_overrides("a", {"retention.ms": "5000"})
    assert not lm.failures.metadata_offline and (tmp_path / JOURNAL_FILE).exists()
    lm.set_topic_overrides("a", {"retention.ms": "6000"})  # the fold put off is done now
    assert not (tmp_path / JOURNAL_FILE).exists()
    crash(lm)
    assert manager(tmp_path, Clock()).topics()["a"].overrides == {"retention.ms": "6000"}


@pytest.mark.parametrize("fault", ["replace", "fsync_path"], ids=["rename failed", "directory fsync failed"])
def test_a_fold_that_fails_at_the_start_stops_the_start(tmp_path, monkeypatch, fault):
    """The metadata log dir fails and the start stops (``LogDirsFailed``, exit status 1); a directory fsync
    that fails after the rename (``SaveInDoubt``, a ``StorageError``) too, not taken for damaged files."""
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    crash(lm)  # the journal is left: the start folds it
    with monkeypatch.context() as patch:
        _fail(patch, fault)
        with pytest.raises(LogDirsFailed, match="have failed"):
            manager(tmp_path, Clock())
    assert sorted(manager(tmp_path, Clock()).topics()) == ["a"]


def test_a_fold_that_comes_out_the_same_drops_the_journal_for_good(tmp_path):
    lm = manager(tmp_path, Clock())
    lm.create_topic("a", 1, {})
    lm.close()
    before = (tmp_path / TOPICS_FILE).read_bytes()
    lm = manager(tmp_path, Clock())
    lm.create_topic("b", 1, {})
    lm.delete_topic("b")
    lm.close()  # the topics of the snapshot again: the journal would still follow it
    assert (tmp_path / TOPICS_FILE).read_bytes() == before and not (tmp_path / JOURNAL_FILE).exists()
    assert sorted(manager(tmp_path, Clock()).topics()) == ["a"]
