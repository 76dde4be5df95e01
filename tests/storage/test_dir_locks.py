"""Each log dir's ``.lock`` and the checks of ``log.dirs`` at open, as Kafka's LogManager makes them.

Kafka's ``lockLogDirs`` locks ``.lock`` in every log dir for the broker's life and refuses to start when
another holds it ("Failed to acquire lock on file .lock in <dir>. A Kafka instance in another process or
thread is using this directory."); a lock that fails for another reason (an IOException) takes that dir
offline. Its ``createAndValidateLogDirs`` refuses a dir given twice, on canonical paths ("Duplicate log
directory found"), and the broker refuses an empty ``log.dirs``. Here: a second manager on a dir, in
another process or in this one, is refused before it reads or writes a file there, and the first runs on;
the lock goes at ``close`` (after the clean-shutdown marker), when an open fails, and with a killed
process, and a child process does not inherit it; a ``.lock`` that cannot be opened takes only its dir
offline; the ``.lock`` file is never taken for a partition. The old manager took no lock: two managers
ran on one dir, each recovering and writing the other's files.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from storage import ConfigError, LogDirInUse, LogDirsFailed, LogManager
from storage.dir_locks import LOCK_FILE, DirLocks
from storage.log_opening import CLEAN_SHUTDOWN

from .lead_helpers import Clock, append, manager, read_all

IN_USE = ("Failed to acquire lock on file .lock in {dir}. A Kafka instance in another process or thread is "
          "using this directory.")  # fmt: skip
# How another process locks a file: as a broker of ours (flock) or as Kafka's FileLock (FileChannel.tryLock, which
# on Linux is a POSIX record lock, as lockf takes it).
LOCKS = {"flock": "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)",
         "record": "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)"}
# Another process: lock the file given, say so, hold it until stdin closes.
HOLDER = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
          "{lock}; print('held', flush=True); sys.stdin.read()")  # fmt: skip
# Another process: exit 0 if the file given can be locked now, 1 if another holds it.
PROBE = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "try:\n    {lock}\n"
         "except OSError:\n    sys.exit(1)")  # fmt: skip


def _free_for_another_process(root, kind: str = "flock") -> bool:
    probe = PROBE.format(lock=LOCKS[kind])
    return subprocess.run([sys.executable, "-c", probe, str(root / LOCK_FILE)], timeout=30).returncode == 0


@contextlib.contextmanager
def _held_by_another_process(root, kind: str = "flock") -> Iterator[None]:
    """Another process holds ``root``'s lock inside; it is SIGKILLed at the end, as a broker can be."""
    holder = HOLDER.format(lock=LOCKS[kind])
    with subprocess.Popen([sys.executable, "-c", holder, str(root / LOCK_FILE)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True) as proc:  # fmt: skip
        try:
            assert proc.stdout.readline() == "held\n"
            yield
        finally:
            proc.kill()


def test_a_second_manager_in_this_process_is_refused_and_the_first_runs_on(tmp_path):
    clock = Clock()
    first = manager(tmp_path, clock)
    first.create_topic("t", 1, {})
    append(first.get_log("t", 0))
    files = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(LogDirInUse) as refused:
        manager(tmp_path, clock)
    assert str(refused.value) == IN_USE.format(dir=tmp_path)
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == files  # nothing read into, written
    append(first.get_log("t", 0))
    assert not _free_for_another_process(tmp_path)  # held from open ...
    first.close()
    assert _free_for_another_process(tmp_path)  # ... to close
    again = manager(tmp_path, clock)  # a restart in one process: close, then open
    try:
        assert [o for o, _v in read_all(again.get_log("t", 0))] == [0, 1]
    finally:
        again.close()


@pytest.mark.parametrize("kind", sorted(LOCKS))
def test_a_dir_another_process_holds_is_refused_until_that_process_dies(tmp_path, kind):
    LogManager.open([tmp_path], {}, Clock()).close()
    with _held_by_another_process(tmp_path, kind):
        with pytest.raises(LogDirInUse, match="A Kafka instance in another process or thread"):
            LogManager.open([tmp_path], {}, Clock())
        assert (tmp_path / CLEAN_SHUTDOWN).exists()  # the refused start read nothing: the marker stays
    LogManager.open([tmp_path], {}, Clock()).close()  # the holder was killed: the kernel dropped its lock


def test_the_lock_goes_after_the_marker_is_written(tmp_path, monkeypatch):
    lm = manager(tmp_path, Clock())
    seen = []
    release = DirLocks.release
    monkeypatch.setattr(DirLocks, "release", lambda self: (seen.append((tmp_path / CLEAN_SHUTDOWN).exists()),
                                                           release(self)))  # fmt: skip
    lm.close()
    assert seen == [True] and _free_for_another_process(tmp_path)


def test_a_child_process_does_not_keep_the_lock(tmp_path):
    lm = manager(tmp_path, Clock())
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             close_fds=False)  # fmt: skip
    try:
        lm.close()
        assert _free_for_another_process(tmp_path)  # the child still runs, without the descriptor
    finally:
        child.communicate(timeout=30)


def test_a_failed_open_releases_what_it_locked(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    LogManager.open([a, b], {}, Clock()).close()
    with _held_by_another_process(b):
        with pytest.raises(LogDirInUse, match=str(b)):
            LogManager.open([a, b], {}, Clock())
        assert _free_for_another_process(a)  # a, locked first, was let go
    (a / "__topics.json").write_text("{damaged")
    with pytest.raises(Exception):  # noqa: B017 - whatever stops the start, the locks go with it
        LogManager.open([a, b], {}, Clock())
    assert _free_for_another_process(a) and _free_for_another_process(b)


def test_a_lock_that_cannot_be_taken_for_another_reason_takes_only_its_dir_offline(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (b / LOCK_FILE).mkdir(parents=True)  # opening it fails (EISDIR), as a bad disk would fail it
    lm = LogManager.open([a, b], {}, Clock())
    try:
        assert lm.failures.offline == {b} and lm.dir_locks.holds(a) and not lm.dir_locks.holds(b)
        lm.create_topic("t", 2, {})
        assert {lm.get_log("t", p).dir.parent for p in range(2)} == {a}
    finally:
        lm.close()
    with pytest.raises(LogDirsFailed, match="none of the log dirs in .* can be created or validated"):
        LogManager.open([b], {}, Clock())


def test_the_lock_file_is_no_partition(tmp_path, caplog):
    lm = manager(tmp_path, Clock())
    lm.close()
    assert (tmp_path / LOCK_FILE).is_file()
    with caplog.at_level("WARNING"):
        again = manager(tmp_path, Clock())
    again.close()
    assert again.logs() == [] and LOCK_FILE not in caplog.text


@pytest.mark.parametrize("spelling", ["{a}/", "{a}/../a", "{link}"])
def test_a_dir_given_twice_is_refused_before_anything_is_made(tmp_path, spelling):
    a, link = tmp_path / "a", tmp_path / "link"
    link.symlink_to(a)  # a itself does not exist yet
    other = spelling.format(a=a, link=link)
    with pytest.raises(ConfigError) as refused:
        LogManager.open([str(a), other], {}, Clock())
    assert str(refused.value).startswith("Duplicate log directory found: ")
    assert not a.exists()


def test_no_log_dir_is_refused():
    with pytest.raises(ConfigError, match=r"^At least one log directory must be defined via log.dirs or log.dir.$"):
        LogManager.open([], {}, Clock())


def test_the_lock_descriptor_is_not_inheritable(tmp_path):
    lm = manager(tmp_path, Clock())
    try:
        [fd] = [int(fd) for fd in os.listdir("/proc/self/fd")
                if os.path.realpath(f"/proc/self/fd/{fd}") == str(tmp_path / LOCK_FILE)]  # fmt: skip
        assert not os.get_inheritable(fd)
    finally:
        lm.close()


def test_a_second_close_writes_nothing(tmp_path):
    """A late second ``close`` (a broker closed twice) must not write the checkpoints and the marker into a dir
    that another manager opened since: the old one wrote both there (empty checkpoints: no logs were left)."""
    clock = Clock()
    first = manager(tmp_path, clock)
    first.create_topic("t", 1, {})
    append(first.get_log("t", 0))
    first.close()
    second = manager(tmp_path, clock)
    append(second.get_log("t", 0))
    second.write_checkpoints()
    files = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    first.close()
    try:
        assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == files
        assert not (tmp_path / CLEAN_SHUTDOWN).exists()
    finally:
        second.close()


def test_the_refusal_names_a_relative_dir_by_its_absolute_path(tmp_path, monkeypatch):
    """As Kafka's message does (its log dirs are absolute files): ``log.dirs=data`` is named in full."""
    monkeypatch.chdir(tmp_path)
    clock = Clock()
    first = manager(Path("data"), clock)
    try:
        with pytest.raises(LogDirInUse) as refused:
            manager(Path("data"), clock)
        assert str(refused.value) == IN_USE.format(dir=tmp_path / "data")
    finally:
        first.close()


def test_a_record_lock_is_held_from_open_to_close_whatever_else_this_process_closes(tmp_path):
    """The record lock is what a Java Kafka's FileLock meets; it is tied to the manager's descriptor, so a
    descriptor of the same file opened and closed elsewhere in this process does not drop it."""
    lm = manager(tmp_path, Clock())
    try:
        assert not _free_for_another_process(tmp_path, "record")
        os.close(os.open(tmp_path / LOCK_FILE, os.O_RDONLY))
        with pytest.raises(LogDirInUse):
            manager(tmp_path, Clock())  # a refused second manager closes its own descriptor of the file
        assert not _free_for_another_process(tmp_path, "record")
    finally:
        lm.close()
    assert _free_for_another_process(tmp_path, "record")



@pytest.mark.parametrize("kind", sorted(LOCKS))
def test_a_dir_that_goes_offline_is_unlocked_and_the_others_stay_locked(tmp_path, kind):
    """Kafka's handleLogDirFailure destroys the failed dir's lock, so the dir can be replaced while the broker
    runs on the others; the old manager held it until its close."""
    first, second = tmp_path / "a", tmp_path / "b"
    lm = LogManager.open([first, second], {}, Clock())
    try:
        lm.failures.fail_dir(second, "a disk error")
        assert _free_for_another_process(second, kind)
        assert not _free_for_another_process(first, kind)
    finally:
        lm.close()
    assert _free_for_another_process(first, kind)
