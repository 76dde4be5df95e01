"""Reading a segment's entries for the cleaner: chunked ``pread``s, throttled, growing for big batches.

The cleaner reads inactive segments only; their files never change while it
reads, and it keeps the segment's ``FileHandle`` for the whole walk, so a
retention delete or a concurrent swap that renames the files (or closes the
segment) does not take the descriptor away. A chunk is
``log.cleaner.io.buffer.size`` (split per thread, half for reading as in
Kafka); an entry larger than the chunk is read on its own, as Kafka grows its
buffer. Every byte read is reported to the shared ``Throttler``.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator

from protocol.records import iter_batches

from storage.batch_files import peek_batch


def iter_entries(segment: Any, chunk_size: int, count_read: Callable[[int], None]) -> Iterator[Any]:
    """Yield a view over every whole entry of ``segment`` (``RecordBatchView`` or ``LegacyBatchView``)."""
    handle = segment.handle
    fd, size, pos = handle.fd, segment.size, 0
    while pos < size:
        chunk = os.pread(fd, min(chunk_size, size - pos), pos)
        count_read(len(chunk))
        used = 0
        for view in iter_batches(memoryview(chunk)):
            used += view.size_in_bytes
            yield view
        if used == 0:
            head = peek_batch(fd, pos, size)
            if head is None:
                return
            whole = os.pread(fd, head[1], pos)
            count_read(len(whole))
            view = next(iter_batches(memoryview(whole)), None)
            if view is None:
                return
            used = view.size_in_bytes
            yield view
        pos += used
