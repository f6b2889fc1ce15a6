"""The classes tools/kiogen.py generates from Kafka 4.4's JSON specs for the versions kio
0.6.5 lacks: up to date with the specs, found by the registry, and encoded and decoded by
kio (and by kafka_reader) like kio's own."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import UnknownEntity
from kio.serial import entity_reader, entity_writer

from kgroup.wire.codec import RequestHeader, decode_response, encode_request, encode_response, request_class
from kgroup.wire.kafka_reader import read_entity
from kgroup.wire.schemas import generated, known_versions, load_request_schema, load_response_schema
from tests.integration.test_every_request_answers import entity
from tools import kiogen

COMMITTED = Path(kiogen.DEFAULT_OUT)
GENERATED = sorted(generated())


def _jar() -> Path:
    from kgroup.testing.reference import REQUIRE_ENV

    jar = kiogen.default_jar()
    if jar is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"no kafka-clients jar in the reference lib ({REQUIRE_ENV}=1): run `make reference`")
        pytest.skip("no kafka-clients jar: run `make reference`")
    return jar


def test_committed_classes_are_what_the_generator_makes_of_kafka_4_4(tmp_path):
    out = tmp_path / "schema"
    assert kiogen.main(["--jar", str(_jar()), "--out", str(out)]) == 0
    ours = {str(p.relative_to(out)): p.read_text() for p in out.rglob("*.py")}
    committed = {str(p.relative_to(COMMITTED)): p.read_text() for p in COMMITTED.rglob("*.py")}
    stale = sorted(k for k in ours.keys() | committed.keys() if ours.get(k) != committed.get(k))
    assert not stale, f"run `make schema`: {stale}"


def test_the_generator_reproduces_every_kio_class_it_does_not_replace():
    # Every version kio has (requests, responses, data types) comes out of the generator
    # identical to kio's module (docstring aside), or is one of these renames Kafka made
    # after kio was generated (same bytes).
    specs = kiogen.read_specs(_jar())
    plans = {(p.class_name, p.version): p.reason for p in kiogen.plan(specs)}
    assert {k for k, why in plans.items() if why == "renamed"} == {
        ("StreamsGroupHeartbeatResponse", 0),
        ("TxnOffsetCommitRequest", 3), ("TxnOffsetCommitRequest", 4), ("TxnOffsetCommitRequest", 5),
    }
    assert {k for k, why in plans.items() if why == "differs"} == set()
    assert {(name, v) for (name, v), why in plans.items() if why == "missing"} == {
        (f"{m}{kind}", v)
        for m, v in [("ApiVersions", 5), ("DeleteGroups", 3), ("TxnOffsetCommit", 6),
                     ("StreamsGroupHeartbeat", 1), ("StreamsGroupDescribe", 1),
                     ("StreamsGroupTopologyDescriptionUpdate", 0), ("UnregisterController", 0)]
        for kind in ("Request", "Response")
    } | {("AbortedTxn", 0)}      # a data type of the log's transaction index, not written


def test_the_registry_finds_ours_and_kios():
    assert load_request_schema(28, 6).__module__ == "kgroup.wire.schema.txn_offset_commit.v6.request"
    assert load_response_schema(93, 0).__name__ == "StreamsGroupTopologyDescriptionUpdateResponse"
    assert load_request_schema(12, 4).__module__ == "kio.schema.heartbeat.v4.request"
    assert request_class(18, 5) is load_request_schema(18, 5)
    assert known_versions(28) == tuple(range(7)) and known_versions(93) == (0,)
    with pytest.raises(UnknownEntity):
        load_request_schema(28, 7)
    # Same shape as kio's: the v6 request keeps v5's field names, adds topic ids.
    v5, v6 = load_request_schema(28, 5), load_request_schema(28, 6)
    assert v6.__dataclass_fields__.keys() == v5.__dataclass_fields__.keys()
    assert "topic_id" in v6.__dataclass_fields__["topics"].type.__args__[0].__dataclass_fields__


def _encode(cls: type, value: object) -> bytes:
    buf = io.BytesIO()
    entity_writer(cls)(buf, value)
    return buf.getvalue()


@pytest.mark.parametrize(("api_key", "version"), GENERATED, ids=[f"{k}v{v}" for k, v in GENERATED])
def test_every_generated_version_round_trips(api_key, version):
    @settings(max_examples=25, derandomize=True, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def one(data):
        for cls in (load_request_schema(api_key, version), load_response_schema(api_key, version)):
            value = data.draw(entity(cls), label=cls.__name__)
            raw = _encode(cls, value)
            decoded, size = entity_reader(cls)(raw, 0)
            # Bytes to bytes (kio reads a zero uuid as None): the same again, by both readers.
            assert size == len(raw) and _encode(cls, decoded) == raw
            assert read_entity(cls, raw) == (decoded, size)
        # Through the codec, as our client would send and read them.
        request = data.draw(entity(load_request_schema(api_key, version)))
        frame = encode_request(api_key, version, 5, "c", request)
        assert frame[4:6] == api_key.to_bytes(2, "big")
        response = data.draw(entity(load_response_schema(api_key, version)))
        answer = encode_response(RequestHeader(api_key, version, 5, "c", True), response)
        correlation, decoded = decode_response(api_key, version, answer[4:])
        assert correlation == 5
        assert _encode(type(response), decoded) == _encode(type(response), response)

    one()
