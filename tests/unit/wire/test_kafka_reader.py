"""Decoding requests with Kafka 4.4's rules where kio's native reader differs (kafka_reader):
unknown tagged fields skipped at any depth, Kafka's allocation limits, Kafka's leniencies."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from kgroup.wire.codec import decode_request, decode_response, encode_request, request_class
from kgroup.wire.errors import MalformedRequest, MalformedResponse
from kgroup.wire.kafka_reader import (
    LIMITS_NEED_BYTES,
    MAX_COLLECTION,
    MAX_TAGGED_FIELDS,
    KafkaDecodeError,
    read_entity,
    read_uvarint,
    reading_null_as_empty,
)
from kgroup.broker import concerns
from kgroup.wire.versions import is_flexible
from tests.integration.test_every_request_answers import entity
from tests.unit.wire.unknown_tags import frame_with_unknown_tags, uvarint

SERVED = [(r.api_key, r.name) for r in concerns.SERVED.values()]
FLEXIBLE = [(k, n) for k, n in SERVED
            if any(is_flexible(k, v) for v in range(concerns.SERVED[k].min_version, concerns.SERVED[k].max_version + 1))]
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _versions(api_key: int, flexible_only: bool = False) -> list[int]:
    r = concerns.SERVED[api_key]
    return [v for v in range(r.min_version, r.max_version + 1) if not flexible_only or is_flexible(api_key, v)]


# ---- the same objects as kio, where kio reads the bytes --------------------------------------


@pytest.mark.parametrize(("api_key", "name"), SERVED, ids=[n for _, n in SERVED])
def test_reads_what_kio_reads_for_every_served_request(api_key, name):
    @settings(max_examples=15, **SETTINGS)
    @given(data=st.data())
    def one(data):
        cls = request_class(api_key, data.draw(st.sampled_from(_versions(api_key))))
        buf = io.BytesIO()
        entity_writer(cls)(buf, data.draw(entity(cls)))
        raw = buf.getvalue()
        assert read_entity(cls, raw) == entity_reader(cls)(raw, 0)

    one()


# ---- unknown tagged fields --------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "name"), FLEXIBLE, ids=[n for _, n in FLEXIBLE])
def test_unknown_tagged_fields_at_any_depth_are_skipped(api_key, name):
    @settings(max_examples=15, **SETTINGS)
    @given(data=st.data())
    def one(data):
        version = data.draw(st.sampled_from(_versions(api_key, flexible_only=True)))
        request = data.draw(entity(request_class(api_key, version)))
        tagged = frame_with_unknown_tags(data, api_key, version, 9, "c", request)
        try:
            plain = decode_request(encode_request(api_key, version, 9, "c", request)[4:], concerns.SERVED)
        except MalformedRequest:    # a request Kafka refuses beyond its schema (wire/request_rules.py)
            with pytest.raises(MalformedRequest):
                decode_request(tagged[4:], concerns.SERVED)
            return
        assert decode_request(tagged[4:], concerns.SERVED) == plain

    one()


@settings(max_examples=30, **SETTINGS)
@given(data=st.data())
def test_unknown_tags_everywhere_means_in_the_header_and_in_the_body(data):
    # ApiVersions v3: a header and a body with no tagged field set, nothing nested.
    request = request_class(18, 3)(client_software_name="x", client_software_version="1")
    plain = encode_request(18, 3, 9, "c", request)
    tagged = frame_with_unknown_tags(data, 18, 3, 9, "c", request, everywhere=True)
    at = 4 + 2 + 2 + 4 + 2 + len("c")         # size, key, version, correlation id, client id
    assert plain[at] == 0 and tagged[at] >= 1  # the header's tagged fields
    pos = at + 1
    for _ in range(tagged[at]):                # skip them: tag, size, bytes (tags < 2**31: uvarints)
        pos = _skip_uvarint(tagged, pos)
        size = tagged[pos]
        pos = _skip_uvarint(tagged, pos) + size
    fields = plain[at + 1:-1]                  # the body but its (empty) tagged fields
    assert tagged[pos:].startswith(fields) and tagged[pos + len(fields)] >= 1
    assert decode_request(tagged[4:], concerns.SERVED) == decode_request(plain[4:], concerns.SERVED)


def _skip_uvarint(b: bytes, pos: int) -> int:
    while b[pos] & 0x80:
        pos += 1
    return pos + 1


def _api_versions_v3(tags: bytes = b"\x00") -> bytes:
    """An ApiVersions v3 request frame payload whose body ends with ``tags``."""
    frame = encode_request(18, 3, 7, "c", request_class(18, 3)(client_software_name="x",
                                                                client_software_version="1"))[4:]
    return frame[:-1] + tags


def test_ten_thousand_tagged_fields_are_read_one_more_is_refused():
    assert decode_request(_api_versions_v3(uvarint(MAX_TAGGED_FIELDS) + b"\x63\x00" * MAX_TAGGED_FIELDS), concerns.SERVED)
    with pytest.raises(MalformedRequest, match="exceeds the maximum allowed count of 10000"):
        decode_request(_api_versions_v3(uvarint(MAX_TAGGED_FIELDS + 1) + b"\x63\x00" * (MAX_TAGGED_FIELDS + 1)), concerns.SERVED)


def test_more_tagged_fields_than_bytes_and_a_negative_count_are_refused():
    with pytest.raises(MalformedRequest, match="but there are only 0 bytes remaining"):
        decode_request(_api_versions_v3(b"\x05"), concerns.SERVED)
    with pytest.raises(MalformedRequest, match="Invalid negative number of tagged fields -1"):
        decode_request(_api_versions_v3(b"\xff\xff\xff\xff\x0f"), concerns.SERVED)
    with pytest.raises(MalformedRequest, match="Varint is too long"):
        decode_request(_api_versions_v3(b"\xff\xff\xff\xff\xff\x01"), concerns.SERVED)
    with pytest.raises(MalformedRequest, match="only 2 byte"):          # an unknown tag cut short
        decode_request(_api_versions_v3(b"\x01\x63\x09ab"), concerns.SERVED)


def test_repeats_of_a_known_tag_count_toward_the_limit_in_a_large_frame():
    # kio reads any number of repeats of a known tag; Kafka refuses more than 10,000 tagged
    # fields, so a large frame of a message with tagged fields is read with Kafka's rules.
    cls = request_class(1, 12)                       # Fetch v12: cluster_id is tag 0
    frame = encode_request(1, 12, 3, "c", _fetch(cls))[4:]
    assert frame.endswith(b"\x00")
    one = b"\x00\x02\x01"                             # tag 0, size 2, cluster_id "" (compact)
    many = frame[:-1] + uvarint(MAX_TAGGED_FIELDS + 1) + one * (MAX_TAGGED_FIELDS + 1)
    assert len(many) >= LIMITS_NEED_BYTES
    with pytest.raises(MalformedRequest, match="maximum allowed count of 10000"):
        decode_request(many, concerns.SERVED)
    fine = frame[:-1] + uvarint(MAX_TAGGED_FIELDS) + one * MAX_TAGGED_FIELDS
    assert decode_request(fine, concerns.SERVED)[1].cluster_id == ""


def _fetch(cls):
    from kgroup.wire.kio_build import build
    return build(cls, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1, session_epoch=-1,
                 topics=(), forgotten_topics_data=())


# ---- arrays and strings -----------------------------------------------------------------------

LIST_GROUPS_V4 = encode_request(16, 4, 7, "c", request_class(16, 4)(states_filter=()))[4:-2]
"""ListGroups v4 header and nothing of the body: states_filter (compact []string), tags."""


def test_an_array_of_a_million_elements_is_read_one_more_is_refused():
    header, request = decode_request(LIST_GROUPS_V4 + uvarint(MAX_COLLECTION + 1) + b"\x01" * MAX_COLLECTION + b"\x00", concerns.SERVED)
    assert len(request.states_filter) == MAX_COLLECTION
    with pytest.raises(MalformedRequest, match="which exceeds the maximum allowed size of 1000000"):
        decode_request(LIST_GROUPS_V4 + uvarint(MAX_COLLECTION + 2) + b"\x01" * (MAX_COLLECTION + 1) + b"\x00", concerns.SERVED)


def test_an_array_longer_than_the_bytes_left_is_refused_before_it_is_read():
    with pytest.raises(MalformedRequest, match="Tried to allocate a collection of size 100, but there are only 51"):
        decode_request(LIST_GROUPS_V4 + uvarint(101) + b"\x01" * 50 + b"\x00", concerns.SERVED)
    from kgroup.wire.kio_build import build
    legacy = encode_request(11, 0, 7, "c", build(request_class(11, 0), group_id="g", session_timeout=0,
                                                 member_id="", protocol_type="consumer", protocols=()))[4:-4]
    with pytest.raises(MalformedRequest, match="Tried to allocate a collection of size 2147483647"):
        decode_request(legacy + struct.pack(">i", 2**31 - 1), concerns.SERVED)


def test_null_where_an_array_is_not_nullable_is_refused():
    # kio reads it as None; Kafka: "non-nullable field statesFilter was serialized as null".
    with pytest.raises(MalformedRequest, match="non-nullable field states_filter was serialized as null"):
        decode_request(LIST_GROUPS_V4 + b"\x00\x00", concerns.SERVED)
    with pytest.raises(MalformedRequest, match="non-nullable field states_filter element"):
        decode_request(LIST_GROUPS_V4 + b"\x02\x00\x00", concerns.SERVED)


def test_a_client_reads_a_null_it_was_not_promised_as_empty_and_keeps_the_error_code():
    # librdkafka's mock cluster answers a SyncGroup v3 it refuses with INVALID_REQUEST (42)
    # and a null assignment: correlation id, throttle, error code, bytes length -1.
    frame = struct.pack(">iihi", 7, 0, 42, -1)
    with pytest.raises(MalformedResponse, match="non-nullable field assignment was serialized as null"):
        decode_response(14, 3, frame)
    with reading_null_as_empty():
        corr, resp = decode_response(14, 3, frame)
    assert (corr, int(resp.error_code), bytes(resp.assignment)) == (7, 42, b"")
    with pytest.raises(MalformedResponse):           # only within the block
        decode_response(14, 3, frame)


def test_strings_longer_than_32767_bytes_are_refused():
    def frame(name: bytes) -> bytes:
        return _api_versions_v3()[:-5] + uvarint(len(name) + 1) + name + b"\x02" + b"1" + b"\x00"

    assert decode_request(_api_versions_v3(), concerns.SERVED)[1].client_software_name == "x"
    assert decode_request(frame(b"x" * 32767), concerns.SERVED)[1].client_software_name == "x" * 32767
    with pytest.raises(MalformedRequest, match="had invalid length 32768"):
        decode_request(frame(b"x" * 32768), concerns.SERVED)
    with pytest.raises(MalformedRequest, match="had invalid length 32768"):
        decode_request(frame("é".encode() * 16384), concerns.SERVED)     # 16,384 characters, 32,768 bytes


# ---- Kafka's leniencies -------------------------------------------------------------------------


def test_invalid_utf8_is_replaced_and_any_nonzero_byte_is_true():
    header, request = decode_request(LIST_GROUPS_V4 + b"\x02\x03\xff\xfe\x00", concerns.SERVED)
    assert request.states_filter == ("\ufffd\ufffd",)
    metadata = encode_request(3, 12, 7, "c", request_class(3, 12)(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False))[4:]
    assert metadata[-3:] == b"\x00\x00\x00"          # the two booleans, the tagged fields
    assert decode_request(metadata[:-3] + b"\x02\x00\x00", concerns.SERVED)[1].allow_auto_topic_creation is True


def test_varints_wrap_as_java_ints():
    assert read_uvarint(b"\x7f", 0) == (127, 1)
    assert read_uvarint(b"\xff\xff\xff\xff\x07", 0) == (2**31 - 1, 5)
    assert read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (-1, 5)
    assert read_uvarint(b"\x82\x80\x80\x80\x10", 0) == (2, 5)     # bit 32 falls off, as in Java
    with pytest.raises(KafkaDecodeError):
        read_uvarint(b"\x80", 0)
