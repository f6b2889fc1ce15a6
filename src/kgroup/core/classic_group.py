"""A classic consumer group: its members, generation, leader and rebalance state.

How this works: a group moves through Empty -> PreparingRebalance -> CompletingRebalance ->
Stable (and back to PreparingRebalance on any membership change), with Dead when it is
deleted. `TRANSITIONS` is the only place that says which moves are legal; `transition_to`
refuses any other and leaves the state unchanged.

The group is the coordinator's *runtime* view: who is waiting on a JoinGroup or SyncGroup
reply, who still has to rejoin, which members are pending (handed an id by
MEMBER_ID_REQUIRED but not yet joined). The durable part of it (generation, protocol, leader,
members and their assignments) is what `to_value()` returns and what the group-metadata log
holds; `from_value()` rebuilds a group from it after a restart. The handlers that drive a
group live in classic_protocol.py.

Members are kept in join order (dict insertion order). That order decides the leader
hand-over and the protocol vote tie-break, so both are deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum

from kgroup.core.errors import ErrorCode, GroupError, IllegalGroupTransition
from kgroup.core.messages import JoinGroupMember
from kgroup.core.records import ClassicGroupValue, ClassicMemberValue
from kgroup.core.result import ReplyTo
from kgroup.group_types import CLASSIC, GroupType


class ClassicGroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = ClassicGroupState
# state -> the states it may move to.
TRANSITIONS: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE, _S.DEAD}),
    _S.PREPARING_REBALANCE: frozenset({_S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE, _S.STABLE, _S.DEAD}),
    _S.STABLE: frozenset({_S.PREPARING_REBALANCE, _S.DEAD}),
    _S.DEAD: frozenset({_S.DEAD}),
}


@dataclass(frozen=True, slots=True)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    # The assignment the group events last reported for it (at the last Stable it was in;
    # a static member's new id takes its old one's): what `assignment_changed` compares.
    reported: bytes = b""

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.protocols)

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def vote(self, candidates: set[str]) -> str:
        """The member's preferred protocol among those every member supports."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalGroupTransition(f"member {self.member_id} supports none of {sorted(candidates)}")

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Same protocols with the same metadata, in the same order."""
        return self.protocols == protocols


class ClassicGroup:
    """Runtime state of one classic group. Mutated by classic_protocol.py only."""

    __slots__ = (
        "group_id", "state", "previous_state", "state_timestamp_ms", "generation",
        "protocol_type", "protocol", "leader", "members", "static_members", "pending_members",
        "awaiting_join", "awaiting_sync", "pending_sync", "new_member_added", "new_members",
        "_protocol_counts", "settled", "announced",
    )

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = ClassicGroupState.EMPTY
        self.previous_state = ClassicGroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation = 0
        self.protocol_type: str = ""
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}      # instance id -> member id
        self.pending_members: dict[str, None] = {}     # MEMBER_ID_REQUIRED, not yet joined
        self.awaiting_join: dict[str, ReplyTo] = {}    # member id -> parked JoinGroup reply
        self.awaiting_sync: dict[str, ReplyTo] = {}    # member id -> parked SyncGroup reply
        self.pending_sync: dict[str, None] = {}        # joined this generation, not yet synced
        self.new_member_added = False                  # extends the initial rebalance delay
        self.new_members: dict[str, None] = {}         # joined, never completed a join phase
        self._protocol_counts: dict[str, int] = {}
        # The generation it was last Stable at, kept from the change that took it out of
        # Stable (the group events' "settled"; -1: not Stable since it was made or loaded).
        self.settled = -1
        # Whether a change of it was ever named (or it was loaded): a group only offset
        # commits made, never told of, is not told of when it goes either.
        self.announced = False

    TYPE: GroupType = CLASSIC

    # ---- state ----------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """False once it is Dead (deleted, or turned into a group of another kind)."""
        return self.state is not ClassicGroupState.DEAD

    def status(self) -> tuple[str, int]:
        """(state, generation), as the group events and the views report them."""
        return self.state.value, self.generation

    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        if target not in TRANSITIONS[self.state]:
            raise IllegalGroupTransition(f"group {self.group_id}: {self.state.value} -> {target.value}")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return _S.PREPARING_REBALANCE in TRANSITIONS[self.state]

    # ---- membership -----------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader == member_id

    def is_pending(self, member_id: str) -> bool:
        return member_id in self.pending_members

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def add(self, member: ClassicGroupMember, reply: ReplyTo | None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        for name in member.protocol_names():
            self._protocol_counts[name] = self._protocol_counts.get(name, 0) + 1
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader is None:
            self.leader = member.member_id
        self.pending_members.pop(member.member_id, None)
        if reply is not None:
            self.awaiting_join[member.member_id] = reply

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        """Drop a member (or pending member) and hand leadership on if it led.

        Parked replies are the caller's to answer first; this only forgets them.
        """
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        self.awaiting_join.pop(member_id, None)
        self.awaiting_sync.pop(member_id, None)
        self.new_members.pop(member_id, None)
        member = self.members.pop(member_id, None)
        if member is not None:
            self._forget_protocols(member)
            if member.group_instance_id is not None and self.static_members.get(member.group_instance_id) == member_id:
                del self.static_members[member.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def update(self, member: ClassicGroupMember) -> None:
        """Replace a member's record (protocols or timeouts changed), keeping its place."""
        old = self.members[member.member_id]
        self._forget_protocols(old)
        for name in member.protocol_names():
            self._protocol_counts[name] = self._protocol_counts.get(name, 0) + 1
        self.members[member.member_id] = member

    def replace_static(self, old_member_id: str, new_member_id: str) -> ClassicGroupMember:
        """Give a static member's place to a new member id (a restarted instance).

        The new id goes to the end of the join order, as a new entry would in Kafka.
        """
        old = self.members.pop(old_member_id)
        new = replace(old, member_id=new_member_id)
        self.members[new_member_id] = new
        if self.leader == old_member_id:
            self.leader = new_member_id
        assert old.group_instance_id is not None
        self.static_members[old.group_instance_id] = new_member_id
        for tracked in (self.pending_sync, self.new_members):
            if old_member_id in tracked:
                del tracked[old_member_id]
                tracked[new_member_id] = None
        return new

    def _forget_protocols(self, member: ClassicGroupMember) -> None:
        for name in member.protocol_names():
            left = self._protocol_counts[name] - 1
            if left:
                self._protocol_counts[name] = left
            else:
                del self._protocol_counts[name]

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """Raise UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID unless this is a current member."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown group instance id {instance_id}")
            if existing != member_id:
                raise GroupError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"instance {instance_id} is owned by member {existing}, not {member_id}",
                )
        elif member_id not in self.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown member {member_id}")

    # ---- protocols ------------------------------------------------------------------------

    def candidate_protocols(self) -> set[str]:
        """Protocols that every current member supports."""
        n = len(self.members)
        return {name for name, count in self._protocol_counts.items() if count == n}

    def supports_protocols(self, protocol_type: str, names: tuple[str, ...]) -> bool:
        if not self.members:
            return bool(protocol_type) and bool(names)
        if protocol_type != self.protocol_type:
            return False
        n = len(self.members)
        return any(self._protocol_counts.get(name, 0) == n for name in names)

    def select_protocol(self) -> str:
        """The protocol with the most first-choice votes among those all members support.

        Ties go to the protocol that received its first vote earliest in join order (Kafka
        leaves ties to hash order; we want the same answer every run).
        """
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    # ---- rebalance bookkeeping -------------------------------------------------------------

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def all_joined(self) -> bool:
        return len(self.awaiting_join) == len(self.members) and not self.pending_members

    def not_yet_rejoined(self) -> list[ClassicGroupMember]:
        return [m for mid, m in self.members.items() if mid not in self.awaiting_join]

    def join_members(self) -> tuple[JoinGroupMember, ...]:
        """What the leader's JoinGroup response lists: every member's chosen-protocol metadata."""
        protocol = self.protocol
        return tuple(
            JoinGroupMember(m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in self.members.values()
        )

    # ---- durable view ---------------------------------------------------------------------

    def to_value(self, now_ms: int, assignments: dict[str, bytes] | None = None) -> ClassicGroupValue:
        """The group as persisted: members with chosen-protocol metadata and assignments."""
        protocol = self.protocol
        members = tuple(
            ClassicMemberValue(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms,
                subscription=m.metadata(protocol),
                assignment=(assignments[m.member_id] if assignments is not None else m.assignment),
            )
            for m in self.members.values()
        )
        return ClassicGroupValue(
            protocol_type=self.protocol_type,
            generation=self.generation,
            protocol=protocol,
            leader=self.leader,
            current_state_timestamp_ms=now_ms,
            members=members,
        )

    @classmethod
    def from_value(cls, group_id: str, value: ClassicGroupValue) -> "ClassicGroup":
        """Rebuild a loaded group: Stable with its members, or Empty when it has none."""
        group = cls(group_id, value.current_state_timestamp_ms)
        group.announced = True
        group.generation = value.generation
        group.protocol_type = value.protocol_type
        group.protocol = value.protocol
        for mv in value.members:
            group.add(
                ClassicGroupMember(
                    member_id=mv.member_id,
                    group_instance_id=mv.group_instance_id,
                    client_id=mv.client_id,
                    client_host=mv.client_host,
                    session_timeout_ms=mv.session_timeout_ms,
                    rebalance_timeout_ms=mv.rebalance_timeout_ms,
                    protocol_type=value.protocol_type,
                    protocols=((value.protocol or "", mv.subscription),),
                    assignment=mv.assignment,
                    reported=mv.assignment,
                ),
                None,
            )
        group.leader = value.leader if value.leader in group.members else next(iter(group.members), None)
        if group.members:
            group.state = _S.STABLE
            group.previous_state = _S.COMPLETING_REBALANCE
        return group
