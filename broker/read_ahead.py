"""Down-conversion read-ahead for an old-format consumer that reads on (ours; Kafka has none).

An old consumer (Fetch v0-v3) reads a partition front to back, one Fetch after
another on one connection, and each answer is down-converted while it is sent
(``converted_send``). Between two of its Fetches the client is busy with the
last answer while the broker idles, and then the client waits while the broker
converts the first chunks of the next one. So once an answer has gone out whole,
``preparer``'s callback reads the slice the client's next Fetch of that
partition will get (from the conversion's ``resume_offset``, with the same byte
limit) and begins converting it: its first batches at once and its first
chunks (``lazy_convert.CHUNKS_AHEAD``) on the C accelerator's helper thread
(``LazyDownConversion.begin_ahead``).

When that Fetch comes, ``ready`` hands it the read-ahead's whole conversion,
first batches included, when its slice is the very same region of the very
same open segment file (``LogSlice.same_region``) and it asks from the very
offset the read-ahead converted for, in the same format (the usual case: a
client that got whole LZ4 wrappers asks next from the batch that was cut); so
that Fetch converts nothing before it answers. Otherwise ``take`` hands only
the chunks to the Fetch's own conversion, when the slice is the same region
and its first batches end where the read-ahead's did
(``LazyDownConversion.adopt``); its own first batches are converted for its
own fetch offset (an uncompressed batch's messages start there). Bytes below
the high watermark in a segment file never change, so what was converted is
exactly what the Fetch would convert. Anything else
(another offset or limit, a segment the cleaner or retention replaced, a topic
deleted and created again, a high watermark that moved the slice's end) drops
them, and the Fetch converts as before.

A connection holds read-aheads for at most ``MAX_PARTITIONS`` partitions at a
time (each Fetch takes its partitions' back, and the first ones of its answer
get them again), so what it keeps is bounded: per partition, two chunks of
about 1 MiB of the log and their converted output (16 MiB at most, less than
one Fetch answer of the default ``fetch.max.bytes`` holds).

``minibroker_fetch_conversion_read_ahead_total{outcome="used"|"dropped"}``
counts what became of them (a name of our own: Kafka has no such MBean).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import KafkaProtocolError
from protocol.records.lazy_convert import LazyDownConversion, start_down_conversion
from storage.errors import OffsetOutOfRangeError

MAX_PARTITIONS = 4


def ready(ctx, key: tuple[str, int], piece, fetch_offset: int, target_magic: int) -> LazyDownConversion | None:
    """The read-ahead's conversion of ``key`` when it is of this very slice, fetch offset and format (taken
    out of the store); otherwise None, and the store is left for ``take``."""
    begun = ctx.connection.read_ahead.get(key)
    if begun is None:
        return None
    ahead_piece, ahead = begun
    if (ahead.fetch_offset, ahead.target_magic) != (fetch_offset, target_magic) or not ahead_piece.same_region(piece):
        return None
    del ctx.connection.read_ahead[key]
    ctx.broker.metrics.fetch_read_ahead.labels("used").inc()
    return ahead


def take(ctx, key: tuple[str, int], piece, conversion: LazyDownConversion) -> None:
    """Give ``conversion`` (of ``piece``) the chunks begun for it, if they were begun from that slice."""
    begun = ctx.connection.read_ahead.pop(key, None)
    if begun is None:
        return
    ahead_piece, ahead = begun
    used = ahead_piece.same_region(piece) and conversion.adopt(ahead)
    ctx.broker.metrics.fetch_read_ahead.labels("used" if used else "dropped").inc()


def preparer(ctx, key: tuple[str, int], log, limit: int, min_one: bool,
             target_magic: int) -> Callable[[LazyDownConversion], None]:  # fmt: skip
    """The call that, once ``key``'s answer is sent, begins converting what the client fetches next."""

    def prepare(sent: LazyDownConversion) -> None:
        store = ctx.connection.read_ahead
        if sent.resume_offset is None or len(store) >= MAX_PARTITIONS:
            return
        if (begun := _begin(log, sent.resume_offset, limit, min_one, target_magic)) is not None:
            store[key] = begun

    return prepare


def _begin(log, offset: int, limit: int, min_one: bool, target_magic: int) -> tuple | None:
    """``(slice, conversion with its first chunks begun)`` from ``offset``, or None (nothing to read)."""
    try:
        piece = log.read(offset, limit, min_one_message=min_one)
        if piece is None or piece.size == 0:
            return None
        conversion = start_down_conversion(piece, target_magic=target_magic, fetch_offset=offset)
    except (OffsetOutOfRangeError, OSError, KafkaProtocolError):  # the Fetch itself will meet and report it
        return None
    if not conversion.first.records:
        return None
    conversion.begin_ahead()
    return piece, conversion
