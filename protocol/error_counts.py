"""The error codes a response carries, counted as Kafka's ``AbstractResponse.errorCounts`` counts them.

Kafka marks ``kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=X,
error=Y`` with these counts for every response it sends (``NONE`` included).
Each response class of Kafka has its own ``errorCounts``; nearly all of
them count every error code field of the message, nested ones too, on the
message object whatever the version (a field absent from the version sent
counts at its default, as Kafka's data objects hold every field): so does
``error_counts`` here, walking the generated message object through its
schema. The few that count something else are listed in ``_SPECIAL``:

* FindCoordinator: the coordinators' errors when there are any (v4+),
  else the top-level one;
* OffsetFetch: the groups' and their partitions' errors when there are
  groups (v8+), else the top-level one and the partitions';
* Metadata: topics and partitions only, not the top-level code of v13+;
* DeleteAcls: each filter's error, not its matching ACLs';
* DescribeUserScramCredentials: each user's error, not the top-level one.

Produce is listed too, though what it counts is what the walk would find
(each partition's error): a Produce answer is counted on every request, and
a direct loop over its partitions costs a fraction of the walk's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable

from .messages import schema_of
from .schema import ArrayOf, Struct

_ERROR_FIELDS = frozenset({"error_code", "partition_error_code"})


def error_counts(api_name: str, body: Any) -> Counter:
    """``Counter`` of error code -> how many times ``body`` (a response message object) carries it."""
    special = _SPECIAL.get(api_name)
    return Counter(special(body) if special is not None else _walk(body))


def _walk(obj: Any) -> Iterable[int]:
    for field in schema_of(type(obj)).fields:
        value = getattr(obj, field.name)
        if field.name in _ERROR_FIELDS:
            yield value
        elif isinstance(field.type, Struct) and value is not None:
            yield from _walk(value)
        elif isinstance(field.type, ArrayOf) and isinstance(field.type.item, Struct) and value:
            for item in value:
                yield from _walk(item)


def _find_coordinator(body: Any) -> Iterable[int]:
    if body.coordinators:
        return [c.error_code for c in body.coordinators]
    return [body.error_code]


def _offset_fetch(body: Any) -> Iterable[int]:
    if body.groups:
        return [code for g in body.groups for code in
                [g.error_code, *(p.error_code for t in g.topics for p in t.partitions)]]  # fmt: skip
    return [body.error_code, *(p.error_code for t in body.topics for p in t.partitions)]


def _metadata(body: Any) -> Iterable[int]:
    return [code for t in body.topics for code in [*(p.error_code for p in t.partitions), t.error_code]]


_SPECIAL: dict[str, Callable[[Any], Iterable[int]]] = {
    "FindCoordinator": _find_coordinator,
    "OffsetFetch": _offset_fetch,
    "Metadata": _metadata,
    "Produce": lambda body: [p.error_code for t in body.responses for p in t.partition_responses],
    "DeleteAcls": lambda body: [r.error_code for r in body.filter_results],
    "DescribeUserScramCredentials": lambda body: [r.error_code for r in body.results],
}
