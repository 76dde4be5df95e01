"""``protocol.error_counts``: the error codes of a response as Kafka's ``errorCounts`` counts them."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import API_BY_KEY, API_BY_NAME, message_class
from protocol.error_counts import _walk, error_counts


def response(name: str, **fields):
    return message_class(API_BY_NAME[name], False)(**fields)


@pytest.mark.parametrize("key", sorted(API_BY_KEY))
def test_every_response_can_be_counted(key):
    api = API_BY_KEY[key]
    assert all(n >= 1 for n in error_counts(api.name, message_class(api, False)()).values())


def test_nested_codes_are_all_counted():
    cls = message_class(API_BY_NAME["Metadata"], False)
    T = cls.MetadataResponseTopic
    P = T.MetadataResponsePartition
    body = cls(error_code=0, topics=[T(error_code=0, partitions=[P(error_code=9), P(error_code=0)]),
                                     T(error_code=3)])  # fmt: skip
    assert error_counts("Metadata", body) == {0: 2, 9: 1, 3: 1}  # the v13 top-level code is not counted


def test_fetch_counts_its_top_level_code_and_each_partition():
    cls = message_class(API_BY_NAME["Fetch"], False)
    Topic = cls.FetchableTopicResponse
    body = cls(responses=[Topic(partitions=[Topic.PartitionData(error_code=1), Topic.PartitionData()])])
    assert error_counts("Fetch", body) == {0: 2, 1: 1}


def test_find_coordinator_counts_coordinators_when_there_are_some():
    cls = message_class(API_BY_NAME["FindCoordinator"], False)
    assert error_counts("FindCoordinator", cls(error_code=15)) == {15: 1}
    body = cls(coordinators=[cls.Coordinator(error_code=15), cls.Coordinator()])
    assert error_counts("FindCoordinator", body) == {15: 1, 0: 1}


def test_offset_fetch_by_groups_or_by_its_top_level_code():
    cls = message_class(API_BY_NAME["OffsetFetch"], False)
    G = cls.OffsetFetchResponseGroup
    assert error_counts("OffsetFetch", cls(groups=[G(error_code=16), G()])) == {16: 1, 0: 1}
    assert error_counts("OffsetFetch", cls(error_code=14)) == {14: 1}


def test_delete_acls_counts_filters_not_their_acls():
    cls = message_class(API_BY_NAME["DeleteAcls"], False)
    R = cls.DeleteAclsFilterResult
    body = cls(filter_results=[R(matching_acls=[R.DeleteAclsMatchingAcl(), R.DeleteAclsMatchingAcl()])])
    assert error_counts("DeleteAcls", body) == {0: 1}


_PRODUCE = message_class(API_BY_NAME["Produce"], False)
_PART = _PRODUCE.TopicProduceResponse.PartitionProduceResponse
_partition = st.builds(
    _PART, index=st.integers(0, 5), error_code=st.sampled_from([0, 0, 1, 2, 3, 10, 87, 9999]),
    record_errors=st.lists(st.builds(_PART.BatchIndexAndErrorMessage, batch_index=st.integers(0, 3)), max_size=2))
_produce = st.builds(_PRODUCE, responses=st.lists(st.builds(
    _PRODUCE.TopicProduceResponse, name=st.sampled_from(["a", "b"]), partition_responses=st.lists(_partition,
                                                                                                 max_size=4)), max_size=3))  # fmt: skip


@given(_produce)
def test_produce_counts_what_the_walk_counts(body):
    """Produce has its own loop (it is counted on every request): the same counts as the schema walk."""
    assert error_counts("Produce", body) == Counter(_walk(body))
