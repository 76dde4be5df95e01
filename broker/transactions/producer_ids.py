"""Producer ids for InitProducerId, handed out from blocks saved ahead (Kafka's ``ProducerIdManager``).

The ids come in blocks of 1000 (``storage.topic_store.ProducerIds``): a block
is saved in ``producer-id-block`` (a write, an fsync of the file and of its
directory) before any of its ids is handed out, so no id is handed out twice,
across restarts and crashes too. ``ProducerIdManager`` serves both kinds of
InitProducerId, the idempotent producers' (the handler) and the transactional
ones' (``coordinator.py``), as Kafka's transaction coordinator owns the one
``producerIdManager`` both use:

* ``allocate`` hands out the next id of the block in use at once, on the
  event loop. Handing out the block's id ``first + PREFETCH_AT`` (its 901st,
  once 900 are handed out) starts the next block's save in the background,
  as Kafka's ``RPCProducerIdManager.generateProducerId`` asks the controller
  for the next block when the id it claims is ``firstProducerId + (int)
  (size * PidPrefetchThreshold)``: a trio system task takes the
  manager's turn (``broker.store_saves.StoreSaves``, as every metadata store
  saves), saves the block on a worker thread (shielded: a save once begun is
  finished) and keeps it ready; it is put in use when the block in use runs
  out. So a request normally never waits for an fsync.
* A request that finds the block in use used up takes the ready block at
  once; or, with a save in progress (the prefetch's, or another request's),
  waits for the turn and then takes the new block's ids; or, with neither
  (the prefetch was refused, or the first block after a start), saves the
  next block itself in its turn and takes its first id, the other requests
  that find the block used up waiting for it. Ids are claimed on the event
  loop only, so none twice; none before its block is on disk. A block is put
  in use (or kept ready) with no checkpoint after its save returned, so a
  request cancelled while its save runs (its connection gone) skips no block:
  the requests that waited take its ids (at most the cancelled request's own
  id is never answered).
* A save the disk refuses (a full disk), or a block past int64's range (the
  ids exhausted, as Kafka's controller refuses it), hands out nothing and is
  logged. In
  the background nothing changes: the request that then finds the block used
  up saves it itself. A request's refused save is ``ProducerIdsUnavailable``,
  answered COORDINATOR_LOAD_IN_PROGRESS, which clients retry (as Kafka
  answers while it has no block), and the next request tries again. A save in
  doubt (renamed in place, the directory's fsync failed) takes the metadata
  log dir offline through ``StoreSaves``' hook, which stops the broker, as
  Kafka halts when a metadata record cannot be written; a request's is
  ``MetadataDirFailed``, not answered; the background's is logged (a system
  task's exception would end the whole trio run). Once that dir is offline
  no block is saved any more.
* Each block saved appends one record to the metadata quorum
  (``on_metadata_change``, from the worker thread, as every store does), as
  Kafka's controller appends a ``ProducerIdsRecord`` for each block it hands
  out (``ProducerIdControlManager.generateNextProducerId``). A ready block is
  saved, so a restart starts past it, unused, as a Kafka broker that restarts
  never uses the block it had fetched ahead.

Kafka's broker never waits for a block: a request that finds both blocks used
up is answered COORDINATOR_LOAD_IN_PROGRESS at once, because its request
handler threads must not block on a round trip to the controller. Here the
next block is a local fsync and a waiting trio task holds no thread, so such
a request waits for the save instead: the client gets its id in one round
trip and never meets the retriable error for a save that succeeds.
"""

from __future__ import annotations

import errno
import logging
from typing import Callable

import trio

from storage import MetadataDirFailed, ProducerIdsUnavailable
from storage.topic_store import PRODUCER_ID_BLOCK, ProducerIds

from ..store_saves import NotStored, StoreSaves

log = logging.getLogger("minibroker")  # as the stores log their refused saves

PID_PREFETCH_THRESHOLD = 0.90  # Kafka's ProducerIdManager.PidPrefetchThreshold
PREFETCH_AT = int(PRODUCER_ID_BLOCK * PID_PREFETCH_THRESHOLD)  # 900: the block's id first + 900 starts the next save


class ProducerIdManager:
    """Producer ids from ``ids``, the blocks saved on a worker thread in ``saves``' turns; see the module."""

    def __init__(self, ids: ProducerIds) -> None:
        self.ids = ids
        self.saves = StoreSaves()  # the broker points its in-doubt and offline hooks at the metadata log dir
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each block saved (on its thread)
        self._ready: int | None = None  # the first id of a block saved ahead, not in use yet
        self._prefetching = False  # a background save started and not yet over

    async def allocate(self) -> int:
        """A producer id never handed out before; ``ProducerIdsUnavailable`` when the next block was refused,
        ``MetadataDirFailed`` when its save is in doubt."""
        claimed = self._claim()
        if claimed is not None:
            return claimed
        async with self.saves:
            claimed = self._claim()  # a block saved while this request waited for its turn
            if claimed is None:
                self.ids.use_block(await self._save_next_block())
                claimed = self._claim()
        assert claimed is not None  # a block just put in use has ids
        return claimed

    def _claim(self) -> int | None:
        """The next id of the block in use, or of the ready block once that one is used up (None: neither);
        the block's id ``first + PREFETCH_AT`` starts the next block's save in the background."""
        claimed = self.ids.claim()
        if claimed is None and self._ready is not None:
            self.ids.use_block(self._ready)
            self._ready = None
            claimed = self.ids.claim()
        if claimed is not None and claimed == self.ids.first + PREFETCH_AT:
            self._prefetch_in_background()
        return claimed

    def _prefetch_in_background(self) -> None:
        """Start the next block's save, unless one is saved ahead or being saved already."""
        if self._ready is None and not self._prefetching:
            self._prefetching = True
            trio.lowlevel.spawn_system_task(self._prefetch, name="producer id block prefetch")

    async def _prefetch(self) -> None:
        """The next block saved in the manager's turn and kept ready; any failure is logged and changes
        nothing (an exception would end the trio run), see the module."""
        try:
            async with self.saves:
                if self._ready is None and self.ids.handed_out() > PREFETCH_AT:  # no request saved one meanwhile
                    self._ready = await self._save_next_block()
        except ProducerIdsUnavailable:  # logged; the request that finds the block used up tries again
            pass
        except MetadataDirFailed as exc:  # the metadata log dir is offline: the broker stops
            log.error("the next block of producer ids was not saved ahead: %s", exc)
        except Exception:  # unexpected: the request that needs the block meets it again
            log.exception("saving the next block of producer ids ahead failed")
        finally:
            self._prefetching = False

    async def _save_next_block(self) -> int:
        """The next block saved (its first id); ``ProducerIdsUnavailable`` when the disk refused it (logged)."""
        try:
            return await self.saves.save_or_refuse("next block of producer ids", self.ids.dirs[0],
                                                   self._write_next_block)  # fmt: skip
        except NotStored as exc:
            raise ProducerIdsUnavailable(errno.EIO, str(exc)) from exc

    def _write_next_block(self) -> int:
        """On the worker thread: the next block saved and its record counted; its first id."""
        start = self.ids.save_next_block()
        self.on_metadata_change()
        return start
