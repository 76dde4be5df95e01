"""Sending Fetch v0-v3 records while they are down-converted (KIP-283).

``ConvertedRecords`` is the records value of one partition in a Fetch v0-v3
answer. Its length is the size ``start_down_conversion`` declared, so the
response is framed before the conversion is done. When the connection reaches
it, ``send`` writes the pieces ``fitted_pieces`` gives: the first converted
batches, then the remaining chunks, each read, converted and written in turn,
then the overflow entry that keeps the bytes written equal to the declared
size (``SizedOutput``: output past it is cut off; a shortfall, or a chunk that
fails to convert (zstd, a corrupt batch: the next fetch starts there and
reports it), ends with that entry; chunks past the declared size are not
converted). The source and converted bytes in memory stay at a few chunks
each (Kafka's reason for KIP-283), and the event loop serves other
connections between chunks instead of waiting for a whole conversion.

The uncompressed and LZ4 batches of chunk *n + 1* are converted by the C
accelerator's helper thread, without the GIL, while chunk *n* is written:
``fitted_pieces`` begins that conversion before it hands out the piece ahead
of it, and the event loop's thread finishes what is left when it needs the
result. So the CPU-heavy part (write the messages, and for LZ4 decompress and
compress) runs beside the socket writes on a second core. The rest (reading
the segment file, gzip and snappy batches) runs on the event loop's thread
while chunks are quick: handing every chunk to a Python worker thread was
measured slower on the 2-core machines we run on (a thread hop costs about
100 us there, and the GIL is contended by the Python parts of the
conversion). A chunk that keeps the loop's thread busy longer than
``OFFLOAD_AFTER_S`` of its CPU time (a megabyte of gzip or snappy batches
takes tens of milliseconds to decompress and compress again, or any chunk
without the accelerator) moves the partition's remaining chunks to a trio
worker thread, one at a time, so other connections are served meanwhile;
zlib releases the GIL while it works. Time the thread spent off the CPU
does not count: waiting for the helper's job in hand, or for a core while
the client and the helper have both (a quarter of the chunks of a
benchmark's Fetch v3 answers took over 5 ms that way with under 4 ms of
CPU, and moving them to a worker thread only added hand-offs to a machine
already short of CPU). The slice holds its segment file open, so
the worker reads it safely while the loop goes on.

Once the whole response is out, ``after_sent`` lets the broker begin the
read-ahead of this partition's next answer (``read_ahead``).

Metrics: ``fetchmessageconversions`` counts the records of every chunk
converted, and ``MessageConversionsTimeMs`` (``request="Fetch"``) observes,
once the partition is sent, the time spent converting it on the event loop's
thread or a worker thread (the C helper's work beside the writes is not in it).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

import trio

from protocol.records.lazy_convert import LazyDownConversion, fitted_pieces

OFFLOAD_AFTER_S = 0.005  # a chunk that kept the event loop's thread busy this long: the rest go to a worker thread
SendAll = Callable[[Any], Awaitable[None]]


@attrs.define(eq=False)
class ConvertedRecords:
    """A partition's down-converted records, converted as they are sent."""

    conversion: LazyDownConversion
    on_converted: Callable[[int], None]  # records converted (fetchmessageconversions)
    on_done: Callable[[float], None]  # seconds spent converting, once sent
    first_seconds: float = 0.0
    on_sent: Callable[[LazyDownConversion], None] | None = None  # once the whole response is out (read_ahead)

    def __len__(self) -> int:
        return self.conversion.size

    async def send(self, send_all: SendAll) -> None:
        pieces, seconds, offload = fitted_pieces(self.conversion), self.first_seconds, False
        while True:
            started = time.perf_counter()
            if offload:  # converting happens inside next(): the next chunk is begun, this one finished
                item = await trio.to_thread.run_sync(next, pieces, None)
            else:
                busy = time.thread_time()
                item = next(pieces, None)
                offload = time.thread_time() - busy > OFFLOAD_AFTER_S  # the loop thread's CPU time
            seconds += time.perf_counter() - started
            if item is None:
                break
            piece, converted_count = item
            if converted_count:
                self.on_converted(converted_count)
            if piece:
                await send_all(piece)
        self.on_done(seconds)

    def after_sent(self) -> None:
        """The response this partition was in has gone out whole: begin the read-ahead, if any."""
        if self.on_sent is not None:
            self.on_sent(self.conversion)
