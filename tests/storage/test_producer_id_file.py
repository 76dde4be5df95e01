"""``producer-id-block`` (``storage.topic_store.ProducerIds``) is read at the start, and a damaged one stops it.

The file holds one line, the first id of the next block to save. One that is
not that (empty or cut short, not an integer, negative, past int64's range,
unreadable) stops the start with a ``StorageError`` naming it, as a damaged
``__topics.json`` does and as a bad record in Kafka's metadata log stops the
broker. Before, it was read only when the next block was saved: an empty file
was taken for 0 (ids handed out again) and any other damage was an unexpected
error at that save.
"""

from __future__ import annotations

import errno
import os

import pytest

from storage import SaveInDoubt, StorageError, fileops
from storage.topic_store import PRODUCER_ID_BLOCK, PRODUCER_IDS

from .lead_helpers import Clock, manager

DAMAGE = {
    "empty": b"",
    "cut short": b"200",  # "2000\n" lost its end
    "not an integer": b"two thousand\n",
    "negative": b"-1000\n",
    "a float": b"2e3\n",
    "two lines": b"2000\n3000\n",
    "not text": b"\xff\xfe2000\n",
    "past int64": b"9223372036854775808\n",
}


@pytest.mark.parametrize("text", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_file_stops_the_start_naming_it(tmp_path, text):
    clock = Clock()
    manager(tmp_path, clock).close()
    (tmp_path / PRODUCER_IDS).write_bytes(text)
    with pytest.raises(StorageError, match=f"{PRODUCER_IDS}: unreadable producer id block") as info:
        manager(tmp_path, clock)
    assert info.value.errno == errno.EIO and "restore the file" in str(info.value)


def test_an_unreadable_file_stops_the_start(tmp_path):
    clock = Clock()
    manager(tmp_path, clock).close()
    (tmp_path / PRODUCER_IDS).mkdir()  # reading it fails (IsADirectoryError), whoever the user is
    with pytest.raises(StorageError, match=f"{PRODUCER_IDS}: unreadable producer id block .*IsADirectory"):
        manager(tmp_path, clock)


def test_a_restored_file_starts_where_it_says(tmp_path):
    """After the refused start the dir is free again (no lock kept), and the restored file's block is next."""
    clock = Clock()
    manager(tmp_path, clock).close()
    (tmp_path / PRODUCER_IDS).write_bytes(b"")
    with pytest.raises(StorageError):
        manager(tmp_path, clock)
    (tmp_path / PRODUCER_IDS).write_text("5000\n")
    lm = manager(tmp_path, clock)
    try:
        assert lm.producer_ids.save_next_block() == 5000
        assert (tmp_path / PRODUCER_IDS).read_text() == f"{5000 + PRODUCER_ID_BLOCK}\n"
    finally:
        lm.close()


def test_a_block_whose_save_is_in_doubt_is_never_handed_out_by_a_later_save(tmp_path, monkeypatch):
    """The file is renamed in place but the directory's fsync fails (``SaveInDoubt``): the file may hold that
    block, so the next save is the block after it, as when the file was read at each save."""
    clock = Clock()
    lm = manager(tmp_path, clock)
    real = fileops.fsync_path

    def fsync_path(path) -> None:
        if os.path.samefile(path, tmp_path):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(path)

    try:
        assert lm.producer_ids.save_next_block() == 0
        monkeypatch.setattr(fileops, "fsync_path", fsync_path)
        with pytest.raises(SaveInDoubt):
            lm.producer_ids.save_next_block()
        monkeypatch.undo()
        assert lm.producer_ids.save_next_block() == 2 * PRODUCER_ID_BLOCK
    finally:
        lm.close()
