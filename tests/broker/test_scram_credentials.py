"""SCRAM credentials: AlterUserScramCredentials and DescribeUserScramCredentials as Kafka answers them,
their file in the log dir, and ``serve --add-scram``.

Credentials altered through the API are used by the next login, survive a
restart (the file keeps salts and keys, never a password) and are described
without their secrets. Every refusal has Kafka's code and message.
DescribeClientQuotas is here because ``kafka-configs.sh --describe`` asks it
first: no quotas, but its filter checked as Kafka checks it.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from broker.config import BrokerConfig, ConfigError
from broker.core import Broker
from broker.sasl_config import SaslSettings, new_authenticator
from broker.scram import SHA_256, SHA_512, credential_from_password
from broker.scram_store import CREDENTIALS_FILE, CredentialFileError, ScramStore, add_scram, parse_add_scram
from protocol import ErrorCode
from storage import fileops

from ._admin_client import broker, call, req, sub  # noqa: F401  (broker is a fixture)

ROOT = Path(__file__).resolve().parents[2]
Deletion, Upsertion = sub(51, "ScramCredentialDeletion"), sub(51, "ScramCredentialUpsertion")
SALT = b"0123456789abcdef"


def upsert(name: str, mechanism=SHA_256, iterations: int = 8192, password: str = "secret", **fields):
    salted = mechanism.salted_password(password, SALT, max(iterations, 1))
    return Upsertion(**{"name": name, "mechanism": mechanism.type, "iterations": iterations, "salt": SALT,
                        "salted_password": salted, **fields})  # fmt: skip


async def alter(broker, deletions=(), upsertions=()):  # noqa: F811
    resp = await call(broker, 51, 0, req(51, deletions=list(deletions), upsertions=list(upsertions)))
    assert resp.throttle_time_ms == 0
    return [(r.user, r.error_code, r.error_message) for r in resp.results]


async def describe(broker, users=None):  # noqa: F811
    names = None if users is None else [sub(50, "UserName")(name=n) for n in users]
    resp = await call(broker, 50, 0, req(50, users=names))
    assert (resp.error_code, resp.error_message) == (ErrorCode.NONE, None)
    return [(r.user, r.error_code, r.error_message, [(c.mechanism, c.iterations) for c in r.credential_infos])
            for r in resp.results]  # fmt: skip


def login(store: ScramStore, user: str, password: str, mechanism=SHA_256) -> bool:
    """A whole SCRAM login through a listener's authenticator (kafka-python's client computes the proof)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.net.sasl.scram import ScramClient
    server = new_authenticator(SaslSettings((mechanism.name,)), store).new_server(mechanism.name)
    client = ScramClient(user, password, mechanism.name)
    try:
        client.process_server_first_message(server.evaluate(client.first_message()))
        client.process_server_final_message(server.evaluate(client.final_message()))
    except Exception:
        return False
    return server.complete


async def test_upsert_describe_and_log_in(broker):  # noqa: F811
    assert await describe(broker) == []
    assert await alter(broker, upsertions=[upsert("alice"), upsert("bob", SHA_512, 4096)]) == [
        ("alice", 0, None), ("bob", 0, None)]  # fmt: skip
    assert await alter(broker, upsertions=[upsert("alice", SHA_512, 16384)]) == [("alice", 0, None)]
    assert await describe(broker) == [("alice", 0, None, [(1, 8192), (2, 16384)]), ("bob", 0, None, [(2, 4096)])]
    assert await describe(broker, ["bob"]) == [("bob", 0, None, [(2, 4096)])]
    assert login(broker.scram, "alice", "secret") and login(broker.scram, "alice", "secret", SHA_512)
    assert not login(broker.scram, "alice", "wrong") and not login(broker.scram, "bob", "secret", SHA_256)


async def test_describe_unknown_and_repeated_users(broker):  # noqa: F811
    await alter(broker, upsertions=[upsert("alice")])
    assert await describe(broker, ["nobody", "alice", "alice", "nobody"]) == [
        ("nobody", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: nobody", []),
        ("alice", ErrorCode.DUPLICATE_RESOURCE,
         "Cannot describe SCRAM credentials for the same user twice in a single request: alice", []),
    ]  # fmt: skip
    assert await describe(broker, ["carol"]) == [
        ("carol", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe a user credential that does not exist: carol", [])]
    assert await describe(broker, []) == [("alice", 0, None, [(1, 8192)])]  # empty: every user


async def test_deletions(broker):  # noqa: F811
    await alter(broker, upsertions=[upsert("alice")])
    await alter(broker, upsertions=[upsert("alice", SHA_512)])
    assert await alter(broker, [Deletion(name="alice", mechanism=1)]) == [("alice", 0, None)]
    assert await describe(broker, ["alice"]) == [("alice", 0, None, [(2, 8192)])]
    assert not login(broker.scram, "alice", "secret") and login(broker.scram, "alice", "secret", SHA_512)
    assert await alter(broker, [Deletion(name="alice", mechanism=1)]) == [
        ("alice", ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")]
    assert await alter(broker, [Deletion(name="alice", mechanism=2)]) == [("alice", 0, None)]
    assert (await describe(broker, ["alice"]))[0][1] == ErrorCode.RESOURCE_NOT_FOUND


TOO_FEW = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")


@pytest.mark.parametrize(("entry", "error"), [
    (upsert(""), (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")),
    (upsert("u", mechanism=SHA_256, iterations=4095), TOO_FEW),
    (upsert("u", mechanism=SHA_512, iterations=4095), TOO_FEW),
    (upsert("u", iterations=16385), (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")),
    (upsert("u", iterations=-1), TOO_FEW),
    (Upsertion(name="u", mechanism=0, iterations=4096, salt=SALT, salted_password=b"x"),
     (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")),
    (Upsertion(name="u", mechanism=3, iterations=4096, salt=SALT, salted_password=b"x"),
     (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")),
    (Upsertion(name="u", mechanism=1, iterations=4096, salt=SALT, salted_password=b""),
     (ErrorCode.UNKNOWN_SERVER_ERROR, None)),  # Kafka's HMAC refuses an empty key, and hides why
    (Deletion(name="", mechanism=1), (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")),
    (Deletion(name="u", mechanism=-1), (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")),
])  # fmt: skip
async def test_refused_alterations(broker, entry, error):  # noqa: F811
    deletion = isinstance(entry, Deletion)
    got = await alter(broker, [entry] if deletion else [], [] if deletion else [entry])
    assert got == [(entry.name, *error)]
    assert await describe(broker) == []


async def test_iteration_bounds_are_inclusive(broker):  # noqa: F811
    assert await alter(broker, upsertions=[upsert("a", iterations=4096), upsert("b", SHA_512, 16384)]) == [
        ("a", 0, None), ("b", 0, None)]  # fmt: skip


async def test_a_user_altered_twice_in_one_request_is_refused_whole(broker):  # noqa: F811
    await alter(broker, upsertions=[upsert("d")])
    dup = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
    got = await alter(broker, [Deletion(name="d", mechanism=1), Deletion(name="x", mechanism=1)],
                      [upsert("a"), upsert("a", SHA_512), upsert("d", SHA_512), upsert("ok"), upsert("a"),
                       upsert("bad", iterations=1), upsert("bad")])  # fmt: skip
    assert got == [("ok", 0, None), ("x", ErrorCode.RESOURCE_NOT_FOUND,
                    "Attempt to delete a user credential that does not exist"),
                   ("a", *dup), ("d", *dup), ("bad", *TOO_FEW)]  # fmt: skip
    assert await describe(broker) == [("d", 0, None, [(1, 8192)]), ("ok", 0, None, [(1, 8192)])]


async def test_results_come_deletions_first_then_upsertions_then_failures(broker):  # noqa: F811
    await alter(broker, upsertions=[upsert("z")])
    got = await alter(broker, [Deletion(name="z", mechanism=1)], [upsert(""), upsert("y")])
    empty = ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    assert got == [("z", 0, None), ("y", 0, None), empty]


async def test_a_failed_save_changes_nothing(broker, tmp_path):  # noqa: F811
    await alter(broker, upsertions=[upsert("keep")])
    broker.scram.path = tmp_path / "no-such-dir" / CREDENTIALS_FILE  # the write fails
    got = await alter(broker, [Deletion(name="keep", mechanism=1)], [upsert("new")])
    why = f"could not store the SCRAM credentials: [Errno 2] No such file or directory: '{broker.scram.path}.tmp'"
    assert got == [("keep", ErrorCode.KAFKA_STORAGE_ERROR, why), ("new", ErrorCode.KAFKA_STORAGE_ERROR, why)]
    assert await describe(broker) == [("keep", 0, None, [(1, 8192)])]


async def test_credentials_survive_a_restart_without_their_passwords(broker, tmp_path):  # noqa: F811
    await alter(broker, upsertions=[upsert("alice", password="alice-pw")])
    await alter(broker, upsertions=[upsert("alice", SHA_512, 4096, password="alice-pw")])
    await alter(broker, upsertions=[upsert("gone")])
    await alter(broker, [Deletion(name="gone", mechanism=1)])
    path = tmp_path / "data" / CREDENTIALS_FILE
    text = path.read_text()
    salted = SHA_256.salted_password("alice-pw", SALT, 8192)
    assert "alice-pw" not in text and base64.b64encode(salted).decode() not in text and "gone" not in text
    assert set(json.loads(text)["credentials"]["alice"]["SCRAM-SHA-256"]) == {
        "salt", "stored_key", "server_key", "iterations"}  # fmt: skip
    broker.close()
    reopened = Broker.open(broker.config)
    try:
        assert await describe(reopened) == [("alice", 0, None, [(1, 8192), (2, 4096)])]
        assert login(reopened.scram, "alice", "alice-pw") and login(reopened.scram, "alice", "alice-pw", SHA_512)
        assert not login(reopened.scram, "alice", "alice-pw2")
    finally:
        reopened.close()


def test_the_file_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    store = ScramStore.load(tmp_path)
    store.credentials[("a", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "pw", SALT, 4096)
    store.save()
    before = (tmp_path / CREDENTIALS_FILE).read_text()
    store.credentials[("b", "SCRAM-SHA-256")] = credential_from_password(SHA_256, "pw", SALT, 4096)

    def crash(src, dst):  # the new text is written and synced, then the rename never happens
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fileops, "replace", crash)  # the seam of the saved files' writes
    with pytest.raises(OSError):
        store.save()
    assert (tmp_path / CREDENTIALS_FILE).read_text() == before
    assert ScramStore.load(tmp_path).users() == ["a"]


@pytest.mark.parametrize("content", ["{", "[]", '{"credentials": {"a": {"SCRAM-SHA-1": {}}}}',
                                     '{"credentials": {"a": {"SCRAM-SHA-256": {"salt": "!", "stored_key": "",'
                                     ' "server_key": "", "iterations": 4096}}}}'])  # fmt: skip
def test_an_unreadable_credentials_file_stops_the_start(tmp_path, content):
    (tmp_path / CREDENTIALS_FILE).write_text(content)
    with pytest.raises(CredentialFileError, match=CREDENTIALS_FILE):
        ScramStore.load(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
         "--override", f"log.dirs={tmp_path}", "--override", "prometheus.port=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and CREDENTIALS_FILE in result.stderr


# -- --add-scram --------------------------------------------------------------------------------------------------


def test_add_scram_arguments_as_kafka_storage_format_reads_them():
    entry = parse_add_scram(" SCRAM-SHA-256=[name=alice,password=alice-secret] ")
    assert (entry.mechanism, entry.name, entry.iterations, entry.password) == (SHA_256, "alice", 4096, "alice-secret")
    entry = parse_add_scram('SCRAM-SHA-512=[name="bob",iterations=8192,salt="c2FsdA==",saltedpassword="YWJj"]')
    assert (entry.mechanism, entry.name, entry.iterations, entry.salt, entry.salted_password, entry.password) == (
        SHA_512, "bob", 8192, b"salt", b"abc", None)  # fmt: skip


@pytest.mark.parametrize(("argument", "message"), [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a,password=b]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=a,password=b", "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[name=a,password]", "No equals sign found in SCRAM component: password"),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a]", "You must supply one of 'password' or 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=YWJj]", "You must supply 'salt' with 'saltedpassword' to add-scram"),
    ("SCRAM-SHA-256=[name=a,password=b,colour=red]", "Unknown SCRAM configurations: colour"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=x]", "Failed to parse iterations count: x"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=4095]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM-SHA-256"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=16385]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM-SHA-512"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=!!]", "Failed to decode given salt: !!"),
    ("SCRAM-SHA-256=[name=a,salt=YQ==,saltedpassword=%]", "Failed to decode given saltedPassword: %"),
    ("SCRAM-SHA-256=[name=a,password=]", "add-scram: the password of a is empty"),
])  # fmt: skip
def test_bad_add_scram_arguments(argument, message):
    with pytest.raises(ConfigError) as failed:
        parse_add_scram(argument)
    assert str(failed.value) == message


def test_add_scram_adds_only_what_is_missing(tmp_path):
    data = tmp_path / "new-dir"
    add_scram(data, [parse_add_scram("SCRAM-SHA-256=[name=alice,password=one]")])
    first = ScramStore.load(data).get("alice", "SCRAM-SHA-256")
    assert first.iterations == 4096 and login(ScramStore.load(data), "alice", "one")
    add_scram(data, [parse_add_scram("SCRAM-SHA-256=[name=alice,password=two]"),  # kept: alice has one
                     parse_add_scram("SCRAM-SHA-512=[name=alice,iterations=8192,password=two]")])  # fmt: skip
    store = ScramStore.load(data)
    assert store.get("alice", "SCRAM-SHA-256") == first and store.infos("alice") == [(1, 4096), (2, 8192)]
    assert login(store, "alice", "one") and login(store, "alice", "two", SHA_512)


def test_add_scram_with_a_salted_password_is_the_same_credential(tmp_path):
    salted = base64.b64encode(SHA_256.salted_password("pw", b"salt", 4096)).decode()
    add_scram(tmp_path, [parse_add_scram(f"SCRAM-SHA-256=[name=a,salt=c2FsdA==,saltedpassword={salted}]")])
    assert ScramStore.load(tmp_path).get("a", "SCRAM-SHA-256") == credential_from_password(SHA_256, "pw", b"salt", 4096)


@pytest.mark.timeout(60)
def test_a_bad_add_scram_stops_the_start_naming_it(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "broker", "serve", str(ROOT / "config" / "server.properties"),
         "--override", f"log.dirs={tmp_path}", "--override", "prometheus.port=0",
         "--add-scram", "SCRAM-SHA-256=[name=a,password=b]", "-S", "SCRAM-SHA-256=[name=a,iterations=9]"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert ("--add-scram 'SCRAM-SHA-256=[name=a,iterations=9]': You must supply one of 'password' or "
            "'saltedpassword' to add-scram") in result.stderr  # fmt: skip
    assert not (tmp_path / CREDENTIALS_FILE).exists()  # nothing is added when an argument is bad


# -- DescribeClientQuotas -----------------------------------------------------------------------------------------

Component = sub(48, "ComponentData")


@pytest.mark.parametrize("version", [0, 1])
async def test_no_quotas_for_a_valid_filter(broker, version):  # noqa: F811
    for components in ([], [Component(entity_type="user", match_type=0, match="alice")],
                       [Component(entity_type="user", match_type=1, match=None),
                        Component(entity_type="client-id", match_type=2, match=None)],
                       [Component(entity_type="ip", match_type=2, match=None)]):  # fmt: skip
        resp = await call(broker, 48, version, req(48, components=components, strict=True))
        assert (resp.error_code, resp.error_message, resp.entries) == (ErrorCode.NONE, None, [])


@pytest.mark.parametrize(("components", "error"), [
    ([("", 2, None)], (ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")),
    ([("user", 2, None), ("user", 0, "a")],
     (ErrorCode.INVALID_REQUEST, "Entity type user cannot appear more than once in the filter.")),
    ([("topic", 2, None)], (ErrorCode.UNSUPPORTED_VERSION, "Unsupported entity type topic")),
    ([("user", 0, None)],
     (ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_EXACT, but set match string to null.")),
    ([("user", 1, "a")],
     (ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")),
    ([("client-id", 2, "a")],
     (ErrorCode.INVALID_REQUEST, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")),
    ([("user", 7, None)], (ErrorCode.INVALID_REQUEST, "Unknown match type 7")),
    ([("ip", 2, None), ("client-id", 2, None)],
     (ErrorCode.INVALID_REQUEST, "Invalid entity filter component combination. IP filter component should not "
                                 "be used with user or clientId filter component.")),
])  # fmt: skip
async def test_bad_quota_filters(broker, components, error):  # noqa: F811
    filters = [Component(entity_type=t, match_type=m, match=x) for t, m, x in components]
    resp = await call(broker, 48, 1, req(48, components=filters, strict=False))
    assert (resp.error_code, resp.error_message, resp.entries) == (*error, None)


def test_the_store_lives_in_the_first_log_dir(tmp_path):
    config = BrokerConfig.from_props({"log.dirs": f"{tmp_path / 'a'},{tmp_path / 'b'}", "prometheus.port": "0"})
    b = Broker.open(config)
    try:
        assert b.scram.path == tmp_path / "a" / CREDENTIALS_FILE
    finally:
        b.close()
