"""The metadata stores other than the topics save on a worker thread, one change at a time (``store_saves.py``).

For each store (dynamic broker configs, group configs, client quotas, ACLs,
SCRAM credentials): while a change's fsync is held back (``storage.fileops``,
the fault-injection seam), of the store's file or of the metadata quorum's
state it then appends to, another connection is answered and still sees the
store as it was (before, both fsyncs ran on the event loop: every connection
waited); changes from several connections at once all land, memory, file and
quorum agreeing, and survive a restart; a save the disk refuses is answered
KAFKA_STORAGE_ERROR (the ACLs' and SCRAM credentials' were UNKNOWN_SERVER_ERROR
before), and changes nothing.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Awaitable, Callable

import attrs
import pytest
import trio

from broker.acl_model import AclOperation, PatternType, PermissionType, ResourceType
from broker.dispatch import CloseConnection
from broker.metadata_quorum import FILE_NAME as QUORUM_FILE
from protocol import ErrorCode
from storage import fileops

from ._admin_client import call, open_broker, req, sub
from ._authz import STANDARD_AUTHORIZER, user
from .test_scram_credentials import upsert
from .test_topic_saves_off_loop import HELD_AT_MOST, HeldSaves

ADMIN = user("admin")
CLIENTS, CHANGES = 4, 3  # connections changing a store at once, changes each
BROKER, GROUP, SET = 4, 32, 0
# one key per client, and its first value
BROKER_KEYS = (("log.retention.ms", 60_000), ("log.retention.bytes", 1_000_000), ("message.max.bytes", 100_000),
               ("log.roll.ms", 3_600_000))  # fmt: skip
GROUP_KEYS = (("consumer.session.timeout.ms", 46_000), ("consumer.heartbeat.interval.ms", 5_001),
              ("share.session.timeout.ms", 46_000), ("share.record.lock.duration.ms", 30_001))  # fmt: skip
QUOTA_KEYS = (("producer_byte_rate", 1000), ("consumer_byte_rate", 2000), ("request_percentage", 50),
              ("controller_mutation_rate", 10))  # fmt: skip
QUOTA_USER = (("user", "u"),)


def open_store_broker(tmp_path):
    return open_broker(tmp_path, authorizer_class_name=STANDARD_AUTHORIZER, super_users="User:admin")


async def alter_configs(b, rtype: int, name: str, key: str, value: str) -> list:
    Res = sub(44, "AlterConfigsResource")
    res = Res(resource_type=rtype, resource_name=name, configs=[Res.AlterableConfig(name=key, config_operation=SET,
                                                                                    value=value)])  # fmt: skip
    resp = await call(b, 44, 1, req(44, resources=[res], validate_only=False), connection=ADMIN)
    return [(r.error_code, r.error_message) for r in resp.responses]


async def alter_quota(b, key: str, value: float) -> list:
    Entry = sub(49, "EntryData")
    entry = Entry(entity=[Entry.EntityData(entity_type="user", entity_name="u")],
                  ops=[Entry.OpData(key=key, value=value, remove=False)])  # fmt: skip
    resp = await call(b, 49, 1, req(49, entries=[entry], validate_only=False), connection=ADMIN)
    return [(e.error_code, e.error_message) for e in resp.entries]


async def create_acl(b, topic: str) -> list:
    creation = sub(30, "AclCreation")(resource_type=ResourceType.TOPIC, resource_name=topic,
                                      resource_pattern_type=PatternType.LITERAL, principal="User:bob", host="*",
                                      operation=AclOperation.READ, permission_type=PermissionType.ALLOW)  # fmt: skip
    resp = await call(b, 30, 3, req(30, creations=[creation]), connection=ADMIN)
    return [(r.error_code, r.error_message) for r in resp.results]


async def upsert_scram(b, name: str, iterations: int) -> list:
    resp = await call(b, 51, 0, req(51, deletions=[], upsertions=[upsert(name, iterations=iterations)]),
                      connection=ADMIN)  # fmt: skip
    return [(r.error_code, r.error_message) for r in resp.results]


@attrs.frozen
class Store:
    name: str
    prefix: str  # the name of its file
    change: Callable[[Any, int, int], Awaitable[list]]  # client n's i-th change: its answers
    seen: Callable[[Any], Any]  # what the store holds in memory
    expected: Callable[[int, int], Any]  # what it holds after CLIENTS clients' first ``i`` changes each


STORES = (
    Store("broker_configs", "__broker_configs",
          lambda b, n, i: alter_configs(b, BROKER, "3", BROKER_KEYS[n][0], str(BROKER_KEYS[n][1] + i)),
          lambda b: b.dynamic_config.levels["3"],
          lambda clients, i: {k: str(v + i - 1) for k, v in BROKER_KEYS[:clients]}),
    Store("group_configs", "__group_configs",
          lambda b, n, i: alter_configs(b, GROUP, "g", GROUP_KEYS[n][0], str(GROUP_KEYS[n][1] + i)),
          lambda b: b.group_configs.current("g"),
          lambda clients, i: {k: str(v + i - 1) for k, v in GROUP_KEYS[:clients]}),
    Store("client_quotas", "__client_quotas",
          lambda b, n, i: alter_quota(b, QUOTA_KEYS[n][0], float(QUOTA_KEYS[n][1] + i)),
          lambda b: b.quotas.quotas.get(QUOTA_USER, {}),
          lambda clients, i: {k: float(v + i - 1) for k, v in QUOTA_KEYS[:clients]}),
    Store("acls", "__acls", lambda b, n, i: create_acl(b, f"t{n}-{i}"),
          lambda b: sorted(acl.resource_name for acl in b.authorizer.acls),
          lambda clients, i: sorted(f"t{n}-{j}" for n in range(clients) for j in range(1, i))),
    Store("scram_credentials", "__scram_credentials", lambda b, n, i: upsert_scram(b, f"u{n}", 4096 + i),
          lambda b: {user: cred.iterations for (user, _mechanism), cred in b.scram.credentials.items()},
          lambda clients, i: {f"u{n}": 4096 + i - 1 for n in range(clients)}),
)  # fmt: skip
OK = [(ErrorCode.NONE, None)]


async def _served(b) -> bool:
    """Another connection's request (Metadata) is answered."""
    resp = await call(b, 3, 12, req(3, topics=None, allow_auto_topic_creation=False))
    return resp.cluster_id == b.cluster_id


@pytest.mark.parametrize("held", ["store file", "quorum state"])
@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
async def test_other_connections_are_served_while_a_save_is_held(tmp_path, monkeypatch, store, held):
    b = open_store_broker(tmp_path)
    try:
        before = store.seen(b)
        saves = HeldSaves(store.prefix if held == "store file" else QUORUM_FILE)
        monkeypatch.setattr(fileops, "fsync", saves.fsync)
        order: list = []

        async def change() -> None:
            assert await store.change(b, 0, 1) == OK
            order.append("change answered")

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(change)
                await trio.to_thread.run_sync(saves.held.wait, HELD_AT_MOST)
                order.append(("served", await _served(b), "old state seen", store.seen(b) == before))
                saves.release()
        assert order == [("served", True, "old state seen", True), "change answered"]
        assert store.seen(b) == store.expected(1, 2)
    finally:
        b.close()


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
async def test_concurrent_changes_all_land_in_order_and_survive_a_restart(tmp_path, store):
    b = open_store_broker(tmp_path)
    answers: list = []
    offset = b.quorum.end_offset

    async def client(n: int) -> None:
        for i in range(1, CHANGES + 1):
            answers.extend(await store.change(b, n, i))

    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for n in range(CLIENTS):
                    nursery.start_soon(client, n)
        assert answers == OK * CLIENTS * CHANGES
        assert store.seen(b) == store.expected(CLIENTS, CHANGES + 1)  # each client's last change won
        assert b.quorum.end_offset == offset + CLIENTS * CHANGES  # one record per change saved
        seen, offset = store.seen(b), b.quorum.end_offset
    finally:
        b.close()
    again = open_store_broker(tmp_path)
    try:
        assert store.seen(again) == seen  # the file holds what memory held, in its order
        assert again.quorum.end_offset == offset + 1  # and the election's record
    finally:
        again.close()


def full_disk(prefix: str) -> Callable[[int], None]:
    """An fsync that fails (no space left) for the files whose names start with ``prefix``."""
    real = fileops.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(prefix):
            raise OSError(28, "No space left on device")
        real(fd)

    return fsync


FAILED = {
    "broker_configs": lambda got: got == [(ErrorCode.KAFKA_STORAGE_ERROR, "could not store the dynamic broker "
                                           "configs: [Errno 28] No space left on device")],
    "group_configs": lambda got: got == [(ErrorCode.KAFKA_STORAGE_ERROR, "could not store the group configs: "
                                          "[Errno 28] No space left on device")],
    "client_quotas": lambda got: got == [(ErrorCode.KAFKA_STORAGE_ERROR,
                                          "quotas not stored: [Errno 28] No space left on device")],
    "scram_credentials": lambda got: got == [(ErrorCode.KAFKA_STORAGE_ERROR, "could not store the SCRAM "
                                              "credentials: [Errno 28] No space left on device")],
    "acls": lambda got: got == [(ErrorCode.KAFKA_STORAGE_ERROR, "could not store the ACLs: "
                                 "[Errno 28] No space left on device")],  # as configs and quotas
}  # fmt: skip


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
async def test_a_save_the_disk_refuses_is_answered_as_before_and_changes_nothing(tmp_path, monkeypatch, store):
    b = open_store_broker(tmp_path)
    try:
        assert await store.change(b, 0, 1) == OK
        before, offset = store.seen(b), b.quorum.end_offset
        monkeypatch.setattr(fileops, "fsync", full_disk(store.prefix))
        assert FAILED[store.name](await store.change(b, 1, 1))
        assert store.seen(b) == before and b.quorum.end_offset == offset
        monkeypatch.undo()
        assert await store.change(b, 1, 1) == OK  # the next change is made as usual
        assert store.seen(b) == store.expected(2, 2)
    finally:
        b.close()
    again = open_store_broker(tmp_path)
    try:
        assert store.seen(again) == store.expected(2, 2)
    finally:
        again.close()


async def test_a_change_is_checked_against_what_the_change_before_it_left(tmp_path):
    """Two connections delete one SCRAM credential at once: the second, checked in its turn after the first
    was saved, finds it gone (RESOURCE_NOT_FOUND), as Kafka's controller checks each request in turn."""
    b = open_store_broker(tmp_path)
    try:
        assert await upsert_scram(b, "gone", 4096) == OK
        Deletion = sub(51, "ScramCredentialDeletion")
        answers: list = []

        async def delete() -> None:
            resp = await call(b, 51, 0, req(51, deletions=[Deletion(name="gone", mechanism=1)], upsertions=[]),
                              connection=ADMIN)  # fmt: skip
            answers.extend(r.error_code for r in resp.results)

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(delete)
                nursery.start_soon(delete)
        assert answers == [ErrorCode.NONE, ErrorCode.RESOURCE_NOT_FOUND] and b.scram.credentials == {}
    finally:
        b.close()


def directory_fsync_fails_once() -> Callable[[Any], None]:
    """``fileops.fsync_path`` fails (an I/O error) the first time: the store's file is renamed in place, but
    the rename is not known to be on disk."""
    real, calls = fileops.fsync_path, []

    def fsync_path(path) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.EIO, "Input/output error")
        real(path)

    return fsync_path


@pytest.mark.parametrize("store", STORES, ids=lambda s: s.name)
async def test_a_save_in_doubt_is_not_answered_and_fails_the_metadata_dir(tmp_path, monkeypatch, store):
    """Renamed in place but not known to be on disk: a restart may find the change or not, so it is neither
    made nor refused. The metadata log dir fails (the broker stops) and the request is not answered, as
    Kafka halts when its metadata log's flush fails. Before, the change was refused, and a restart made it."""
    b = open_store_broker(tmp_path)
    try:
        before, offset = store.seen(b), b.quorum.end_offset
        monkeypatch.setattr(fileops, "fsync_path", directory_fsync_fails_once())
        with pytest.raises(CloseConnection, match="not answered: .*a metadata save is in doubt"):
            await store.change(b, 0, 1)
        assert b.topics.manager.failures.metadata_offline
        assert store.seen(b) == before and b.quorum.end_offset == offset
        monkeypatch.undo()
        other = STORES[(STORES.index(store) + 1) % len(STORES)]
        with pytest.raises(CloseConnection, match="not answered: .*metadata log dir is offline"):
            await other.change(b, 0, 1)  # until the broker has stopped, no store saves any more
        assert other.seen(b) == other.expected(0, 1)
    finally:
        b.close()
