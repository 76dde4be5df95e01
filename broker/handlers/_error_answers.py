"""The shapes most APIs' error answers share (Kafka's ``getErrorResponse``, registered with ``error_answer``).

``dispatch`` sends a request's error answer, with UNKNOWN_SERVER_ERROR, when its handler fails unexpectedly
or its own answer cannot be written. Kafka's ``getErrorResponse`` of most APIs puts the error in one of two
shapes, built here so each handler module registers its builder in a line or two:

* ``top_level``: the error code at the top of an otherwise empty answer (Heartbeat, EndTxn, ListGroups...);
* ``per_partition``: one result per topic of the request, its name (and id) echoed, with one entry per
  partition of it carrying the error (ListOffsets, OffsetCommit, DeleteRecords...). The field names differ
  from API to API, so they are arguments; ``fixed`` sets the fields Kafka sets besides (an offset of -1).

``dispatch`` sets the throttle time itself (for the APIs whose ``getErrorResponse`` carries one), and no
builder sets a message unless Kafka's does: ``ApiError.fromThrowable`` gives none for UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from typing import Any, Iterable

from protocol import ErrorCode
from protocol.messages import class_for_field, schema_of

from ..dispatch import RequestContext


def top_level(ctx: RequestContext, request: Any, error: ErrorCode) -> Any:
    """The answer with ``error`` at the top and every other field at its default."""
    return ctx.response(error_code=error)


def element_class(cls: type, field_name: str) -> type:
    """The class of the items of the struct-array field ``field_name`` of the message class ``cls``."""
    field = next(f for f in schema_of(cls).fields if f.name == field_name)
    return class_for_field(field)


def per_partition(Topic: type, topics: Iterable[tuple[dict, Iterable[int]]], error: ErrorCode, *,
                  parts: str = "partitions", index: str = "partition_index", code: str = "error_code",
                  **fixed: Any) -> list:  # fmt: skip
    """One ``Topic`` per ``(topic fields, partition indexes)`` of ``topics``, in order: the fields echo the
    request's topic (its name, its id), and each partition is answered ``error`` (and the ``fixed`` fields)."""
    Part = element_class(Topic, parts)
    return [Topic(**echo, **{parts: [Part(**{index: i, code: error}, **fixed) for i in indexes]})
            for echo, indexes in topics]  # fmt: skip


def partition_indexes(partitions: Iterable[Any], field: str = "partition_index") -> list[int]:
    """The indexes of a request topic's partition structs."""
    return [getattr(p, field) for p in partitions]
