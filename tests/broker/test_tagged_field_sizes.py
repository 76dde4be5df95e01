"""A known tagged field whose size does not match its value, through ``dispatch`` on a real broker.

Kafka's generated ``FetchRequestData.read`` reads tag 0 (ClusterId) as a compact nullable string straight
from the request and never looks at the size before it; nothing checks for bytes left at the end of the
request (``RequestContext.parseRequest``). So the request is answered as if the size were right.
"""

from __future__ import annotations

import trio

from broker.dispatch import dispatch
from protocol import API_BY_KEY, ErrorCode, RequestHeader, decode_response, encode_request

from ._admin_client import broker, collect, create_ok, fake_connection, produce  # noqa: F401  (broker: a fixture)
from .test_fetch_rules import by_partition, fetch_body


async def test_a_fetch_whose_cluster_id_tag_has_a_wrong_size_is_answered(broker):
    await create_ok(broker, "t")
    await produce(broker, "t", [1, 2])
    body = fetch_body({"t": {0: 0}})
    body.cluster_id = "c"
    frame = bytearray(encode_request(RequestHeader(1, 12, 11, "tags"), body)[4:])
    assert frame.endswith(b"\x01\x00\x02\x02c")  # one tag: 0, size 2, compact string "c"
    frame[-3] = 7  # a size past the end of the request
    with trio.fail_after(5):
        data = await collect(await dispatch(broker, fake_connection(), frame))
    correlation_id, resp = decode_response(data[4:], API_BY_KEY[1], 12)
    got = by_partition(resp)["t", 0]
    assert (correlation_id, resp.error_code, got.error_code, got.high_watermark) == (11, ErrorCode.NONE, ErrorCode.NONE, 2)
