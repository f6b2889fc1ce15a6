"""The classes kgroup builds from Kafka 4.4's JSON specs (kgroup/wire/specs/) for the versions
kio 0.6.5 lacks: the vendored specs and index are what `make schema` brings in from Kafka's
jar, the builder reproduces kio's own classes from the same specs, the registry finds the
built classes, and kio (and kafka_reader) encode and decode them like kio's own."""

from __future__ import annotations

import dataclasses
import fnmatch
import io
import json
import os
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import UnknownEntity
from kio.serial import entity_reader, entity_writer

from kgroup.wire.codec import RequestHeader, decode_response, encode_request, encode_response, request_class
from kgroup.wire.kafka_reader import read_entity
from kgroup.wire.schemas import generated, known_versions, load_request_schema, load_response_schema
from kgroup.wire.spec_classes import Versions, build, parse_spec, shape, wire_signature
from tests.integration.test_every_request_answers import entity
from tools import kiogen

SPECS = Path(kiogen.DEFAULT_OUT)
GENERATED = sorted(generated())
# kio classes Kafka renamed fields of after kio was generated (same bytes): kio's stay.
RENAMED = {("StreamsGroupHeartbeatResponse", 0)}


def _jar() -> Path:
    from kgroup.testing.reference import REQUIRE_ENV

    jar = kiogen.default_jar()
    if jar is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"no kafka-clients jar in the reference lib ({REQUIRE_ENV}=1): run `make reference`")
        pytest.skip("no kafka-clients jar: run `make reference`")
    return jar


def test_the_vendored_specs_and_index_are_what_make_schema_brings_in():
    assert kiogen.main(["--jar", str(_jar()), "--check"]) == 0, "run `make schema`"


def test_the_builder_reproduces_every_kio_class_it_does_not_replace():
    # Every version kio has (requests, responses, headers, data types) of every spec in
    # Kafka 4.4's jar comes out of the builder the same class as kio's, or is a rename.
    plans = {(p.class_name, p.version): p.reason for p in kiogen.plan(kiogen.read_specs(_jar()))}
    assert {k for k, why in plans.items() if why == "renamed"} == RENAMED
    assert {k for k, why in plans.items() if why == "differs"} == set()
    assert {(name, v) for (name, v), why in plans.items() if why == "missing"} == {
        (f"{m}{kind}", v)
        for m, v in [("ApiVersions", 5), ("DeleteGroups", 3), ("TxnOffsetCommit", 6),
                     ("StreamsGroupHeartbeat", 1), ("StreamsGroupDescribe", 1),
                     ("StreamsGroupTopologyDescriptionUpdate", 0), ("UnregisterController", 0)]
        for kind in ("Request", "Response")
    } | {("AbortedTxn", 0)}      # a data type of the log's transaction index, not written


def test_the_vendored_specs_build_kios_own_classes():
    # Without the jar: each vendored spec's versions that kio has come out of the builder
    # exactly as kio's classes (ApiVersions v0-v4, TxnOffsetCommit v0-v5, ...).
    checked = 0
    for path in sorted(p for p in SPECS.glob("*.json") if p.name != kiogen.INDEX):
        spec = parse_spec(path.read_text())
        for version in Versions.parse(spec["validVersions"]).each():
            theirs = kiogen.kio_class(spec, version)
            if theirs is None or (spec["name"], version) in RENAMED:
                continue
            assert shape(build(spec, version)) == shape(theirs), (spec["name"], version)
            checked += 1
    assert checked >= 20
    heartbeat = parse_spec((SPECS / "StreamsGroupHeartbeatResponse.json").read_text())
    kio_v0 = kiogen.kio_class(heartbeat, 0)
    assert shape(build(heartbeat, 0)) != shape(kio_v0)
    assert wire_signature(build(heartbeat, 0)) == wire_signature(kio_v0)


def test_the_specs_ship_with_the_package():
    # `make run` installs kgroup alone (not editable): every file the registry reads must be
    # package data.
    pyproject = tomllib.loads((Path(__file__).parents[3] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["kgroup.wire.specs"]
    data = [p.name for p in SPECS.iterdir() if p.suffix != ".py" and p.name != "__pycache__"]
    assert data and all(any(fnmatch.fnmatch(n, pat) for pat in patterns) for n in data)
    index = json.loads((SPECS / "index.json").read_text())["schemas"]
    assert {row["spec"] for row in index} | {"index.json", "NOTICE"} == set(data)
    assert files("kgroup.wire.specs").joinpath("NOTICE").read_text().count("Apache License") == 1


def test_the_registry_finds_ours_and_kios():
    assert load_request_schema(28, 6).__module__ == "kgroup.wire.spec_classes"
    assert load_request_schema(28, 6).__version__ == 6
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
    assert [f.name for f in dataclasses.fields(load_request_schema(18, 5))] == [
        "client_software_name", "client_software_version", "cluster_id", "node_id"]


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
