"""Sending Fetch v0-v3 records while they are down-converted (KIP-283).

``ConvertedRecords`` is the records value of one partition in a Fetch v0-v3
answer. Its length is the size ``start_down_conversion`` declared, so the
response is framed before the conversion is done. When the connection reaches
it, ``send`` writes the first converted batches, then reads and converts the
remaining chunks one at a time and writes each as soon as it is converted.
The client receives chunk *n* while chunk *n + 1* is converted, the source
and converted bytes in memory stay at one chunk each (Kafka's reason for
KIP-283), and the event loop serves other connections between chunks instead
of waiting for a whole conversion.

Chunks are converted on the event loop's thread: handing each to a worker
thread was measured slower on the 2-core machines we run on (a thread hop
costs about 100 us there, and the GIL is contended by the Python parts of the
conversion; tried again with the LZ4 work in C, the old-client rows of
``bench/bench_conversion.py`` fell to a half). The C accelerator shares the
LZ4 batches of a chunk with a helper thread of its own instead, without the
GIL (``protocol/records/_clz4.c``).

``SizedOutput`` keeps the bytes written equal to the declared size: output
past it is cut off, and a shortfall, or a chunk that fails to convert (zstd, a
corrupt batch: the next fetch starts there and reports it), ends with an
overflow entry. Chunks past the declared size are not converted.

Metrics: ``fetchmessageconversions`` counts the records of every chunk
converted, and ``MessageConversionsTimeMs`` (``request="Fetch"``) observes the
partition's conversion time once it is sent.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from protocol import KafkaProtocolError
from protocol.records.lazy_convert import LazyDownConversion, SizedOutput

SendAll = Callable[[Any], Awaitable[None]]


@attrs.define(eq=False)
class ConvertedRecords:
    """A partition's down-converted records, converted as they are sent."""

    conversion: LazyDownConversion
    on_converted: Callable[[int], None]  # records converted (fetchmessageconversions)
    on_done: Callable[[float], None]  # seconds spent converting, once sent
    first_seconds: float = 0.0

    def __len__(self) -> int:
        return self.conversion.size

    async def send(self, send_all: SendAll) -> None:
        out, first = SizedOutput(self.conversion.size), self.conversion.first
        self.on_converted(first.converted_count)
        if first.records:
            await send_all(out.fit(first.records))
        seconds = self.first_seconds
        for chunk in self.conversion.iter_chunks():
            if not out.remaining:
                break
            started = time.perf_counter()
            try:
                converted = self.conversion.convert(chunk)
            except KafkaProtocolError:
                break
            seconds += time.perf_counter() - started
            self.on_converted(converted.converted_count)
            if converted.records:
                await send_all(out.fit(converted.records))
        if out.remaining:
            await send_all(out.pad())
        self.on_done(seconds)
