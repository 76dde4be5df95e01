"""The feature tables of ApiVersions v3+ (KIP-584): what ``Admin.describeFeatures`` and
``kafka-features.sh describe`` show.

A Kafka broker lists each feature it supports with its range of levels and,
separately, the level the cluster has finalized, plus an epoch that grows
whenever the finalized levels change. Kafka leaves out a supported feature
whose highest level is 0 and a finalized feature at level 0, and, for clients
that send ApiVersions below v4, a supported feature whose lowest level is 0
(older clients cannot read it, KAFKA-17492). We follow those rules.

What this broker supports:

* ``metadata.version`` from 7 (3.3-IV3, the lowest a Kafka 4.x broker
  accepts) to 21 (3.9-IV0), finalized at 21: Kafka 3.9 is the release whose
  client protocol this broker serves, legacy message formats included.
* No other feature above level 0: ``kraft.version`` 0 (a static quorum of
  this one node), ``transaction.version`` 0 (KIP-890 part 2 is not served, so
  a Kafka 4 producer must keep to the first transaction protocol),
  ``group.version`` 0 (KIP-848 consumer groups are served all the same; clients
  look for ConsumerGroupHeartbeat in ApiVersions), and no share or streams
  groups. Kafka lists none of these, and neither do we.

The finalized levels never change while this broker runs (UpdateFeatures is
not served). Their epoch is, as in a KRaft Kafka, the offset of the metadata
image the answer comes from: the last record of the metadata quorum
(``MetadataQuorum.last_offset``, the one DescribeQuorum and the raft metrics
report), so it grows with every metadata change and at each start.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

SUPPORTED: Mapping[str, tuple[int, int]] = {"metadata.version": (7, 21)}
FINALIZED: Mapping[str, int] = {"metadata.version": 21}


def supported(api_version: int, table: Mapping[str, tuple[int, int]] = SUPPORTED) -> Iterator[tuple[str, int, int]]:
    """``(name, min level, max level)`` of each feature ApiVersions ``api_version`` lists as supported."""
    for name, (low, high) in sorted(table.items()):
        if high > 0 and not (api_version < 4 and low == 0):
            yield name, low, high


def finalized(table: Mapping[str, int] = FINALIZED) -> Iterator[tuple[str, int]]:
    """``(name, level)`` of each finalized feature ApiVersions lists (level 0 is left out)."""
    for name, level in sorted(table.items()):
        if level != 0:
            yield name, level
