"""The feature tables' rules (``broker.features``), as Kafka's ApiVersionsResponse builds them."""

from __future__ import annotations

from broker import features

TABLE = {"metadata.version": (7, 21), "kraft.version": (0, 1), "group.version": (0, 0)}


def test_a_feature_whose_lowest_level_is_0_is_listed_only_from_v4():
    assert list(features.supported(3, TABLE)) == [("metadata.version", 7, 21)]
    assert list(features.supported(4, TABLE)) == [("kraft.version", 0, 1), ("metadata.version", 7, 21)]


def test_a_feature_with_no_level_above_0_is_not_listed():
    assert "group.version" not in {name for name, _, _ in features.supported(4, TABLE)}


def test_a_finalized_level_0_is_left_out():
    assert list(features.finalized({"metadata.version": 21, "transaction.version": 0})) == [("metadata.version", 21)]


def test_the_finalized_level_is_in_the_supported_range():
    for name, level in features.finalized():
        low, high = features.SUPPORTED[name]
        assert low <= level <= high
