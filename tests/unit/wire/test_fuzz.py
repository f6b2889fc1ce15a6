"""Hostile bytes: decode_request only ever raises our own exception types."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wire_samples import minimal, sample

from kgroup.wire.codec import decode_request, encode_request, request_class
from kgroup.wire.errors import FramingError, MalformedRequest, UnsupportedVersion
from kgroup.wire.framing import FrameSplitter
from kgroup.wire.versions import all_versions

OURS = (MalformedRequest, UnsupportedVersion, FramingError)

VALID_FRAMES = [
    encode_request(k, v, 17, "fuzz", make(request_class(k, v)))[4:]
    for k, v in all_versions()
    for make in (sample, minimal)
]


def _decode(frame: bytes) -> None:
    try:
        decode_request(frame)
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
            decode_request(frame)
        except MalformedRequest:
            continue
        raise AssertionError("decoded garbage")
