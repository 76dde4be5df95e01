"""Incremental fetch sessions (KIP-227): Kafka's FetchSessionCache and fetch contexts.

A Fetch v7+ names a ``session_id`` and ``session_epoch``:

* epoch -1: no session (a ``session_id`` given is closed): the request's
  partitions are the fetch, the answer has them all and session id 0;
* epoch 0: a full fetch that opens a session (a ``session_id`` given is
  closed first): the answer has every partition and the new session's id, or
  0 when the cache has no room (below);
* epoch n > 0: an incremental fetch on ``session_id``. An unknown id is
  FETCH_SESSION_ID_NOT_FOUND, an epoch other than the session's next one
  INVALID_FETCH_SESSION_EPOCH (a top-level error, no partitions). Otherwise the
  request's partitions are added to the session or update it (fetch offset,
  limits), then ``forgotten_topics_data`` leaves it. A session left with no
  partition is closed, and the fetch is answered as one without a session
  (the partitions the request named, session id 0), as Kafka's
  ``FetchManager.newContext`` does. Else the session's partitions are read in
  the session's order, and the answer holds only those that must be in it
  (Kafka's ``CachedPartition.maybeUpdateResponseData``): records, an error,
  or another high watermark or log start offset than the session last
  answered (not the last stable offset). A partition in error is remembered
  with high watermark -1, so it is answered again once the error clears. A
  partition whose answer carried records moves to the end of the order, so
  partitions with data take turns at the byte budget and a busy one cannot
  starve the rest (Kafka's rotation); others keep their place. If another
  fetch moved the session's epoch on while this one waited, the answer is
  INVALID_FETCH_SESSION_EPOCH with the session's id and no partitions.

The cache (Kafka's ``FetchSessionCacheShard``): ``max.incremental.fetch.
session.cache.slots`` split over 8 shards (integer division: below 8 slots no
session is ever made); each shard gives out session ids from its own range,
and new sessions go to the shards in turn. A full shard makes room by evicting
one session: the least recently used if unused for more than two minutes;
else the first, ordered by (privileged, partition count, id), of those it may
evict, if that key is below the new session's (privileged, its partition
count): a follower's (privileged) fetch may evict a consumer's session, or a
session made more than two minutes before its last use; a consumer's fetch
only the latter.

From v13 (KIP-516) a request names topics by ``topic_id``; a session then
keys its partitions by id, and each partition keeps the topic's name as it
was when the partition joined (None for an id then unknown, looked up again
at each fetch until found), as Kafka's ``CachedPartition`` does. The handler
reads a session's partition by that name: once the topic is deleted it is
UNKNOWN_TOPIC_OR_PARTITION, once a topic of that name is made again (a new
id) INCONSISTENT_TOPIC_ID, never the new topic's records. A session keeps
the kind of names it began with: an incremental fetch of the other kind
(v13+ on a session opened below v13, or the reverse) is
FETCH_SESSION_TOPIC_ID_ERROR.

The next epoch is ``n + 1``, after 2**31 - 1 back to 1. Metrics are Kafka's
``FetchSessionCache`` gauges ``NumIncrementalFetchSessions`` and
``NumIncrementalFetchPartitionsCached``.
"""

from __future__ import annotations

import itertools
import random
from collections import ChainMap, OrderedDict
from typing import Any, Iterator

import attrs

from protocol import ErrorCode

FINAL_EPOCH, INITIAL_EPOCH = -1, 0
EVICTION_MS = 120_000  # Kafka's: a session unused longer may give its slot to a new one
SHARDS = 8  # Kafka's NumFetchSessionCacheShards
SHARD_ID_RANGE = (2**31 - 1) // SHARDS  # the session ids of each shard
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
    answered: tuple = (None, None)  # high watermark (-1 after an error), log start offset
    topic_name: str | None = None  # v13+: the name of the topic ``topic`` (an id) when the partition joined

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
    uses_topic_ids: bool = False  # opened by a v13+ fetch
    privileged: bool = False  # opened by a follower's fetch
    created_ms: float = 0

    def evictable_by(self, privileged: bool) -> bool:
        """May a new session (a follower's: ``privileged``) take this one's slot, if it is worth more?
        Kafka's evictable sets, as they stood when this session was last used."""
        return self.last_used_ms - self.created_ms > EVICTION_MS or (privileged and not self.privileged)

    def evictable_key(self) -> tuple:
        return self.privileged, len(self.partitions), self.id


@attrs.define
class FetchContext:
    """What one Fetch reads (``partitions``: ``(topic, partition)`` pairs, ``p`` having ``fetch_offset`` ...)
    and how its answer is made (``respond``)."""

    cache: "FetchSessionCache"
    partitions: list[tuple[str, Any]]
    session: FetchSession | None = None
    opens: bool = False  # a full fetch with epoch 0: a session is made when the answer is
    privileged: bool = False  # a follower's fetch
    error: ErrorCode = ErrorCode.NONE
    epoch: int = FINAL_EPOCH  # the request's session epoch
    names: dict | None = None  # v13+: the topics' names by id when the request came

    def superseded(self) -> bool:
        """Has another fetch on this incremental fetch's session moved its epoch on since this one came?
        (Kafka then answers INVALID_FETCH_SESSION_EPOCH, with the session's id and no partitions.)"""
        return self.session is not None and self.session.epoch != _next_epoch(self.epoch)

    def answered(self, reads: list) -> list[tuple[str, Any]]:
        """The ``(topic, read)`` pairs the answer would carry, the session left as it is (Kafka's
        ``PartitionIterator`` that updates nothing, for ``getResponseSize``): every read, or for an
        incremental fetch those Kafka's ``maybeUpdateResponseData`` must answer."""
        pairs = [(topic, read) for (topic, _p), read in zip(self.partitions, reads)]
        if self.session is None:
            return pairs
        return [(t, r) for t, r in pairs if self._must_answer(t, r)]

    def respond(self, reads: list, now_ms: float) -> tuple[int, list[tuple[str, Any]]]:
        """The answer's session id and its ``(topic, read)`` pairs (``answered``); the session remembers
        what each partition was answered, and those with records go to the end of its order."""
        pairs = [(topic, read) for (topic, _p), read in zip(self.partitions, reads)]
        if self.opens:
            session = self.cache.open(self.partitions, now_ms, self.names, self.privileged)
            if session is not None:
                for topic, read in pairs:
                    session.partitions[(topic, read.partition)].answered = _answer(read)
            return (session.id if session else 0), pairs
        if self.session is None:
            return 0, pairs
        answered = self.answered(reads)
        for topic, read in pairs:
            cached = self.session.partitions.get((topic, read.partition))
            if cached is not None:
                cached.answered = _answer(read)
                if read.size:
                    self.session.partitions.move_to_end((topic, read.partition))
        return self.session.id, answered

    def _must_answer(self, topic: str, read: Any) -> bool:
        cached = self.session.partitions.get((topic, read.partition))  # type: ignore[union-attr]
        return cached is None or bool(read.size) or read.error != ErrorCode.NONE or cached.answered != _answer(read)


def _answer(read: Any) -> tuple:
    """What a session remembers of a partition's answer: its high watermark (-1 after an error, so the
    partition is answered again once the error clears) and log start offset."""
    return (-1 if read.error != ErrorCode.NONE else read.high_watermark), read.log_start_offset


class FetchSessionCache:
    """The broker's fetch sessions: ``slots`` split over Kafka's ``SHARDS`` shards, taken in turn."""

    def __init__(self, slots: int = 1000) -> None:
        self.slots = slots
        self.shards: list[dict[int, FetchSession]] = [{} for _ in range(SHARDS)]
        self.sessions = ChainMap(*self.shards)  # every session by id
        self._turns = itertools.cycle(range(SHARDS))
        self.evictions = 0

    def context(self, request: Any, version: int, now_ms: float, names: dict | None = None) -> FetchContext:
        """The context of a Fetch request (``session_id``, ``session_epoch``, ``topics``, ``forgotten_topics_data``);
        ``names``: from v13, every topic's name by id now."""
        listed = [(topic_key(t, version), p) for t in request.topics for p in t.partitions]
        if version < 7 or request.session_epoch in (FINAL_EPOCH, INITIAL_EPOCH):
            if version >= 7 and request.session_id:
                self._remove(request.session_id)
            return FetchContext(self, listed, opens=version >= 7 and request.session_epoch == INITIAL_EPOCH,
                                privileged=_from_follower(request, version), names=names)  # fmt: skip
        session = self.sessions.get(request.session_id)
        if session is None:
            return FetchContext(self, [], error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != request.session_epoch:
            return FetchContext(self, [], error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != (version >= 13):
            return FetchContext(self, [], error=ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        forgotten = [(topic_key(t, version), t.partitions) for t in request.forgotten_topics_data or []]
        _update(session, listed, forgotten, names)
        if not session.partitions:  # Kafka's newContext: an emptied session is closed, the fetch sessionless
            self._remove(session.id)
            return FetchContext(self, listed, names=names)
        session.epoch = _next_epoch(session.epoch)
        session.last_used_ms = now_ms
        partitions = [(key[0], sp) for key, sp in session.partitions.items()]
        return FetchContext(self, partitions, session, epoch=request.session_epoch)

    def open(self, partitions: list[tuple[str, Any]], now_ms: float, names: dict | None = None,
             privileged: bool = False) -> FetchSession | None:  # fmt: skip
        """A new session over ``partitions`` in the next shard, or None when that shard has no room."""
        number = next(self._turns)
        shard = self.shards[number]
        if len(shard) >= self.slots // SHARDS and not self._evict(shard, privileged, len(partitions), now_ms):
            return None
        session_id = random.randrange(max(1, number * SHARD_ID_RANGE), (number + 1) * SHARD_ID_RANGE)
        while session_id in shard:
            session_id = random.randrange(max(1, number * SHARD_ID_RANGE), (number + 1) * SHARD_ID_RANGE)
        session = FetchSession(session_id, 1, OrderedDict(), now_ms, uses_topic_ids=names is not None,
                               privileged=privileged, created_ms=now_ms)  # fmt: skip
        _update(session, partitions, [], names)
        shard[session_id] = session
        return session

    def _evict(self, shard: dict[int, FetchSession], privileged: bool, size: int, now_ms: float) -> bool:
        """Kafka's ``tryEvict``: the least recently used session if stale, else the least valuable one the
        new session may evict if it is worth less than the new one."""
        if not shard:
            return False
        victim = min(shard.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - victim.last_used_ms <= EVICTION_MS:
            evictable = [s for s in shard.values() if s.evictable_by(privileged)]
            if not evictable:
                return False
            victim = min(evictable, key=FetchSession.evictable_key)
            if (privileged, size, 0) < victim.evictable_key():
                return False
        del shard[victim.id]
        self.evictions += 1
        return True

    def _remove(self, session_id: int) -> None:
        if 0 <= session_id // SHARD_ID_RANGE < SHARDS:
            self.shards[session_id // SHARD_ID_RANGE].pop(session_id, None)

    def metric_samples(self) -> Iterator[tuple[str, str, list[str], list[tuple[list[str], float]]]]:
        name = "kafka_server_fetchsessioncache_"
        sessions = list(self.sessions.values())
        yield name + "numincrementalfetchsessions", "Incremental fetch sessions kept", [], [([], float(len(sessions)))]
        yield (name + "numincrementalfetchpartitionscached", "Partitions of the incremental fetch sessions", [],
               [([], float(sum(len(s.partitions) for s in sessions)))])  # fmt: skip


def _from_follower(request: Any, version: int) -> bool:
    """Kafka's ``isFromFollower``: a replica id of 0 or more (from v15 in ``replica_state``)."""
    replica_id = request.replica_id if version < 15 else request.replica_state.replica_id
    return replica_id >= 0


def _update(session: FetchSession, listed: list[tuple[str, Any]], forgotten: list, names: dict | None) -> None:
    for topic, p in listed:
        cached = session.partitions.get((topic, p.partition))
        if cached is None:
            cached = session.partitions[(topic, p.partition)] = SessionPartition(topic, p.partition, 0, 0)
        cached.update(p)
    for topic, indexes in forgotten:
        for index in indexes:
            session.partitions.pop((topic, index), None)
    if names is not None:  # Kafka's maybeResolveUnknownName: a name once found is kept
        for cached in session.partitions.values():
            if cached.topic_name is None:
                cached.topic_name = names.get(cached.topic)


def topic_name(names: dict | None, key: Any, p: Any) -> str | None:
    """The name a fetch reads partition ``p`` of topic ``key`` by: ``key`` itself before v13; from v13 a
    session partition's kept name, else the name of the id now (None: an unknown id)."""
    if names is None:
        return key
    if isinstance(p, SessionPartition):
        return p.topic_name
    return names.get(key)


def topic_key(topic: Any, version: int) -> Any:
    """How a request's topic entry names its topic: by name, or from v13 by id."""
    return topic.topic_id if version >= 13 else topic.topic


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 2**31 - 1 else epoch + 1
