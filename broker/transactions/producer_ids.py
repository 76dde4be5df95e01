"""Producer ids for InitProducerId, handed out from blocks saved ahead (Kafka's ``ProducerIdManager``).

The ids come in blocks of 1000 (``storage.topic_store.ProducerIds``): a block
is saved in ``producer-id-block`` (a write, an fsync of the file and of its
directory) before any of its ids is handed out, so no id is handed out twice,
across restarts and crashes too. ``ProducerIdManager`` serves both kinds of
InitProducerId, the idempotent producers' (the handler) and the transactional
ones' (``coordinator.py``), as Kafka's transaction coordinator owns the one
``producerIdManager`` both use:

* ``allocate`` hands out the next id of the block in use at once, on the
  event loop. Once that block is used up, the request takes the manager's
  turn (``broker.store_saves.StoreSaves``, as every metadata store saves),
  saves the next block on a worker thread (shielded: a save once begun is
  finished), puts it in use only once the save returned, and takes its first
  id. Meanwhile the other connections are served; the InitProducerId requests
  that also find the block used up wait for the turn and then take the next
  ids of the new block (or save another, if that one is used up too or its
  save was refused). Ids are claimed on the event loop only, so none twice;
  none before its block is on disk. A request cancelled while its save runs
  (its connection gone) still puts the block in use, as there is no
  checkpoint between the save's return and ``use_block``: the requests that
  waited take its ids, and no block is saved twice nor skipped (at most the
  cancelled request's own id is never answered).
* A save the disk refuses (a full disk) hands out nothing and is logged:
  ``ProducerIdsUnavailable``, answered COORDINATOR_LOAD_IN_PROGRESS, which
  clients retry, and the next request tries the save again. A save in doubt
  (renamed in place, the directory's fsync failed) takes the metadata log dir
  offline, which stops the broker, and raises ``MetadataDirFailed``: the
  request is not answered, as Kafka halts when a metadata record cannot be
  written. Once that dir is offline no block is saved any more.
* Each block saved appends one record to the metadata quorum
  (``on_metadata_change``, from the worker thread, as every store does), as
  Kafka's controller appends a ``ProducerIdsRecord`` for each block it hands
  out (``ProducerIdControlManager.generateNextProducerId``).

Kafka's broker never waits for a block (``RPCProducerIdManager.generateProducerId``):
it asks the controller for the next one once 90% of the current one is used,
and a request that finds both used up is answered COORDINATOR_LOAD_IN_PROGRESS
at once, because its request handler threads must not block on a round trip
to another process. Here the next block is a local fsync and a waiting trio
task holds no thread, so a request that meets the end of a block waits for
the save instead: the client gets its id in one round trip, as from a Kafka
broker whose prefetched block has arrived, and never meets the retriable
error for a save that succeeds. A refused save is still COORDINATOR_LOAD_IN_PROGRESS,
as Kafka answers while it has no block.
"""

from __future__ import annotations

import logging
from typing import Callable

from storage import ProducerIdsUnavailable
from storage.topic_store import ProducerIds

from ..store_saves import StoreSaves

log = logging.getLogger("minibroker")  # as the stores log their refused saves


class ProducerIdManager:
    """Producer ids from ``ids``, the blocks saved on a worker thread in ``saves``' turns; see the module."""

    def __init__(self, ids: ProducerIds) -> None:
        self.ids = ids
        self.saves = StoreSaves()  # the broker points its in-doubt and offline hooks at the metadata log dir
        self.on_metadata_change: Callable[[], None] = lambda: None  # after each block saved (on its thread)

    async def allocate(self) -> int:
        """A producer id never handed out before; ``ProducerIdsUnavailable`` when the next block was refused,
        ``MetadataDirFailed`` when its save is in doubt."""
        claimed = self.ids.claim()
        if claimed is not None:
            return claimed
        async with self.saves:
            claimed = self.ids.claim()  # a block saved while this request waited for its turn
            if claimed is None:
                self.ids.use_block(await self._save_next_block())
                claimed = self.ids.claim()
        assert claimed is not None  # a block just put in use has ids
        return claimed

    async def _save_next_block(self) -> int:
        try:
            return await self.saves.save(self._write_next_block)
        except OSError as exc:  # a refused save; one in doubt (MetadataDirFailed, no OSError) goes on
            log.error("could not store the next block of producer ids in %s: %s", self.ids.dirs[0], exc)
            raise ProducerIdsUnavailable(exc.errno, f"the next block of producer ids could not be saved: "
                                                    f"{exc.strerror or exc}") from exc  # fmt: skip

    def _write_next_block(self) -> int:
        """On the worker thread: the next block saved and its record counted; its first id."""
        start = self.ids.save_next_block()
        self.on_metadata_change()
        return start
