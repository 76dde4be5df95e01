"""An answer that would carry a string over 0x7fff bytes is never sent (``dispatch``, a real broker).

CreateTopics with a 32767-byte topic name: the answer's error message quotes the name and passes 0x7fff
bytes. Kafka's generated writer throws for it (classic and compact versions alike); we close the
connection rather than write an int16 length that overflows or a compact string no client reads.
"""

from __future__ import annotations

import pytest
import trio

from broker.dispatch import CloseConnection, dispatch
from protocol import RequestHeader, encode_request

from ._admin_client import broker, creatable, fake_connection, req  # noqa: F401  (broker: a fixture)


@pytest.mark.parametrize("version", [4, 5])  # classic strings, compact strings
async def test_create_topics_with_a_name_of_0x7fff_bytes_closes_the_connection(broker, version):
    body = req(19, topics=[creatable("x" * 0x7FFF)], timeout_ms=1000, validate_only=False)
    frame = bytearray(encode_request(RequestHeader(19, version, 11, "long"), body)[4:])
    with trio.fail_after(5), pytest.raises(CloseConnection, match="too long to be serialized"):
        await dispatch(broker, fake_connection(), frame)
