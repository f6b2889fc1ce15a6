"""Every request a client may send is answered: for each API and version the broker
advertises, requests encoded by kio — null and empty arrays, null and empty strings, tagged
fields set and unset, every optional field set and unset, arrays whose entries have null
fields, tagged fields the schema does not know (as a newer client sends them, KIP-482) —
go to a live `kgroup serve`, which
must answer each one with a response of that version (an error code is fine; a closed
connection is not) and log no traceback.

Values stay small (counts, timeouts, waits), so the requests are cheap and none parks for
long; which fields are present and null is what varies.
"""

from __future__ import annotations

import dataclasses
import datetime
import socket
import struct
import types
import typing
import uuid
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import (
    Records,
    TZAware,
    f64,
    i8,
    i16,
    i32Timedelta,
    i64Timedelta,
    u8,
    u16,
)

from kgroup.wire import request_rules
from kgroup.wire.codec import decode_response, encode_request, request_class
from kgroup.wire.errors import MalformedRequest
from kgroup.wire.record_batch import build_batch
from kgroup.broker.concerns import SERVED
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.versions import is_flexible
from tests.integration.broker_process import BrokerProcess
from tests.unit.wire.unknown_tags import frame_with_unknown_tags

pytestmark = pytest.mark.integration
EXAMPLES_PER_API = 12
_SIZE = struct.Struct(">i")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("every") / "data",
                         group={"initial_rebalance_delay_ms": 0}).start()
    yield proc
    proc.finish()                       # exits cleanly, and no traceback in its log


# ---- values of kio's types ------------------------------------------------------------------

SMALL_INTS = st.integers(-2, 6)
WAITS_MS = st.sampled_from([0, 1, 20])
NAMES = st.one_of(st.just(""), st.sampled_from(["t", "g", "__kgroup_events", "orders"]),
                  st.text(alphabet="abcxyz._-ü☃", max_size=6))
RECORDS = st.one_of(st.binary(max_size=24), st.builds(
    lambda n: build_batch([(None, b"v%d" % i, [], 1_700_000_000_000 + i) for i in range(n)]), st.integers(1, 3)))


def _optional_inner(hint: Any) -> Any | None:
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(hint) if a is not types.NoneType]
        if len(inner) == 1 and len(typing.get_args(hint)) == 2:
            return inner[0]
    return None


def _primitive(t: type) -> st.SearchStrategy:
    if t is bool:
        return st.booleans()
    if t is ErrorCode:
        return st.sampled_from([ErrorCode.none, ErrorCode.unknown_server_error])
    if t is uuid.UUID:
        return st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
    if issubclass(t, Records):
        return RECORDS.map(Records)
    if issubclass(t, (i32Timedelta, i64Timedelta)):
        return WAITS_MS.map(lambda ms: t.parse(datetime.timedelta(milliseconds=ms)))
    if issubclass(t, TZAware):
        return st.just(TZAware.parse(datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC)))
    if issubclass(t, f64):
        return st.sampled_from([0.0, 1.5]).map(f64)
    if issubclass(t, (i8, u8, i16, u16)):
        lo, hi = {i8: (-128, 127), u8: (0, 255), i16: (-(2**15), 2**15 - 1), u16: (0, 2**16 - 1)}[
            next(b for b in (i8, u8, i16, u16) if issubclass(t, b))]
        return st.one_of(SMALL_INTS.filter(lambda v: lo <= v <= hi), st.sampled_from([lo, hi])).map(t)
    if issubclass(t, int):
        low = 0 if t.__name__.startswith("u") else -2
        return st.integers(low, 6).map(t)
    if issubclass(t, str):
        return NAMES.map(t)
    if issubclass(t, bytes):
        return st.binary(max_size=12).map(t)
    raise TypeError(f"no strategy for {t!r}")


def _value(hint: Any) -> st.SearchStrategy:
    inner = _optional_inner(hint)
    if inner is not None:
        return st.one_of(st.none(), _value(inner))
    if typing.get_origin(hint) is tuple:
        (item, _) = typing.get_args(hint)
        return st.lists(_value(item), max_size=3).map(tuple)
    if dataclasses.is_dataclass(hint):
        return entity(hint)
    return _primitive(hint)


@cache
def entity(cls: type) -> st.SearchStrategy:
    """Any instance of a kio entity: each field present or not, null or not, small values."""
    hints = typing.get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        strategy = st.deferred(lambda h=hints[f.name]: _value(h))
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            strategy = st.one_of(st.just(dataclasses.MISSING), strategy)   # unset: the schema default
        fields[f.name] = strategy
    return st.fixed_dictionaries(fields).map(
        lambda values: cls(**{k: v for k, v in values.items() if v is not dataclasses.MISSING}))


FILLS = ("all set", "all unset", "nulls inside")


def filled(cls: type, fill: str) -> Any:
    """An instance with every optional field set (arrays of one, tagged fields given), every
    one unset (defaults, null, empty arrays), or arrays of one whose nullable fields are null."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if fill != "all set" and has_default:
            continue
        values[f.name] = _fixed(hints[f.name], fill)
    return cls(**values)


def _fixed(hint: Any, fill: str) -> Any:
    inner = _optional_inner(hint)
    if inner is not None:
        keep = fill == "all set" or (fill == "nulls inside" and typing.get_origin(inner) is tuple)
        return _fixed(inner, fill) if keep else None
    if typing.get_origin(hint) is tuple:
        return () if fill == "all unset" else (_fixed(typing.get_args(hint)[0], fill),)
    if dataclasses.is_dataclass(hint):
        return filled(hint, fill)
    return _smallest(hint)


def _smallest(t: type) -> Any:
    if t is bool:
        return True
    if t is ErrorCode:
        return ErrorCode.none
    if t is uuid.UUID:
        return uuid.UUID(int=1)
    if issubclass(t, Records):
        return Records(build_batch([(b"k", b"v", [("h", b"1")], 1_700_000_000_000)]))
    if issubclass(t, (i32Timedelta, i64Timedelta)):
        return t.parse(datetime.timedelta(milliseconds=10))
    if issubclass(t, TZAware):
        return TZAware.parse(datetime.datetime(2024, 1, 2, tzinfo=datetime.UTC))
    if issubclass(t, f64):
        return f64(1.5)
    if issubclass(t, int):
        return t(1)
    if issubclass(t, str):
        return t("t")
    if issubclass(t, bytes):
        return t(b"\x00")
    raise TypeError(f"no value for {t!r}")


# ---- the wire -------------------------------------------------------------------------------


class Wire:
    """One plain TCP connection to the broker, requests answered in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.correlation = 0

    def close(self) -> None:
        self.sock.close()

    def reconnect(self, port: int) -> None:
        self.sock.close()
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.correlation = 0

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def ask(self, api_key: int, version: int, request: Any) -> Any | None:
        """Send ``request``; return the decoded response (None for Produce acks=0)."""
        self.correlation += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation, "every-request", request))
        if api_key == ApiKey.PRODUCE and int(request.acks) == 0:
            # No answer by design; the connection must still serve the next request.
            self.ask(ApiKey.API_VERSIONS, 0, request_class(ApiKey.API_VERSIONS, 0)())
            return None
        (size,) = _SIZE.unpack(self._read(4))
        correlation, response = decode_response(api_key, version, self._read(size))
        assert correlation == self.correlation
        assert response.__version__ == version and response.__api_key__ == api_key
        return response


def kafka_refuses(api_key: int, request: Any) -> bool:
    """Whether Kafka 4.4 cannot build its request object from ``request`` (and so closes)."""
    try:
        request_rules.check(api_key, request)
    except MalformedRequest:
        return True
    return False


def answered(broker, wire: Wire, api_key: int, version: int, request: Any, what: str) -> None:
    """Send one request on ``wire``; fail with the broker's log if the connection drops.

    A request Kafka's parsing refuses (request_rules: ACL filters with UNKNOWN elements) must
    instead close the connection, as Kafka closes it, and the broker must go on answering:
    ``wire`` is connected anew and asked ApiVersions.
    """
    refused = kafka_refuses(api_key, request)
    try:
        wire.ask(api_key, version, request)
    except (ConnectionError, OSError) as exc:
        if not refused:
            raise AssertionError(f"{SERVED[api_key].name} v{version} ({what}) was not answered ({exc})\n"
                                 f"{broker.log()[-3000:]}") from None
        wire.reconnect(broker.port)
        wire.ask(ApiKey.API_VERSIONS, 0, request_class(ApiKey.API_VERSIONS, 0)())
    else:
        assert not refused, (f"{SERVED[api_key].name} v{version} ({what}) was answered; Kafka 4.4 "
                             f"cannot parse it and closes the connection")


ADVERTISED = [(r.api_key, r.name) for r in SERVED.values()]


def versions(api_key: int) -> list[int]:
    r = SERVED[api_key]
    return list(range(r.min_version, r.max_version + 1))


@pytest.mark.parametrize(("api_key", "name"), ADVERTISED, ids=[n for _, n in ADVERTISED])
def test_every_version_answers_with_every_optional_field_set_and_unset(broker, api_key, name):
    wire = Wire(broker.port)
    try:
        for version in versions(api_key):
            cls = request_class(api_key, version)
            for fill in FILLS:
                answered(broker, wire, api_key, version, filled(cls, fill), fill)
    finally:
        wire.close()


@pytest.mark.parametrize(("api_key", "name"), ADVERTISED, ids=[n for _, n in ADVERTISED])
def test_random_requests_of_every_api_are_answered(broker, api_key, name):
    @settings(max_examples=EXAMPLES_PER_API, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def one(data):
        version = data.draw(st.sampled_from(versions(api_key)), label="version")
        request = data.draw(entity(request_class(api_key, version)), label="request")
        wire = Wire(broker.port)
        try:
            answered(broker, wire, api_key, version, request, repr(request))
        finally:
            wire.close()

    one()


# ---- forward compatibility: tagged fields kgroup does not know -----------------------------


def flexible_versions(api_key: int) -> list[int]:
    r = SERVED[api_key]
    return [v for v in range(r.min_version, r.max_version + 1) if is_flexible(api_key, v)]


# Every flexible version of every API the broker's tables serve (issue 29's acceptance).
FLEXIBLE = [(r.api_key, v, r.name) for r in SERVED.values() for v in flexible_versions(r.api_key)]
EXAMPLES_PER_VERSION = 4


@pytest.mark.parametrize(("api_key", "version", "name"), FLEXIBLE, ids=[f"{n}-v{v}" for _, v, n in FLEXIBLE])
def test_requests_with_unknown_tagged_fields_are_answered(broker, api_key, version, name):
    """A request with tagged fields kgroup does not know (random tags and bytes, at least
    one in the header and one in the body, maybe more in nested entities) is answered, not
    closed: Kafka skips them (KIP-482). Derandomized in CI by the `ci` profile."""
    wire = Wire(broker.port)

    @settings(max_examples=EXAMPLES_PER_VERSION, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=st.data())
    def one(data):
        request = data.draw(entity(request_class(api_key, version)), label="request")
        wire.correlation += 1
        frame = frame_with_unknown_tags(data, api_key, version, wire.correlation, "tags", request, everywhere=True)
        try:
            wire.sock.sendall(frame)
            if api_key == ApiKey.PRODUCE and int(request.acks) == 0:
                wire.ask(ApiKey.API_VERSIONS, 0, request_class(ApiKey.API_VERSIONS, 0)())   # no answer by design
                return
            (size,) = _SIZE.unpack(wire._read(4))
            correlation, response = decode_response(api_key, version, wire._read(size))
        except (ConnectionError, OSError) as exc:
            if kafka_refuses(api_key, request):      # closed as Kafka closes; still serving?
                wire.reconnect(broker.port)
                wire.ask(ApiKey.API_VERSIONS, 0, request_class(ApiKey.API_VERSIONS, 0)())
                return
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
