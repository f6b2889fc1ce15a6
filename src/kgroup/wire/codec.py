"""Request/response codecs over kio's schema classes (sans-I/O).

Server side: ``decode_request(frame, served)`` turns a frame payload (as returned by
``FrameSplitter``) into ``(RequestHeader, kio request object)``; ``encode_response`` turns a
kio response object back into a size-prefixed frame with the right response header.

Client side: ``encode_request`` / ``decode_response`` do the mirror image.

How decoding works: the first 8 bytes of every request are ``int16 api_key, int16
api_version, int32 correlation_id`` in every header version, so they are read with struct
before anything else. The (key, version) pair is checked against the served ranges given
(raising UnsupportedVersion with the correlation id), then the full header (v1, or v2 for
flexible versions) and the body are read with kio's native readers — for a class with an array, only after
``count_guard`` has walked the body and found every count backed by bytes of the frame (kio
reserves room for an array's declared count first: a hostile count aborts the process).
Where the guard refuses, kio refuses the bytes, or the frame is big enough to break one of
Kafka's allocation limits kio does not check, ``kafka_reader`` reads them with Kafka 4.4's
rules: unknown tagged fields are
skipped, invalid UTF-8 is replaced, and what Kafka rejects raises MalformedRequest (Kafka
closes the connection on a request it cannot parse). Bytes left over after a complete body are ignored, as
Apache Kafka's request parsing ignores them (``AbstractRequest.parseRequest`` reads the
fields the version's schema has and never checks what remains): librdkafka sends such
bytes, e.g. three after a Metadata v13 request for all topics.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import kio.schema.request_header.v1 as _req_h1
import kio.schema.request_header.v2 as _req_h2
import kio.schema.response_header.v0 as _resp_h0
import kio.schema.response_header.v1 as _resp_h1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32

from . import request_rules
from .count_guard import guard
from .errors import MalformedRequest, MalformedResponse, UnsupportedVersion
from .fast_responses import HAND_WRITTEN
from .kafka_reader import LIMITS_NEED_BYTES, has_tagged_fields, kio_check, read_entity
from .schemas import load_request_schema, load_response_schema
from .versions import ApiRange, is_flexible

__all__ = [
    "RequestHeader",
    "peek_request_header",
    "decode_request",
    "encode_response",
    "encode_request",
    "decode_response",
    "request_class",
    "response_class",
]

_PEEK = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_CORR = struct.Struct(">i")
_ERROR16 = struct.Struct(">h")
_API_VERSIONS = 18
_UNSUPPORTED_VERSION = 35


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The parts of a request header the broker needs."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    flexible: bool


@cache
def request_class(api_key: int, version: int) -> type[Any]:
    """The request class for (api_key, version), e.g. HeartbeatRequest v4: kio's, or ours
    built from Kafka 4.4's spec where kio lacks it (see ``schemas``).

    Raises kio's errors (kio.index.UnknownAPIKey / UnknownEntity) if neither has it.
    """
    return load_request_schema(api_key, version)


@cache
def response_class(api_key: int, version: int) -> type[Any]:
    """The response class for (api_key, version), kio's or ours (see ``request_class``)."""
    return load_response_schema(api_key, version)


@cache
def _reader(cls: type[Any]) -> Any:
    return entity_reader(cls)


class _Decoder(NamedTuple):
    """What decoding one (api_key, version) needs, looked up once: the header and request
    classes, kio's readers of them, the tests of kio's result for a small and a large frame
    (``kafka_reader.kio_check``, None when there is nothing to test), and whether a large
    frame must be read with Kafka's rules instead (``kafka_reader.has_tagged_fields``), and
    the walk that must pass before kio's native reader may read the body (``count_guard.
    guard``, None for a class without arrays): kio reserves room for an array's declared
    count up front, and a hostile count aborts the process."""

    flexible: bool
    header_cls: type[Any]
    cls: type[Any]
    read_header: Any
    read: Any
    check: Any
    check_big: Any
    tagged: bool
    guard: Any


@cache
def _decoder(api_key: int, version: int) -> _Decoder:
    flexible = is_flexible(api_key, version)
    header_cls = _req_h2.RequestHeader if flexible else _req_h1.RequestHeader
    cls = request_class(api_key, version)
    return _Decoder(flexible, header_cls, cls, entity_reader(header_cls), entity_reader(cls),
                    kio_check(cls), kio_check(cls, big=True), has_tagged_fields(cls),
                    guard(cls))


@cache
def _writer(cls: type[Any]) -> Any:
    return entity_writer(cls)


def peek_request_header(frame: bytes | bytearray | memoryview) -> tuple[int, int, int]:
    """``(api_key, api_version, correlation_id)`` from the first 8 bytes of a request.

    Works for every header version, even when the rest of the frame is unparseable.
    Raises MalformedRequest if the frame is shorter than 8 bytes.
    """
    if len(frame) < 8:
        raise MalformedRequest(f"request frame of {len(frame)} bytes has no header")
    return _PEEK.unpack_from(frame, 0)


def _readonly(frame: bytes | bytearray | memoryview) -> bytes | memoryview:
    # kio's native readers refuse writable buffers.
    if isinstance(frame, bytes):
        return frame
    if isinstance(frame, memoryview) and frame.readonly:
        return frame
    return bytes(frame)


def decode_request(
    frame: bytes | bytearray | memoryview,
    served: Mapping[int, ApiRange],
) -> tuple[RequestHeader, Any]:
    """Decode a request frame payload (without size prefix) into (header, kio request).

    Raises UnsupportedVersion for an API key not in ``served`` (api key -> the versions
    served) or a version outside its range, MalformedRequest for anything undecodable.
    Never raises kio's own errors.
    """
    data = _readonly(frame)
    # 1. Key, version and correlation id sit at fixed offsets in every header version.
    api_key, api_version, correlation_id = peek_request_header(data)
    api = served.get(api_key)
    if api is None or api_version not in api:
        raise UnsupportedVersion(api_key, api_version, correlation_id)

    # 2. Header v1/v2, then the body: kio's native readers where their answer is Kafka's;
    #    otherwise (count_guard refuses the body's counts, kio raises, kio_check finds what
    #    Kafka refuses, or a large frame of a message with tagged fields) Kafka's rules in
    #    Python (kafka_reader), which also give Kafka's error. See kafka_reader's docstring
    #    for where the two differ.
    flexible, header_cls, cls, read_header, read, check, check_big, tagged, counts = _decoder(api_key, api_version)
    big = len(data) >= LIMITS_NEED_BYTES
    if big and tagged:    # (request headers declare no tagged field: kio raises on any)
        kio_header = None
    else:
        if big:
            check = check_big
        try:
            kio_header, offset = read_header(data, 0)
            if counts is not None:
                counts(data, offset)    # raises unless kio may read the body safely
            request, _ = read(data, offset)
            if check is not None and check(request):
                kio_header = None
        except Exception:  # count_guard.CountsUnsafe; kio's DecodeError, KeyError, ValueError, ...
            kio_header = None
    if kio_header is None:
        stage = "header"
        try:
            kio_header, offset = read_entity(header_cls, data, 0)
            stage = "body"
            request, _ = read_entity(cls, data, offset)
        except Exception as exc:  # KafkaDecodeError; anything else is a bug, still no crash
            raise MalformedRequest(
                f"cannot decode {api.name} v{api_version} {stage}: "
                f"{type(exc).__name__}: {exc}",
                api_key=api_key,
                api_version=api_version,
                correlation_id=correlation_id,
            ) from exc

    # 3. What Kafka's request classes refuse beyond the schema (request_rules).
    if api_key in request_rules.CHECKED:
        try:
            request_rules.check(api_key, request)
        except MalformedRequest as exc:
            raise MalformedRequest(str(exc), api_key=api_key, api_version=api_version,
                                   correlation_id=correlation_id) from None

    # 4. Bytes after the body are left unread, as Kafka does (see the module docstring).
    header = RequestHeader(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=kio_header.client_id,
        flexible=flexible,
    )
    return header, request


class _Buffer:
    """Minimal write() sink collecting chunks; faster than BytesIO for many small writes."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, b: bytes) -> int:
        self.parts.append(b)
        return len(b)

    def framed(self) -> bytes:
        body = b"".join(self.parts)
        return _SIZE.pack(len(body)) + body


def _check_payload(obj: Any, api_key: int, version: int, kind: str) -> None:
    if getattr(obj, "__api_key__", None) != api_key or obj.__version__ != version:
        raise ValueError(
            f"{kind} {type(obj).__name__} v{getattr(obj, '__version__', '?')} "
            f"does not match api_key={api_key} version={version}"
        )


def encode_response(header: RequestHeader, response: Any) -> bytes:
    """Encode a kio response object for ``header``'s request as a size-prefixed frame.

    The response header version comes from the kio class (v0 for ApiVersions always).
    Raises ValueError if the response's api key/version do not match the request.
    """
    _check_payload(response, header.api_key, header.api_version, "response")
    hand = HAND_WRITTEN.get(header.api_key)
    if hand is not None and header.api_version <= hand[0]:
        return hand[1](header.correlation_id, header.api_version, response)
    buf = _Buffer()
    header_cls = response.__header_schema__
    if header_cls is _resp_h1.ResponseHeader:
        buf.write(_CORR.pack(header.correlation_id))
        buf.write(b"\x00")  # no tagged fields
    else:
        buf.write(_CORR.pack(header.correlation_id))
    _writer(type(response))(buf, response)
    return buf.framed()


def encode_request(
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str | None,
    request: Any,
) -> bytes:
    """Encode a kio request object with its header as a size-prefixed frame."""
    _check_payload(request, api_key, version, "request")
    buf = _Buffer()
    header_cls = request.__header_schema__
    kio_header = header_cls(
        request_api_key=i16(api_key),
        request_api_version=i16(version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    _writer(header_cls)(buf, kio_header)
    _writer(type(request))(buf, request)
    return buf.framed()


def decode_response(
    api_key: int, version: int, frame: bytes | bytearray | memoryview
) -> tuple[int, Any]:
    """Decode a response frame payload (without size prefix): (correlation_id, kio response).

    An ApiVersions response carrying UNSUPPORTED_VERSION is decoded in v0 format whatever
    ``version`` was asked (the broker's fallback: retry with a version from its ranges).
    Raises MalformedResponse for undecodable bytes or trailing bytes.
    """
    data = _readonly(frame)
    if (
        api_key == _API_VERSIONS
        and version > 0
        and len(data) >= 6
        and _ERROR16.unpack_from(data, 4)[0] == _UNSUPPORTED_VERSION
    ):
        version = 0
    try:
        cls = response_class(api_key, version)
        header_cls = cls.__header_schema__
    except Exception as exc:
        raise MalformedResponse(f"no schema for response api_key={api_key} v{version}: {exc}") from exc
    try:
        kio_header, offset = _reader(header_cls)(data, 0)
        response, size = _reader(cls)(data, offset)
    except Exception:
        kio_header = None
    if kio_header is None:
        # Kafka's rules where kio's native reader refuses (e.g. a tagged field a newer
        # broker added): a client, too, skips what it does not know. Only on failure, so
        # big Fetch answers keep the fast path.
        try:
            kio_header, offset = read_entity(header_cls, data, 0)
            response, size = read_entity(cls, data, offset)
        except Exception as exc:
            raise MalformedResponse(
                f"cannot decode response api_key={api_key} v{version}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    if offset + size != len(data):
        raise MalformedResponse(
            f"response api_key={api_key} v{version}: "
            f"{len(data) - offset - size} trailing bytes"
        )
    return int(kio_header.correlation_id), response


# Keep the header classes referenced for readers of this module.
RESPONSE_HEADER_V0 = _resp_h0.ResponseHeader
RESPONSE_HEADER_V1 = _resp_h1.ResponseHeader
