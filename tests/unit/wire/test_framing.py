"""Framing: a byte stream split at any boundary yields the same frames; bad sizes close."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.wire.errors import FramingError, FrameTooLarge
from kgroup.wire.framing import DEFAULT_MAX_FRAME_SIZE, FrameSplitter, encode_frame


def test_encode_frame_prefixes_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"


def test_default_limit_is_100_mib() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104_857_600


def test_one_feed_with_several_frames_and_a_partial_tail() -> None:
    s = FrameSplitter()
    data = encode_frame(b"one") + encode_frame(b"") + encode_frame(b"three") + b"\x00\x00"
    assert s.feed(data) == [b"one", b"", b"three"]
    assert s.buffered == 2
    assert s.feed(b"\x00\x01x") == [b"x"]
    assert s.buffered == 0


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=20),
)
def test_any_chunking_yields_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    s = FrameSplitter()
    out: list[bytes] = []
    for a, b in zip(points, points[1:]):
        out.extend(s.feed(stream[a:b]))
    assert out == payloads
    assert s.buffered == 0


def test_byte_by_byte() -> None:
    stream = encode_frame(b"hello") + encode_frame(b"world")
    s = FrameSplitter()
    out = [f for i in range(len(stream)) for f in s.feed(stream[i : i + 1])]
    assert out == [b"hello", b"world"]


def test_oversize_is_rejected_as_soon_as_the_size_arrives() -> None:
    s = FrameSplitter(max_frame_size=10)
    assert s.feed(encode_frame(b"x" * 10)) == [b"x" * 10]
    with pytest.raises(FrameTooLarge) as info:
        s.feed(struct.pack(">i", 11))
    assert info.value.size == 11 and info.value.limit == 10
    assert isinstance(info.value, FramingError)
    # The splitter stays broken: the connection must be closed.
    with pytest.raises(FrameTooLarge):
        s.feed(b"")


def test_default_limit_rejects_just_past_100_mib() -> None:
    s = FrameSplitter()
    assert s.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE)) == []
    with pytest.raises(FrameTooLarge):
        FrameSplitter().feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE + 1))


def test_negative_size_is_a_framing_error() -> None:
    with pytest.raises(FramingError):
        FrameSplitter().feed(b"\xff\xff\xff\xfe")


def test_accepts_bytearray_and_memoryview() -> None:
    s = FrameSplitter()
    assert s.feed(bytearray(b"\x00\x00\x00\x01")) == []
    assert s.feed(memoryview(b"z")) == [b"z"]
