"""Round trips over kio objects for every (api_key, version) we serve, and codec errors."""

from __future__ import annotations

import struct

import pytest
from wire_samples import minimal, sample

from kgroup.wire.codec import (
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
    request_class,
    response_class,
)
from kgroup.wire.errors import MalformedRequest, MalformedResponse, UnsupportedVersion
from kgroup.wire.framing import FrameSplitter
from kgroup.broker.concerns import SERVED
from kgroup.wire.versions import all_versions, is_flexible

VERSIONS = all_versions(SERVED.values())
# A broker that does not serve the consumer protocol.
WITHOUT_CONSUMER_PROTOCOL = {k: r for k, r in SERVED.items() if k not in (68, 69)}


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@pytest.mark.parametrize("make", [sample, minimal], ids=["full", "minimal"])
def test_request_round_trip(api_key: int, version: int, make) -> None:
    request = make(request_class(api_key, version))
    frame = encode_request(api_key, version, 1234, "client-1", request)
    (payload,) = FrameSplitter().feed(frame)
    header, decoded = decode_request(payload, SERVED)
    assert decoded == request
    assert header == RequestHeader(api_key, version, 1234, "client-1", is_flexible(api_key, version))


@pytest.mark.parametrize(("api_key", "version"), VERSIONS)
@pytest.mark.parametrize("make", [sample, minimal], ids=["full", "minimal"])
def test_response_round_trip(api_key: int, version: int, make) -> None:
    response = make(response_class(api_key, version))
    header = RequestHeader(api_key, version, -7, None, is_flexible(api_key, version))
    frame = encode_response(header, response)
    (payload,) = FrameSplitter().feed(frame)
    correlation_id, decoded = decode_response(api_key, version, payload)
    assert correlation_id == -7
    assert decoded == response


def test_null_client_id_and_unicode_client_id() -> None:
    req = sample(request_class(12, 4))
    for client_id in (None, "", "clïent-ü"):
        header, _ = decode_request(encode_request(12, 4, 1, client_id, req)[4:], SERVED)
        assert header.client_id == client_id


def test_flexible_request_header_keeps_legacy_client_id_encoding() -> None:
    # Header v2 still encodes client_id as a legacy int16-length string (KIP-482).
    frame = encode_request(12, 4, 9, "ab", sample(request_class(12, 4)))
    assert frame[4:16] == struct.pack(">hhih", 12, 4, 9, 2) + b"ab"
    assert frame[16] == 0  # header tagged fields: none


def test_response_header_bytes() -> None:
    non_flexible = encode_response(RequestHeader(12, 3, 5, None, False), minimal(response_class(12, 3)))
    assert non_flexible[4:8] == struct.pack(">i", 5) and len(non_flexible) == 4 + 4 + 4 + 2
    flexible = encode_response(RequestHeader(12, 4, 5, None, True), minimal(response_class(12, 4)))
    assert flexible[4:9] == struct.pack(">i", 5) + b"\x00"
    # ApiVersions v3: flexible body, header v0 (no tag buffer after the correlation id).
    av = encode_response(RequestHeader(18, 3, 5, None, True), minimal(response_class(18, 3)))
    assert av[4:10] == struct.pack(">ih", 5, 0)


def test_response_must_match_request() -> None:
    with pytest.raises(ValueError):
        encode_response(RequestHeader(12, 4, 1, None, True), minimal(response_class(12, 3)))
    with pytest.raises(ValueError):
        encode_response(RequestHeader(13, 3, 1, None, False), minimal(response_class(12, 3)))
    with pytest.raises(ValueError):
        encode_request(12, 3, 1, None, minimal(request_class(12, 4)))


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(12, 5), (12, -1), (0, 2), (99, 0), (17, 2), (18, 6), (3, 14), (8, 11), (1, 19)],
)
def test_unsupported_versions_carry_the_correlation_id(api_key: int, version: int) -> None:
    frame = struct.pack(">hhih", api_key, version, 77, -1) + b"\x00" * 10
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame, SERVED)
    assert (info.value.api_key, info.value.version, info.value.correlation_id) == (
        api_key,
        version,
        77,
    )
    assert peek_request_header(frame) == (api_key, version, 77)


def test_disabled_apis_are_unsupported() -> None:
    req = sample(request_class(68, 1))
    frame = encode_request(68, 1, 3, "c", req)[4:]
    assert decode_request(frame, SERVED)[1] == req
    with pytest.raises(UnsupportedVersion):
        decode_request(frame, WITHOUT_CONSUMER_PROTOCOL)


def test_truncated_requests_are_malformed() -> None:
    frame = encode_request(11, 5, 8, "c", sample(request_class(11, 5)))[4:]
    for cut in range(len(frame)):
        with pytest.raises((MalformedRequest,)) as info:
            decode_request(frame[:cut], SERVED)
        if cut >= 8:
            assert info.value.correlation_id == 8 and info.value.api_key == 11


def test_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    frame = encode_request(11, 5, 8, "c", sample(request_class(11, 5)))[4:]
    assert decode_request(frame + b"\x00\x01\x00", SERVED) == decode_request(frame, SERVED)
    # What librdkafka 2.16 sends for Metadata v13 with no topic (all topics): 3 extra bytes.
    librdkafka = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    header, request = decode_request(librdkafka, SERVED)
    assert (header.api_key, header.api_version, header.client_id) == (3, 13, "rdkafka")
    assert request.topics is None


def test_unknown_tagged_field_is_skipped_as_kafka_skips_it() -> None:
    # kio's native reader raises KeyError on a tag it does not know; Kafka keeps the field
    # aside and reads on (KIP-482), and so does our codec (kafka_reader).
    request = minimal(request_class(12, 4))
    frame = encode_request(12, 4, 8, "c", request)[4:]
    assert frame[-1] == 0
    header, decoded = decode_request(frame[:-1] + b"\x01\x09\x01z", SERVED)
    assert decoded == request and header.correlation_id == 8
    # Cut short inside the unknown field: malformed, as in Kafka.
    with pytest.raises(MalformedRequest):
        decode_request(frame[:-1] + b"\x01\x09\x05z", SERVED)


def test_decode_accepts_bytearray_and_memoryview() -> None:
    frame = encode_request(12, 0, 8, "c", sample(request_class(12, 0)))[4:]
    for buf in (bytearray(frame), memoryview(frame), memoryview(bytearray(frame))):
        assert decode_request(buf, SERVED)[0].correlation_id == 8


def test_decode_response_errors() -> None:
    frame = encode_response(RequestHeader(12, 4, 1, None, True), sample(response_class(12, 4)))[4:]
    with pytest.raises(MalformedResponse):
        decode_response(12, 4, frame[:-2])
    with pytest.raises(MalformedResponse):
        decode_response(12, 4, frame + b"\x00")
    with pytest.raises(MalformedResponse):
        decode_response(99, 0, frame)
