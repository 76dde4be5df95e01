"""A connection over TLS, in process: handshake, principal, login counts, big frames and file regions.

The broker's end is a ``Connection`` on a ``TlsStream`` over a socket
pair, with the context an SSL listener gets from its settings; the client's
end is a TLS stream with the test CA (``tests/tls_pki.py``). Checked here:
the principal a client certificate gives (Kafka's default mapping) and a
SASL login gives over TLS; a login counted once per connection (the
handshake on SSL, the SASL login on SASL_SSL); a handshake without the
required certificate answered with TLS's
"certificate required" alert and counted as failed; a request frame much larger than
one receive and a Fetch answer larger than one file read, through TLS,
byte for byte.
"""

from __future__ import annotations

import ssl

import pytest
import trio

from broker.config import BrokerConfig
from broker.connection import TLS_READ_BYTES, Connection
from broker.sasl_config import SaslSettings, new_authenticator
from broker.ssl_config import ssl_context
from broker.tls_stream import TlsStream
from protocol import API_BY_KEY, RequestHeader, decode_response, encode_request
from protocol.records import RecordBatchBuilder, iter_batches
from tests.tls_pki import CLIENT_PRINCIPAL, make_pki

from ._admin_client import broker, create_ok, req, sub  # noqa: F401  (broker is a fixture)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def _server_context(pki, client_auth: str = "required") -> ssl.SSLContext:
    config = BrokerConfig.from_props({"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem,
                                      "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca_pem,
                                      "ssl.client.auth": client_auth})  # fmt: skip
    return ssl_context(config, "SSL")


def _client_context(pki, certificate: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca_pem)
    if certificate:
        context.load_cert_chain(pki.client_pem, pki.client_key)
    return context


async def _serve_tls(broker, nursery, server: ssl.SSLContext, client: ssl.SSLContext, listener: str = "SSL",
                     sasl: SaslSettings | None = None):  # noqa: F811  # fmt: skip
    ours, theirs = trio.socket.socketpair()
    connection = Connection(broker, TlsStream(trio.SocketStream(ours), server), "peer", listener)
    if sasl is not None:
        connection.auth = new_authenticator(sasl, broker.scram)
    nursery.start_soon(connection.serve)
    return connection, trio.SSLStream(trio.SocketStream(theirs), client, server_hostname="localhost")


async def _exchange(stream, key: int, version: int, body):
    await stream.send_all(encode_request(RequestHeader(key, version, 9, "t"), body))
    data = bytearray()
    while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
        chunk = await stream.receive_some(1 << 20)
        assert chunk, "closed"
        data += chunk
    return decode_response(bytes(data[4:]), API_BY_KEY[key], version)[1]


def _logins(broker, listener: str) -> tuple[float, float]:  # noqa: F811
    counters = broker.metrics.authentications
    return tuple(counters[o].labels(listener)._value.get() for o in ("successful", "failed"))


def _no_reauth(broker, listener: str) -> float:  # noqa: F811
    """successful-authentication-no-reauth-total: Kafka's SSL authenticator never claims re-authentication."""
    return broker.metrics.logins.no_reauth.labels(listener)._value.get()


def _produce_body(topic: str, batch: bytes):
    part = sub(0, "TopicProduceData", "PartitionProduceData")(index=0, records=batch)
    return req(0, acks=1, timeout_ms=5000, topic_data=[sub(0, "TopicProduceData")(name=topic, partition_data=[part])])


def _fetch_body(topic: str):
    part = sub(1, "FetchTopic", "FetchPartition")(partition=0, fetch_offset=0, partition_max_bytes=16 << 20)
    return req(1, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=16 << 20,
               topics=[sub(1, "FetchTopic")(topic=topic, partitions=[part])])  # fmt: skip


async def test_big_frames_and_file_regions_through_tls_and_the_certificates_principal(broker, pki):  # noqa: F811
    await create_ok(broker, "big", configs={"segment.bytes": str(64 << 20), "max.message.bytes": str(8 << 20)})
    builder = RecordBatchBuilder()
    for i in range(3):  # a ~3 MiB request frame, larger than a receive; its answer larger than one file read
        builder.append(b"k%d" % i, bytes([i]) * (TLS_READ_BYTES + 1000), timestamp=1000 + i)
    batch = builder.build()
    async with trio.open_nursery() as nursery:
        with trio.fail_after(20):
            connection, stream = await _serve_tls(broker, nursery, _server_context(pki), _client_context(pki))
            async with stream:
                produced = await _exchange(stream, 0, 9, _produce_body("big", batch))
                assert produced.responses[0].partition_responses[0].error_code == 0
                fetched = await _exchange(stream, 1, 12, _fetch_body("big"))
    records = bytes(fetched.responses[0].partitions[0].records)
    assert len(records) == len(batch) and [b.last_offset for b in iter_batches(memoryview(records))] == [2]
    assert records[61:] == batch[61:]  # after the offset, the length, the epoch and the CRC: as produced
    assert connection.principal == CLIENT_PRINCIPAL and _logins(broker, "SSL") == (1.0, 0.0)
    assert _no_reauth(broker, "SSL") == 1


async def test_a_handshake_without_the_required_certificate_is_a_failed_login(broker, pki):  # noqa: F811
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            _, stream = await _serve_tls(broker, nursery, _server_context(pki), _client_context(pki, False))
            with pytest.raises(trio.BrokenResourceError) as refused:
                async with stream:  # TLS 1.3: the client's side completes; the refusal arrives with a read
                    await stream.do_handshake()
                    await stream.receive_some(10)
    alert = refused.value.__cause__  # the broker's alert, not a bare close (Java reports only the former)
    assert isinstance(alert, ssl.SSLError) and alert.reason == "TLSV13_ALERT_CERTIFICATE_REQUIRED"
    assert _logins(broker, "SSL") == (0.0, 1.0)


async def test_sasl_over_tls_counts_one_login_and_takes_the_sasl_principal(broker, pki):  # noqa: F811
    sasl = SaslSettings(("PLAIN",), {"alice": "alice-secret"})
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            connection, stream = await _serve_tls(broker, nursery, _server_context(pki, "none"),
                                                  _client_context(pki, False), "SASL_SSL", sasl)  # fmt: skip
            async with stream:
                assert (await _exchange(stream, 17, 1, req(17, mechanism="PLAIN"))).error_code == 0
                login = await _exchange(stream, 36, 2, req(36, auth_bytes=b"\x00alice\x00alice-secret"))
                assert login.error_code == 0
                assert (await _exchange(stream, 18, 0, req(18))).error_code == 0
    assert connection.principal == "User:alice" and _logins(broker, "SASL_SSL") == (1.0, 0.0)
    assert _no_reauth(broker, "SASL_SSL") == 0  # SaslAuthenticate v2: this client can re-authenticate


def _mapped_context(pki, rules: str) -> ssl.SSLContext:
    config = BrokerConfig.from_props({"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.broker_pair_pem,
                                      "ssl.truststore.type": "PEM", "ssl.truststore.location": pki.ca_pem,
                                      "ssl.client.auth": "required", "ssl.principal.mapping.rules": rules})  # fmt: skip
    return ssl_context(config, "SSL")


async def test_the_principal_mapping_rules_name_the_client(broker, pki):  # noqa: F811
    common_name = CLIENT_PRINCIPAL.removeprefix("User:CN=").split(",")[0]
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            server = _mapped_context(pki, "RULE:^CN=([^,]*),.*$/$1/U, DEFAULT")
            connection, stream = await _serve_tls(broker, nursery, server, _client_context(pki))
            async with stream:
                assert (await _exchange(stream, 18, 3, req(18, client_software_name="t",
                                                           client_software_version="1"))).error_code == 0  # fmt: skip
    assert connection.principal == f"User:{common_name.upper()}" and _logins(broker, "SSL") == (1.0, 0.0)


async def test_a_certificate_no_rule_names_fails_its_login_and_is_closed(broker, pki):  # noqa: F811
    async with trio.open_nursery() as nursery:
        with trio.fail_after(10):
            server = _mapped_context(pki, "RULE:^CN=nobody,.*$/nobody/")
            connection, stream = await _serve_tls(broker, nursery, server, _client_context(pki))
            async with stream:
                body = req(18, client_software_name="t", client_software_version="1")
                try:
                    await stream.send_all(encode_request(RequestHeader(18, 3, 9, "t"), body))
                    answer = await stream.receive_some(100)
                except trio.BrokenResourceError:
                    answer = b""
    assert answer == b""  # closed without an answer
    assert connection.principal == "User:ANONYMOUS" and _logins(broker, "SSL") == (0.0, 1.0)
