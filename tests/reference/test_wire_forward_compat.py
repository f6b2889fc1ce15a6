"""Malformed, over-limit and forward-compatible request frames: kgroup answers each as Apache
Kafka 4.4 does — an answer (with the same error) or a closed connection.

The same raw frame goes to the reference broker (fixture `kafka_reference`) and to a real
`kgroup serve`, each on a fresh connection. Outcomes are compared after one named
normalization: an answer is reduced to its top-level error code (None where the version has
none) and, for Metadata, to each topic's (error, name, topic id) and whether brokers are
listed — the rest (node ids, ports, cluster ids) differs between any two clusters.
"""

from __future__ import annotations

import socket
import struct
import uuid
from typing import Any

import pytest

from kgroup.wire.codec import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.kafka_reader import MAX_COLLECTION, MAX_STRING, MAX_TAGGED_FIELDS
from tests.integration.broker_process import BrokerProcess
from tests.unit.wire.unknown_tags import uvarint

pytestmark = pytest.mark.integration
_SIZE = struct.Struct(">i")
CLOSED = "closed"


@pytest.fixture(scope="module")
def kgroup(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("forward") / "data",
                         group={"initial_rebalance_delay_ms": 0}).start()
    yield proc
    proc.finish()


def payload(api_key: int, version: int, request: Any) -> bytes:
    return encode_request(api_key, version, 7, "forward", request)[4:]


def outcome(bootstrap: str, frame: bytes, api_key: int, version: int) -> Any:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(_SIZE.pack(len(frame)) + frame)
        data = b""
        try:
            while len(data) < 4 or len(data) < 4 + _SIZE.unpack_from(data)[0]:
                chunk = sock.recv(1 << 16)
                if not chunk:
                    return CLOSED
                data += chunk
        except ConnectionResetError:
            return CLOSED
    correlation, response = decode_response(api_key, version, data[4:])
    assert correlation == 7
    summary: tuple[Any, ...] = ("answered", _code(getattr(response, "error_code", None)))
    if api_key == 3:
        summary += (bool(response.brokers),
                    tuple((_code(t.error_code), t.name, t.topic_id) for t in response.topics))
    return summary


def _code(value: Any) -> int | None:
    return None if value is None else int(value)


# ---- the frames ---------------------------------------------------------------------------------

API_VERSIONS_V3 = payload(18, 3, request_class(18, 3)(client_software_name="x", client_software_version="1"))
HEADER_END = 8 + 2 + len("forward")   # key, version, correlation id, client id: then header tags
assert API_VERSIONS_V3[HEADER_END] == 0 and API_VERSIONS_V3[-1] == 0


def api_versions(tags: bytes = b"\x00", header_tags: bytes = b"\x00", name: bytes = b"x") -> bytes:
    return (API_VERSIONS_V3[:HEADER_END] + header_tags + uvarint(len(name) + 1) + name
            + b"\x02" + b"1" + tags)


LIST_GROUPS_V4 = payload(16, 4, request_class(16, 4)(states_filter=()))[:-2]   # header only


def metadata(version: int, *topics: tuple[str | None, uuid.UUID | None]) -> bytes:
    cls = request_class(3, version)
    topic = item(cls, "topics")
    return payload(3, version, build(cls, allow_auto_topic_creation=False,
                                     topics=tuple(build(topic, name=n, topic_id=i) for n, i in topics)))


METADATA_V12 = metadata(12, ("forward-compat-topic", None))
assert METADATA_V12.endswith(b"\x00\x00\x00\x00")   # topic tags, two booleans, request tags

CASES: dict[str, tuple[bytes, int, int]] = {
    # Unknown tagged fields: skipped in the body, the header, a nested entity.
    "unknown tag in the body": (api_versions(b"\x01\x63\x02ab"), 18, 3),
    "unknown tag in the header": (api_versions(header_tags=b"\x01\x05\x01z"), 18, 3),
    "unknown tag in a nested entity": (METADATA_V12[:-4] + b"\x01\x2a\x00" + METADATA_V12[-3:], 3, 12),
    "unknown tag of 2^31-1": (api_versions(b"\x01" + uvarint(2**31 - 1) + b"\x00"), 18, 3),
    # Tagged field counts.
    "10,000 tagged fields": (api_versions(uvarint(MAX_TAGGED_FIELDS) + b"\x63\x00" * MAX_TAGGED_FIELDS), 18, 3),
    "10,001 tagged fields": (api_versions(uvarint(MAX_TAGGED_FIELDS + 1) + b"\x63\x00" * (MAX_TAGGED_FIELDS + 1)),
                             18, 3),
    "more tagged fields than bytes": (api_versions(b"\x05"), 18, 3),
    "negative tagged field count": (api_versions(header_tags=b"\xff\xff\xff\xff\x0f"), 18, 3),
    "varint of six bytes": (api_versions(header_tags=b"\xff\xff\xff\xff\xff\x01"), 18, 3),
    "unknown tag longer than the frame": (api_versions(b"\x01\x63\x09ab"), 18, 3),
    # Strings.
    "string of 32,767 bytes": (api_versions(name=b"a" * MAX_STRING), 18, 3),
    "string of 32,768 bytes": (api_versions(name=b"a" * (MAX_STRING + 1)), 18, 3),
    "invalid UTF-8": (LIST_GROUPS_V4 + b"\x02\x03\xff\xfe\x00", 16, 4),
    # Arrays.
    "array longer than the bytes left": (LIST_GROUPS_V4 + uvarint(101) + b"\x01" * 50 + b"\x00", 16, 4),
    "array of 1,000,000": (LIST_GROUPS_V4 + uvarint(MAX_COLLECTION + 1) + b"\x01" * MAX_COLLECTION + b"\x00", 16, 4),
    "array of 1,000,001": (LIST_GROUPS_V4 + uvarint(MAX_COLLECTION + 2) + b"\x01" * (MAX_COLLECTION + 1) + b"\x00",
                           16, 4),
    "null for an array that is not nullable": (LIST_GROUPS_V4 + b"\x00\x00", 16, 4),
    "null array element": (LIST_GROUPS_V4 + b"\x02\x00\x00", 16, 4),
    # Other bytes.
    "boolean byte 2": (METADATA_V12[:-3] + b"\x00\x02\x00", 3, 12),   # include authorized ops
    "bytes after the body": (API_VERSIONS_V3 + b"\x00\x01\x02", 18, 3),
    "body cut short": (LIST_GROUPS_V4 + b"\x02\x07Stab", 16, 4),
    "API key no broker knows": (struct.pack(">hh", 999, 0) + API_VERSIONS_V3[4:], 18, 3),
    "version no broker knows": (struct.pack(">hh", 12, 99) + API_VERSIONS_V3[4:], 18, 3),
    # Metadata's whole-request errors (the top-level error_code from v13).
    "Metadata v13 topic with neither name nor id": (metadata(13, ("m-a", None), (None, None)), 3, 13),
    "Metadata v12 topic with neither name nor id": (metadata(12, (None, None)), 3, 12),
    "Metadata v11 topic id": (metadata(11, ("m-x", uuid.UUID(int=5)), ("m-y", None)), 3, 11),
    "Metadata v11 null name": (metadata(11, (None, None), ("m-y", None)), 3, 11),
    "Metadata v13 unknown id with a name": (metadata(13, ("m-z", uuid.UUID(int=9))), 3, 13),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_frame_gets_the_same_outcome_on_both_brokers(kafka_reference, kgroup, case):
    frame, api_key, version = CASES[case]
    theirs = outcome(kafka_reference.bootstrap, frame, api_key, version)
    ours = outcome(kgroup.bootstrap, frame, api_key, version)
    assert ours == theirs, f"{case}: Kafka {theirs}, kgroup {ours}"
    # kgroup keeps serving after it (a closed connection is only that connection's).
    assert outcome(kgroup.bootstrap, API_VERSIONS_V3, 18, 3) == ("answered", 0)
