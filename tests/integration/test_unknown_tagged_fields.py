"""Forward compatibility (KIP-482): a request carrying tagged fields kgroup does not know —
in its header, its body, any nested entity, as a newer client sends them — is answered, not
dropped. For every API and flexible version a live `kgroup serve` advertises, hypothesis
(derandomized) draws a request and unknown tags for it; the broker must answer each with a
response of that version and the same correlation id, on a connection that stays open.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.wire.codec import decode_response, encode_request, request_class
from kgroup.wire.versions import API_VERSIONS, PRODUCE, SUPPORTED_APIS, api_ranges, is_flexible
from tests.integration.broker_process import BrokerProcess
from tests.integration.test_every_request_answers import Wire, entity
from tests.unit.wire.unknown_tags import frame_with_unknown_tags

pytestmark = pytest.mark.integration
EXAMPLES_PER_API = 10
_SIZE = struct.Struct(">i")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("tags") / "data",
                         group={"initial_rebalance_delay_ms": 0}).start()
    yield proc
    proc.finish()                       # exits cleanly, and no traceback in its log


def flexible_versions(api_key: int) -> list[int]:
    r = SUPPORTED_APIS[api_key]
    return [v for v in range(r.min_version, r.max_version + 1) if is_flexible(api_key, v)]


FLEXIBLE = [(r.api_key, r.name) for r in api_ranges() if flexible_versions(r.api_key)]


@pytest.mark.parametrize(("api_key", "name"), FLEXIBLE, ids=[n for _, n in FLEXIBLE])
def test_requests_with_unknown_tagged_fields_are_answered(broker, api_key, name):
    wire = Wire(broker.port)

    @settings(max_examples=EXAMPLES_PER_API, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def one(data):
        version = data.draw(st.sampled_from(flexible_versions(api_key)), label="version")
        request = data.draw(entity(request_class(api_key, version)), label="request")
        wire.correlation += 1
        frame = frame_with_unknown_tags(data, api_key, version, wire.correlation, "tags", request)
        try:
            wire.sock.sendall(frame)
            if api_key == PRODUCE and int(request.acks) == 0:
                wire.ask(API_VERSIONS, 0, request_class(API_VERSIONS, 0)())   # no answer by design
                return
            (size,) = _SIZE.unpack(wire._read(4))
            correlation, response = decode_response(api_key, version, wire._read(size))
        except (ConnectionError, OSError) as exc:
            raise AssertionError(f"{name} v{version} with unknown tags was not answered ({exc})\n"
                                 f"{broker.log()[-3000:]}") from None
        assert correlation == wire.correlation
        assert (response.__api_key__, response.__version__) == (api_key, version)

    try:
        one()
    finally:
        wire.close()


def test_unknown_tags_cost_nothing_once_the_request_is_read(broker):
    # The same request, with and without unknown tags, answered alike (ApiVersions: nothing
    # in its answer depends on time or state).
    wire = Wire(broker.port)
    try:
        request = request_class(18, 3)(client_software_name="tags", client_software_version="1")
        plain = encode_request(18, 3, 1, "tags", request)
        tagged = plain[:-1] + b"\x02\x07\x01a\x63\x00"        # two unknown tags in the body
        tagged = _SIZE.pack(len(tagged) - 4) + tagged[4:]
        answers = []
        for frame in (plain, tagged):
            wire.sock.sendall(frame)
            (size,) = _SIZE.unpack(wire._read(4))
            answers.append(decode_response(18, 3, wire._read(size))[1])
        assert answers[0] == answers[1]
    finally:
        wire.close()
