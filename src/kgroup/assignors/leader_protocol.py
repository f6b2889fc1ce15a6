"""The ``kgroup-leader`` protocol type (``kgroup.client.LeaderElection``): its bytes and its
assignor, which elects one member per generation.

A member of any language joins such a group with JoinGroup protocol type ``kgroup-leader``
and one protocol, ``v1``. Kafka's primitive types, big-endian, not flexible:

    Candidate (JoinGroup member metadata)
      int16   version            1
      bytes   info               int32 length + bytes (-1: null): what the member tells the
                                 others about itself should it lead (an address, say)

    Election (SyncGroup member assignment; every member gets the same)
      int16   version            1
      string  leader             member id of the elected member (int16 length + UTF-8)
      string  leader instance    its group.instance.id (int16 length + UTF-8, -1: null)
      bytes   info               the elected member's info

A member leads when the election names its member id, or its instance id: a static member
that restarts takes its old member's place (and assignment) under a new member id.

The group's leader (the member the coordinator asks to assign) elects itself: it is the
one member the coordinator has just heard from in this generation. Every member leads from
the moment its SyncGroup answer names it until the group rebalances again, so at most one
member leads per generation; members give up leading when a rebalance starts (they are
eager), and that is what keeps it at most one at any time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kgroup.assignors.protocol_bytes import (
    I16,
    ProtocolBytesError,
    Reader,
    write_bytes,
    write_string,
)

PROTOCOL_TYPE = "kgroup-leader"
PROTOCOL_NAME = "v1"
VERSION = 1


class LeaderProtocolError(ProtocolBytesError):
    """The bytes are not a valid kgroup-leader candidate or election."""


@dataclass(frozen=True, slots=True)
class Election:
    """Who leads this generation, and what it said about itself."""

    leader: str
    info: bytes | None = None
    instance: str | None = None

    def names(self, member_id: str, instance_id: str | None) -> bool:
        """Whether the member with these ids is the one elected."""
        return self.leader == member_id or (self.instance is not None
                                            and self.instance == instance_id)


def encode_candidate(info: bytes | None) -> bytes:
    out = [I16.pack(VERSION)]
    write_bytes(info, out)
    return b"".join(out)


def decode_candidate(data: bytes) -> bytes | None:
    r = Reader(data, "leader candidate", LeaderProtocolError)
    if r.int16("version") < 1:
        raise LeaderProtocolError("leader candidate: unsupported version")
    return r.nullable_bytes("info")


def encode_election(election: Election) -> bytes:
    out = [I16.pack(VERSION)]
    write_string(election.leader, out, error=LeaderProtocolError)
    write_string(election.instance, out, nullable=True, error=LeaderProtocolError)
    write_bytes(election.info, out)
    return b"".join(out)


def decode_election(data: bytes) -> Election | None:
    """The election in assignment bytes; None for empty bytes (nobody elected)."""
    if len(data) == 0:
        return None
    r = Reader(data, "leader election", LeaderProtocolError)
    if r.int16("version") < 1:
        raise LeaderProtocolError("leader election: unsupported version")
    leader = r.string("leader")
    instance = r.string("leader instance", nullable=True)
    return Election(leader, r.nullable_bytes("info"), instance)  # type: ignore[arg-type]


def elect(assigner: str, members: Iterable[tuple[str, str | None, bytes]]) -> dict[str, bytes]:
    """The assignment of every member: ``assigner`` (the group leader running this) leads.

    ``members`` are (member id, instance id, candidate bytes); a member whose bytes do not
    decode is still told who leads.
    """
    rows = sorted(members)
    info, instance = None, None
    for mid, iid, metadata in rows:
        if mid == assigner:
            instance = iid
            try:
                info = decode_candidate(metadata)
            except LeaderProtocolError:
                info = None
    election = encode_election(Election(assigner, info, instance))
    return {mid: election for mid, _, _ in rows}
