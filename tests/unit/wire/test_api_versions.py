"""ApiVersions: our ranges at every version, and the v0 fallback for a too-new request."""

from __future__ import annotations

import struct
import warnings

import pytest

warnings.filterwarnings("ignore", category=DeprecationWarning)

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse  # noqa: E402

from kgroup.wire.api_versions import (  # noqa: E402
    api_versions_response,
    encode_api_versions_fallback,
)
from kgroup.wire.codec import (  # noqa: E402
    decode_request,
    decode_response,
    encode_response,
    peek_request_header,
)
from kgroup.wire.errors import UnsupportedVersion  # noqa: E402
from kgroup.wire.framing import FrameSplitter  # noqa: E402
from kgroup.broker.concerns import SERVED  # noqa: E402

# A broker may advertise less than it could (here: without the consumer protocol).
CONSUMER_PROTOCOL_APIS = frozenset({68, 69})
WITHOUT = [r for r in SERVED.values() if r.api_key not in CONSUMER_PROTOCOL_APIS]

OUR_RANGES = [(r.api_key, r.min_version, r.max_version) for r in SERVED.values()]
API_VERSIONS_RANGE = [r for r in OUR_RANGES if r[0] == 18]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_response_lists_our_ranges_and_kafka_python_reads_it(version: int) -> None:
    kp_req = ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3")
    kp_req.API_VERSION = version
    kp_req.with_header(correlation_id=21, client_id="kp")
    (frame,) = FrameSplitter().feed(bytes(kp_req.encode(header=True, framed=True)))
    header, _ = decode_request(frame, SERVED)

    response = api_versions_response(version, ranges=SERVED.values())
    assert response.__version__ == version and response.error_code == 0
    out = encode_response(header, response)
    # Header v0 always: the body's error code follows the correlation id directly.
    assert out[4:10] == struct.pack(">ih", 21, 0)

    kp = ApiVersionsResponse.decode(out, version=version, header=True, framed=True)
    assert kp.header.correlation_id == 21 and kp.error_code == 0
    assert [(a.api_key, a.min_version, a.max_version) for a in kp.api_keys] == OUR_RANGES
    assert decode_response(18, version, out[4:])[1] == response


def test_error_and_disabled_apis() -> None:
    resp = api_versions_response(3, 35, ranges=WITHOUT)
    assert resp.error_code == 35
    assert {k.api_key for k in resp.api_keys}.isdisjoint(CONSUMER_PROTOCOL_APIS)


def test_too_new_api_versions_gets_a_v0_fallback() -> None:
    # A future client opens with ApiVersions v6: flexible header, body we cannot know.
    frame = struct.pack(">hhih", 18, 6, 4242, 2) + b"kp" + b"\x00" + b"\x07garbage\x00"
    with pytest.raises(UnsupportedVersion) as info:
        decode_request(frame, SERVED)
    assert info.value.correlation_id == 4242 and info.value.api_key == 18
    assert peek_request_header(frame) == (18, 6, 4242)

    reply = encode_api_versions_fallback(info.value.correlation_id, ranges=SERVED.values())
    kp = ApiVersionsResponse.decode(reply, version=0, header=True, framed=True)
    assert kp.header.correlation_id == 4242
    assert kp.error_code == 35
    # Only ApiVersions' own range, as Kafka answers (KIP-511): the client retries with it.
    assert [(a.api_key, a.min_version, a.max_version) for a in kp.api_keys] == API_VERSIONS_RANGE
    # Same bytes as our kio v0 response with the error set.
    ours = encode_response(
        decode_request(struct.pack(">hhih", 18, 0, 4242, -1), SERVED)[0],
        api_versions_response(0, 35, ranges=[r for r in SERVED.values() if r.api_key == 18]),
    )
    assert ours == reply


def test_fallback_without_disabled_apis() -> None:
    reply = encode_api_versions_fallback(1, ranges=WITHOUT)
    kp = ApiVersionsResponse.decode(reply, version=0, header=True, framed=True)
    assert [(a.api_key, a.min_version, a.max_version) for a in kp.api_keys] == API_VERSIONS_RANGE


def test_client_side_decodes_the_fallback_as_v0() -> None:
    reply = encode_api_versions_fallback(8, ranges=SERVED.values())
    correlation_id, resp = decode_response(18, 4, reply[4:])
    assert correlation_id == 8 and resp.__version__ == 0 and resp.error_code == 35
    assert [(a.api_key, a.min_version, a.max_version) for a in resp.api_keys] == API_VERSIONS_RANGE


@pytest.mark.parametrize("name, valid", [("a", True), ("a.b-c", True), ("A9", True), ("", False),
                                         ("a_b", False), ("-a", False), ("a-", False), ("x y", False),
                                         ("Δ", False)])
def test_kip511_client_software_name_and_version_must_match_kafkas_pattern(name: str, valid: bool) -> None:
    from kgroup.wire.api_versions import api_versions_answer
    from kgroup.wire.codec import request_class

    for request in (request_class(18, 3)(client_software_name=name, client_software_version="1.0"),
                    request_class(18, 3)(client_software_name="kgroup", client_software_version=name)):
        answer = api_versions_answer(3, request, ranges=SERVED.values())
        assert (answer.error_code == 0) is valid
        assert (len(answer.api_keys) > 0) is valid         # Kafka lists no range with the error
    # Before v3 there is nothing to check.
    assert api_versions_answer(2, request_class(18, 2)(), ranges=SERVED.values()).error_code == 0


@pytest.mark.parametrize(("cluster_id", "node_id", "error"), [
    (None, -1, 0), ("kc", 3, 0),                 # neither named, or the cluster and node reached
    ("other", 3, 129), ("kc", 4, 129),           # another cluster or node: REBOOTSTRAP_REQUIRED
    ("kc", -1, 42), (None, 3, 42),               # one without the other: INVALID_REQUEST
])
def test_kip1242_v5_checks_the_cluster_and_node_the_client_meant(cluster_id, node_id, error) -> None:
    from kgroup.wire.api_versions import api_versions_answer
    from kgroup.wire.codec import request_class

    req = request_class(18, 5)(client_software_name="x", client_software_version="1", cluster_id=cluster_id,
                               node_id=node_id)
    answer = api_versions_answer(5, req, ranges=SERVED.values(), cluster_id="kc", node_id=3)
    assert int(answer.error_code) == error
    assert bool(answer.api_keys) == (error == 0)
