"""Hostile bytes: decode_request only ever raises our own exception types."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_samples import minimal, sample

from kgroup.wire.codec import decode_request, encode_request, request_class
from kgroup.wire.errors import FramingError, MalformedRequest, UnsupportedVersion
from kgroup.wire.framing import FrameSplitter
from kgroup.broker.concerns import SERVED
from kgroup.wire.versions import all_versions

OURS = (MalformedRequest, UnsupportedVersion, FramingError)

VALID_FRAMES = [
    encode_request(k, v, 17, "fuzz", make(request_class(k, v)))[4:]
    for k, v in all_versions(SERVED.values())
    for make in (sample, minimal)
]


def _decode(frame: bytes) -> None:
    try:
        decode_request(frame, SERVED)
    except OURS:
        pass


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes(frame: bytes) -> None:
    _decode(frame)


@settings(max_examples=600, deadline=None)
@given(
    head=st.sampled_from(sorted({f[:4] for f in VALID_FRAMES})),
    rest=st.binary(max_size=200),
)
def test_random_body_behind_a_valid_key_and_version(head: bytes, rest: bytes) -> None:
    _decode(head + b"\x00\x00\x00\x11" + rest)


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_mutations_of_valid_frames(data) -> None:
    frame = bytearray(data.draw(st.sampled_from(VALID_FRAMES)))
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        if not frame:
            break
        i = data.draw(st.integers(0, len(frame) - 1))
        if op == "flip":
            frame[i] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set":
            frame[i] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif op == "insert":
            frame[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del frame[i]
        else:
            del frame[i:]
    _decode(bytes(frame))


@settings(max_examples=300, deadline=None)
@given(stream=st.binary(max_size=300))
def test_framing_then_decode(stream: bytes) -> None:
    s = FrameSplitter(max_frame_size=1 << 16)
    try:
        for frame in s.feed(stream):
            _decode(frame)
    except FramingError:
        pass


def test_huge_declared_lengths_do_not_allocate() -> None:
    # A JoinGroup v0 whose protocols array claims 2**31-1 entries, a string claiming 32767
    # bytes, and a flexible compact array claiming 2**32 entries.
    import struct

    header = struct.pack(">hhih", 11, 0, 1, -1)
    body = struct.pack(">h", 1) + b"g" + struct.pack(">i", 6000) + struct.pack(">h", 0)
    body += struct.pack(">h", 1) + b"c" + struct.pack(">i", 2**31 - 1)
    for frame in (header + body, header + struct.pack(">h", 32767) + b"g",
                  struct.pack(">hhih", 12, 4, 1, -1) + b"\x00" + b"\xff\xff\xff\xff\x0f"):
        try:
            decode_request(frame, SERVED)
        except MalformedRequest:
            continue
        raise AssertionError("decoded garbage")


# ---- the SASL path: any sequence of requests into one connection's SASL session ----------

from kgroup.wire.sasl import AuthState, Gate, SaslSession  # noqa: E402
from kgroup.wire.scram import ScramClient, ScramMechanism, make_credential  # noqa: E402


class _Creds:
    cred = make_credential(ScramMechanism.SCRAM_SHA_256, "pw", b"salt", 4096)

    def scram(self, mechanism, username):
        return self.cred if (mechanism, username) == (ScramMechanism.SCRAM_SHA_256, "u") else None

    def check_plain(self, username, password):
        return (username, password) == ("u", "pw")


def _good_scram_tokens() -> list[bytes]:
    c = ScramClient("sha256", "u", "pw", "abc")
    return [c.first(), b"n,,n=u,r=abc", b"c=biws,r=abc0,p=AAAA"]


_steps = st.lists(st.one_of(
    st.tuples(st.just("request"), st.sampled_from([0, 1, 3, 8, 11, 12, 18, 29, 51])),
    st.tuples(st.just("handshake"), st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", ""])),
    st.tuples(st.just("authenticate"), st.one_of(st.binary(max_size=120), st.sampled_from(
        [b"\0u\0pw", b"u\0u\0pw", b"\0u\0nope", *_good_scram_tokens()]))),
    st.tuples(st.just("wait"), st.integers(0, 5000)),
), max_size=14)


@settings(max_examples=600, deadline=None)
@given(steps=_steps)
def test_any_sequence_of_sasl_requests_keeps_the_session_consistent(steps) -> None:
    session = SaslSession(("PLAIN", "SCRAM-SHA-256"), _Creds(), nonce=lambda: "srv", secret=b"k", reauth_ms=2000)
    now = 0
    closed = False
    for kind, value in steps:
        if kind == "wait":
            now += value
            continue
        api = {"request": value, "handshake": 17, "authenticate": 36}[kind]
        gate = session.gate(api, now)
        if closed:
            # A connection the broker closed never gets anything through again.
            assert gate in (Gate.CLOSE, Gate.REFUSE)
            continue
        if gate is Gate.SASL:
            answer = (session.handshake(value) if api == 17 else session.authenticate(value, now))
            closed = answer.close
        elif gate in (Gate.CLOSE, Gate.REFUSE):
            closed = True
        elif gate is Gate.SERVE:
            # Only ApiVersions passes before authentication; anything passes after it.
            assert api == 18 or session.authenticated
        if session.state is AuthState.FAILED:
            assert closed
        if session.principal is not None:
            assert session.principal == "User:u"


def test_a_declared_array_count_of_two_to_the_35_is_refused_not_allocated() -> None:
    # Found by mutating frames outside hypothesis: Fetch v12 whose forgotten_topics_data
    # compact array declares ~2**35 entries in 51 bytes. kio's native reader reserved room
    # for them first and the Rust allocator aborted the whole process (no exception to
    # catch); the broker died for every client. Now refused as Kafka refuses it.
    frame = bytes.fromhex("0001000c007f0011000466757a7a00ffffffff000005dc000000057ffffff7"
                          "0000000000ffffffff01d580db965a14a8010100")
    with pytest.raises(MalformedRequest):
        decode_request(frame, SERVED)
