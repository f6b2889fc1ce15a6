"""Records of the group-metadata log (our `__consumer_offsets`).

Every durable change to groups or offsets is one of these. A record is a key and a value; a
value of None is a tombstone that deletes the key. `replay` (coordinator.py) applies them,
both live and when a coordinator loads a log after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    # Set only by OffsetCommit v1 clients that asked for a retention; None uses the
    # broker's retention rule (KIP-211).
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: OffsetCommitValue | None


@dataclass(frozen=True, slots=True)
class ClassicMemberValue:
    """One member as persisted in classic group metadata."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    # The metadata of the group's chosen protocol for this member, and its assignment.
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class ClassicGroupValue:
    """A classic group at the end of a rebalance (or empty), as persisted."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp_ms: int
    members: tuple[ClassicMemberValue, ...]


@dataclass(frozen=True, slots=True)
class ClassicGroupRecord:
    group_id: str
    value: ClassicGroupValue | None


Record = OffsetCommitRecord | ClassicGroupRecord
