"""Looking one topic up by name or id costs no pass over all the topics.

Found by fuzzing: with 3,000 topics, a Metadata or DeleteTopics request naming
3,000 topic ids took 1.4 s and 3 s, each id resolved by building the map of
every topic's id again (and each look-up by name copied the whole table
first). ``TopicTable`` keeps an id index built on the first look-up after a
topic came or went; ``LogManager.topic`` reads one entry. The answers are the
same: an id resolves while its topic exists, and a topic made again under a
name resolves by its new id only.
"""

from __future__ import annotations

import uuid

import pytest

from storage.topic_store import TopicMeta, TopicTable

from .lead_helpers import Clock, manager


def test_ids_resolve_while_their_topic_exists_and_a_remade_topic_by_its_new_id(tmp_path):
    lm = manager(tmp_path, Clock())
    first = lm.create_topic("orders", 1, {})
    assert lm.name_for_id(first.topic_id) == "orders" and lm.topic("orders") is first
    lm.delete_topic("orders")
    assert lm.name_for_id(first.topic_id) is None and lm.topic("orders") is None
    again = lm.create_topic("orders", 1, {})
    assert lm.name_for_id(again.topic_id) == "orders" and lm.name_for_id(first.topic_id) is None
    lm.close()
    reopened = manager(tmp_path, Clock())
    assert reopened.name_for_id(again.topic_id) == "orders" and reopened.topic("orders").topic_id == again.topic_id
    reopened.close()


class _CountingTable(TopicTable):
    passes = 0

    def items(self):
        type(self).passes += 1
        return super().items()


def test_many_lookups_by_id_make_one_pass_over_the_topics_until_one_comes_or_goes():
    table = _CountingTable({f"t{i}": TopicMeta(f"t{i}", uuid.UUID(int=i + 1), 1, {}) for i in range(1000)})
    assert [table.name_for_id(uuid.UUID(int=i + 1)) for i in range(1000)] == [f"t{i}" for i in range(1000)]
    assert table.name_for_id(uuid.UUID(int=5000)) is None and _CountingTable.passes == 1
    table["new"] = TopicMeta("new", uuid.UUID(int=5000), 1, {})
    assert table.name_for_id(uuid.UUID(int=5000)) == "new" and _CountingTable.passes == 2
    table.pop("t0")
    assert table.name_for_id(uuid.UUID(int=1)) is None and _CountingTable.passes == 3
    del table["t1"]
    assert table.name_for_id(uuid.UUID(int=2)) is None and _CountingTable.passes == 4


def _meta(i: int) -> TopicMeta:
    return TopicMeta(f"t{i}", uuid.UUID(int=i + 1), 1, {})


@pytest.mark.parametrize("change", [
    lambda t: t.update({"t9": _meta(9)}), lambda t: t.setdefault("t9", _meta(9)), lambda t: t.clear(),
    lambda t: t.popitem(), lambda t: t.__ior__({"t9": _meta(9)}),
])  # fmt: skip
def test_every_way_of_changing_the_table_drops_the_id_index(change):
    """review12: only item assignment, ``del`` and ``pop`` dropped the index; any other change left a stale one."""
    table = TopicTable({f"t{i}": _meta(i) for i in range(3)})
    before = table.by_id()
    change(table)
    assert dict(table.by_id()) == {meta.topic_id: name for name, meta in table.items()}
    assert dict(before) == {uuid.UUID(int=i + 1): f"t{i}" for i in range(3)}  # one handed out stays as it was


def test_the_broker_resolves_ids_from_one_index_until_a_topic_comes_or_goes(tmp_path):
    """``names_by_id`` (Produce and Fetch v13+, OffsetCommit/OffsetFetch by id) built the map of every topic's id
    for each request; now it is built once after each topic change, read-only."""
    lm = manager(tmp_path, Clock())
    try:
        meta = lm.create_topic("a", 1, {})
        index = lm.names_by_id()
        assert lm.names_by_id() is index and index == {meta.topic_id: "a"}
        with pytest.raises(TypeError):
            index[uuid.UUID(int=1)] = "b"  # type: ignore[index]
        other = lm.create_topic("b", 1, {})
        assert lm.names_by_id() is not index and lm.names_by_id() == {meta.topic_id: "a", other.topic_id: "b"}
    finally:
        lm.close()
