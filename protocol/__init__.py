"""minibroker's sans-IO Kafka protocol: bytes in, objects out; objects in, bytes out.

Nothing here touches sockets, files, clocks or trio (h11's rule). The pieces:

* ``schema`` — our declarative message DSL; ``apis`` — one declaration per API;
* ``messages`` — attrs classes generated from the declarations;
* ``codec`` — encoders/decoders compiled (and cached) from the declarations;
* ``headers`` — request/response headers and whole frames;
* ``framing`` — ``FrameBuffer``: feed any chunks, get whole frames out;
* ``records`` — message formats v0/v1/v2, compression, batch views and builders;
* ``errors`` — Kafka's error codes and this package's exceptions.
"""

from .apis import API_BY_KEY, API_BY_NAME
from .codec import decode_body, encode_body, encode_chunks
from .errors import (
    CorruptRecordError,
    ErrorCode,
    FrameTooLargeError,
    InvalidRecordError,
    InvalidRequestError,
    KafkaProtocolError,
    StringTooLongError,
    UnsupportedCompressionError,
)
from .framing import NEED_DATA, FrameBuffer
from .headers import (
    Request,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    response_chunks,
)
from .messages import message_class

__all__ = [
    "API_BY_KEY",
    "API_BY_NAME",
    "NEED_DATA",
    "CorruptRecordError",
    "ErrorCode",
    "FrameBuffer",
    "FrameTooLargeError",
    "InvalidRecordError",
    "InvalidRequestError",
    "StringTooLongError",
    "KafkaProtocolError",
    "Request",
    "RequestHeader",
    "UnknownApiKeyError",
    "UnsupportedCompressionError",
    "UnsupportedVersionError",
    "decode_body",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_body",
    "encode_chunks",
    "encode_request",
    "encode_response",
    "message_class",
    "response_chunks",
]
