"""A store of metadata changes one change at a time, and saves each on a worker thread.

The broker's stores of metadata other than the topics (the dynamic broker
configs, the group configs, the client quotas, the ACLs, the SCRAM
credentials) rewrite their file on every change (``storage.topic_store.
atomic_write``: write, fsync, rename, fsync of the directory), then count the
change's record in the metadata quorum (``MetadataQuorum.append``: one more
fsync). ``StoreSaves`` keeps those fsyncs off the event loop, so the other
connections are served while the disk works. A change runs so::

    async with store.saves:                       # the store's turn
        new = ...                                 # worked out from memory
        await store.saves.save(store.write, new)  # on a worker thread
        store.install(new)                        # memory, once saved

* One change at a time per store (a trio lock, FIFO): each is worked out
  from what the one before it left, saved, and made, before the next
  starts. Changes land in memory and on disk in one order, the order of
  their turns, as Kafka's controller applies the records of one metadata
  log one after another.
* ``save`` runs the write on a worker thread, shielded from cancellation: a
  save once begun is finished, so memory never disagrees with the file
  because a client went away. It raises what the write raised; the caller
  then leaves memory as it was and answers as the store answers a failed
  save. Memory is changed only once ``save`` returned, with no checkpoint in
  between, so no other request ever sees a change the disk has not got.
* The caller answers the request after its turn: once its save is durable.
* A save whose new file is in place but whose directory fsync failed
  (``storage.SaveInDoubt``) is neither made nor refused: a restart may find
  it or not. ``on_in_doubt`` then takes the metadata log dir offline, which
  stops the broker, and ``save`` raises ``MetadataDirFailed`` (no ``OSError``:
  a refusal's ``except OSError`` lets it through), which dispatch answers by
  closing the connection, as Kafka halts when its metadata log cannot be
  flushed. (Before, the change
  was refused while its file was in place: a restart made it.) Once the
  metadata log dir has failed (``offline``), no store saves any more: each
  change is ``MetadataDirFailed`` at once, as topic changes are, until the
  broker has stopped.

The topics' changes have their own ordering (``broker.topics.run_steps``:
saves interleaved with log making); this is the simple case, a whole new
file per change.
"""

from __future__ import annotations

import errno
import logging
from typing import Any, Callable, TypeVar

import trio

from storage import MetadataDirFailed, SaveInDoubt

T = TypeVar("T")
log = logging.getLogger("minibroker")  # as the stores logged it


class NotStored(Exception):
    """A change whose file could not be written (a full or failing disk), and so was not made."""


class StoreSaves:
    """One store's turn to change (``async with``) and its saves on a worker thread (``save``)."""

    def __init__(self) -> None:
        self._turn = trio.Lock()
        self.on_in_doubt: Callable[[str], None] = lambda _why: None  # the broker: the metadata log dir fails
        self.offline: Callable[[], bool] = lambda: False  # the broker: whether the metadata log dir has failed

    async def __aenter__(self) -> "StoreSaves":
        await self._turn.acquire()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._turn.release()

    async def save(self, write: Callable[..., T], *args: Any) -> T:
        """``write(*args)`` on a worker thread, finished even if the caller is cancelled; the caller has the
        turn (``async with`` this), so one save at a time and in the order of the turns."""
        if self._turn.statistics().owner is not trio.lowlevel.current_task():
            raise RuntimeError("a store saves only in its turn (async with its StoreSaves)")
        if self.offline():
            raise MetadataDirFailed(errno.EIO, "the metadata log dir is offline: nothing more is saved")
        with trio.CancelScope(shield=True):
            try:
                return await trio.to_thread.run_sync(write, *args)
            except SaveInDoubt as exc:  # see the module docstring
                why = f"a metadata save is in doubt: {exc}"
                self.on_in_doubt(why)
                raise MetadataDirFailed(exc.errno, why) from exc

    async def save_or_refuse(self, what: str, path: Any, write: Callable[..., T], *args: Any) -> T:
        """``save(write, *args)``; a save the disk refused (``what``, in ``path``) is logged and raised as
        ``NotStored`` (the change is refused), one in doubt goes on as ``MetadataDirFailed``."""
        try:
            return await self.save(write, *args)
        except OSError as exc:  # not MetadataDirFailed (no OSError): that goes on
            log.error("could not store the %s in %s: %s", what, path, exc)
            raise NotStored(f"could not store the {what}: {exc}") from None
