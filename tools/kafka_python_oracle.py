"""Ask kafka-python whether it can decode a captured frame (an independent oracle).

How it works: all of kafka-python's protocol modules are imported once, and
every ``ApiMessage`` subclass is indexed by (api key, request or response).
``check`` decodes a whole frame (size prefix, header, body) with that class
and also demands that the body ends exactly at the end of the frame.  The
result goes into the manifest, so tests over peer responses can tell a peer's
malformed answer (the peers are not Apache Kafka) from a bug of ours.

This leans on kafka-python internals (``_struct.compiled_decode_from``); it is
only used by the capture tool, never by the product.
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import struct

from capture_proxy import REQUEST

_CLASSES: dict[tuple[int, bool], type] | None = None


def _index() -> dict[tuple[int, bool], type]:
    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage

    for module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" not in module.name:
            importlib.import_module(module.name)
    classes, todo = {}, list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if getattr(cls, "_class_version", None) is None and getattr(cls, "_json", None):
            classes[(cls.API_KEY, cls.is_request())] = cls
    return classes


def _header_end(cls: type, frame: bytes, version: int, is_request: bool) -> int:
    if not is_request:
        flexible = cls.flexible_version_q(version) and cls.API_KEY != 18
        if not flexible:
            return 8
    stream = io.BytesIO(frame[4:])
    cls.parse_header(stream, version=version)
    return 4 + stream.tell()


def check(api_key: int, api_version: int, direction: str, frame: bytes) -> str:
    """``"ok"`` if kafka-python decodes the frame exactly, else the reason it did not.

    An ApiVersions response carrying UNSUPPORTED_VERSION (35) is written in the
    v0 layout whatever the request version; it is checked as v0 and reported
    as ``"ok as v0"``.
    """
    if api_key == 18 and direction != REQUEST and api_version > 0 and frame[8:10] == b"\x00\x23":
        return "ok as v0" if _check(api_key, 0, direction, frame) == "ok" else _check(
            api_key, api_version, direction, frame)
    return _check(api_key, api_version, direction, frame)


def _check(api_key: int, api_version: int, direction: str, frame: bytes) -> str:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _index()
    is_request = direction == REQUEST
    cls = _CLASSES.get((api_key, is_request))
    if cls is None:
        return "unknown to kafka-python"
    try:
        if not 0 <= api_version <= cls.max_version:
            return f"version {api_version} unknown to kafka-python"
        start = _header_end(cls, frame, api_version, is_request)
        flexible = cls.flexible_version_q(api_version)
        decode = cls._struct.compiled_decode_from(api_version, compact=flexible, tagged=flexible,
                                                  data_class=cls)
        _, end = decode(memoryview(frame), start)
    except (ValueError, struct.error, IndexError, KeyError, TypeError, UnicodeDecodeError) as error:
        return f"error: {type(error).__name__}: {error}"[:200]
    if end != len(frame):
        return f"error: body ends at {end} of {len(frame)} bytes"
    return "ok"
