"""The kgroup-leader protocol: its bytes and the election every member is told about."""

from __future__ import annotations

import pytest

from kgroup.assignors.leader_protocol import (
    Election,
    LeaderProtocolError,
    decode_candidate,
    decode_election,
    elect,
    encode_candidate,
    encode_election,
)


def test_the_assigning_leader_elects_itself_and_everyone_hears_the_same():
    members = [("b", None, encode_candidate(b"http://b")), ("a", None, encode_candidate(None)),
               ("c", "static-c", encode_candidate(b"http://c"))]
    got = elect("c", members)
    assert sorted(got) == ["a", "b", "c"] and len(set(got.values())) == 1
    assert decode_election(got["a"]) == Election("c", b"http://c", "static-c")


def test_a_static_member_restarted_under_a_new_member_id_still_leads():
    election = decode_election(elect("c-1", [("c-1", "static-c", encode_candidate(None))])["c-1"])
    assert election.names("c-2", "static-c") and election.names("c-1", None)
    assert not election.names("d", None) and not election.names("d", "static-d")
    dynamic = decode_election(elect("a", [("a", None, encode_candidate(None))])["a"])
    assert not dynamic.names("b", None)


def test_a_member_with_garbage_metadata_is_still_told_who_leads():
    got = elect("a", [("a", None, encode_candidate(b"x")), ("z", None, b"\xff")])
    assert decode_election(got["z"]) == Election("a", b"x")


def test_bytes_are_the_documented_layout_and_garbage_is_refused():
    # int16 version | int32 length + bytes (-1: null)
    assert encode_candidate(b"hi") == b"\x00\x01\x00\x00\x00\x02hi"
    assert encode_candidate(None) == b"\x00\x01\xff\xff\xff\xff"
    # int16 version | string member id | nullable string instance id | bytes info
    assert encode_election(Election("m", b"")) == b"\x00\x01\x00\x01m\xff\xff\x00\x00\x00\x00"
    assert encode_election(Election("m", None, "i")) == b"\x00\x01\x00\x01m\x00\x01i\xff\xff\xff\xff"
    assert decode_candidate(encode_candidate(b"hi")) == b"hi"
    assert decode_election(b"") is None
    for bad in (b"", b"\x00\x00", b"\x00\x01\x00\x00\x00\x05hi"):
        with pytest.raises(LeaderProtocolError):
            decode_candidate(bad)
    with pytest.raises(LeaderProtocolError):
        decode_election(b"\x00\x01\x00\x09m")
