"""Incremental fetch sessions (KIP-227): Kafka's FetchSessionCache and fetch contexts.

A Fetch v7+ names a ``session_id`` and ``session_epoch``:

* epoch -1: no session (a ``session_id`` given is closed): the request's
  partitions are the fetch, the answer has them all and session id 0;
* epoch 0: a full fetch that opens a session (a ``session_id`` given is
  closed first): the answer has every partition and the new session's id, or
  0 when the cache has no room: ``max.incremental.fetch.session.cache.slots``
  (1000) sessions, a slot unused for two minutes (Kafka's eviction time)
  given to the new session, the least recently used first;
* epoch n > 0: an incremental fetch on ``session_id``. An unknown id is
  FETCH_SESSION_ID_NOT_FOUND, an epoch other than the session's next one
  INVALID_FETCH_SESSION_EPOCH (a top-level error, no partitions). Otherwise the
  request's partitions are added to the session or update it (fetch offset,
  limits), ``forgotten_topics_data`` leaves it, and the session's partitions
  are read in the session's order. The answer holds only the partitions with
  something new: records, an error, or another high watermark, last stable
  offset or log start offset than the session last answered. A partition that
  answered moves to the end of the order, so all get their turn at the byte
  budget (Kafka's rotation).

From v13 (KIP-516) a request names topics by ``topic_id``; a session then
keys its partitions by id (a client keeps one version), so a topic deleted
and made again under the same name is another topic to it (the handler
answers an id it cannot find with UNKNOWN_TOPIC_ID).

The next epoch is ``n + 1``, after 2**31 - 1 back to 1. Metrics are Kafka's
``FetchSessionCache`` gauges ``NumIncrementalFetchSessions`` and
``NumIncrementalFetchPartitionsCached``.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Any, Iterator

import attrs

from protocol import ErrorCode

FINAL_EPOCH, INITIAL_EPOCH = -1, 0
EVICTION_MS = 120_000  # Kafka's: a session unused this long may give its slot to a new one
Key = tuple[Any, int]  # (topic name, or its id from Fetch v13, partition)


@attrs.define
class SessionPartition:
    """A partition of a session: what the client last asked for, and what it was last told."""

    topic: Any  # the name, or the id from Fetch v13
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1
    answered: tuple = (None, None, None)  # high watermark, last stable offset, log start offset

    def update(self, p: Any) -> None:
        self.fetch_offset, self.partition_max_bytes = p.fetch_offset, p.partition_max_bytes
        self.current_leader_epoch = getattr(p, "current_leader_epoch", -1)
        self.log_start_offset = getattr(p, "log_start_offset", -1)
        self.last_fetched_epoch = getattr(p, "last_fetched_epoch", -1)


@attrs.define
class FetchSession:
    id: int
    epoch: int  # the epoch the next incremental fetch must carry
    partitions: OrderedDict  # Key -> SessionPartition, in reading order
    last_used_ms: float


@attrs.define
class FetchContext:
    """What one Fetch reads (``partitions``: ``(topic, partition)`` pairs, ``p`` having ``fetch_offset`` ...)
    and how its answer is made (``respond``)."""

    cache: "FetchSessionCache"
    partitions: list[tuple[str, Any]]
    session: FetchSession | None = None
    opens: bool = False  # a full fetch with epoch 0: a session is made when the answer is
    error: ErrorCode = ErrorCode.NONE

    def respond(self, reads: list, now_ms: float) -> tuple[int, list[tuple[str, Any]]]:
        """The answer's session id and ``(topic, read)`` pairs: every read, or for an incremental fetch
        those with something new (rotated to the end of the session's order)."""
        pairs = [(topic, read) for (topic, _p), read in zip(self.partitions, reads)]
        if self.opens:
            session = self.cache.open(self.partitions, now_ms)
            if session is not None:
                for topic, read in pairs:
                    session.partitions[(topic, read.partition)].answered = _answer(read)
            return (session.id if session else 0), pairs
        if self.session is None:
            return 0, pairs
        return self.session.id, [(t, r) for t, r in pairs if self._must_answer(t, r)]

    def _must_answer(self, topic: str, read: Any) -> bool:
        cached = self.session.partitions.get((topic, read.partition))  # type: ignore[union-attr]
        if cached is None:
            return True
        new = read.size or read.error != ErrorCode.NONE or cached.answered != _answer(read)
        if new:
            cached.answered = _answer(read)
            self.session.partitions.move_to_end((topic, read.partition))  # type: ignore[union-attr]
        return bool(new)


def _answer(read: Any) -> tuple:
    return read.high_watermark, read.last_stable_offset, read.log_start_offset


class FetchSessionCache:
    """The broker's fetch sessions, at most ``slots`` of them."""

    def __init__(self, slots: int = 1000) -> None:
        self.slots = slots
        self.sessions: OrderedDict[int, FetchSession] = OrderedDict()  # least recently used first
        self.evictions = 0

    def context(self, request: Any, version: int, now_ms: float) -> FetchContext:
        """The context of a Fetch request (``session_id``, ``session_epoch``, ``topics``, ``forgotten_topics_data``)."""
        listed = [(topic_key(t, version), p) for t in request.topics for p in t.partitions]
        if version < 7 or request.session_epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            if version >= 7 and request.session_id:
                self.sessions.pop(request.session_id, None)
            return FetchContext(self, listed, opens=version >= 7 and request.session_epoch == INITIAL_EPOCH)
        session = self.sessions.get(request.session_id)
        if session is None:
            return FetchContext(self, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != request.session_epoch:
            return FetchContext(self, [], error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        forgotten = [(topic_key(t, version), t.partitions) for t in request.forgotten_topics_data or []]
        _update(session, listed, forgotten)
        session.epoch = _next_epoch(session.epoch)
        session.last_used_ms = now_ms
        self.sessions.move_to_end(session.id)
        partitions = [(key[0], sp) for key, sp in session.partitions.items()]
        return FetchContext(self, partitions, session)

    def open(self, partitions: list[tuple[str, Any]], now_ms: float) -> FetchSession | None:
        """A new session over ``partitions``, or None when every slot is taken by a session used lately."""
        if len(self.sessions) >= self.slots:
            oldest = next(iter(self.sessions.values()), None)
            if oldest is None or now_ms - oldest.last_used_ms < EVICTION_MS:
                return None
            del self.sessions[oldest.id]
            self.evictions += 1
        session_id = random.randint(1, 2**31 - 1)
        while session_id in self.sessions:
            session_id = random.randint(1, 2**31 - 1)
        session = FetchSession(session_id, 1, OrderedDict(), now_ms)
        _update(session, partitions, [])
        self.sessions[session_id] = session
        return session

    def metric_samples(self) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
        name = "kafka_server_fetchsessioncache_"
        sessions = list(self.sessions.values())
        yield name + "numincrementalfetchsessions", "Incremental fetch sessions kept", [], [([], float(len(sessions)))]
        yield (name + "numincrementalfetchpartitionscached", "Partitions of the incremental fetch sessions", [],
               [([], float(sum(len(s.partitions) for s in sessions)))])  # fmt: skip


def _update(session: FetchSession, listed: list[tuple[str, Any]], forgotten: list) -> None:
    for topic, p in listed:
        cached = session.partitions.get((topic, p.partition))
        if cached is None:
            cached = session.partitions[(topic, p.partition)] = SessionPartition(topic, p.partition, 0, 0)
        cached.update(p)
    for topic, indexes in forgotten:
        for index in indexes:
            session.partitions.pop((topic, index), None)


def topic_key(topic: Any, version: int) -> Any:
    """How a request's topic entry names its topic: by name, or from v13 by id."""
    return topic.topic_id if version >= 13 else topic.topic


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
