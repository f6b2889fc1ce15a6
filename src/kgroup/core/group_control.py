"""The control API's group operations: inspect a group, rebalance it now, expire a member.

How this works: each operation is a handler like the group APIs' — it takes a request, a
reply token and `now_ms`, returns a `Result`, and raises GroupError before changing
anything — routed by the kind of the group in coordinator.py. "Rebalance now" and "expire
a member" are the coordinator's own moves, reached through the protocols' public methods,
so they persist, replay and report group events exactly as a joining member or a session
timeout would:

- classic rebalance: a Stable or CompletingRebalance group prepares a new rebalance, as a
  new member's join would; members learn it from their next heartbeat
  (REBALANCE_IN_PROGRESS) and rejoin;
- rebalance of a modern group (consumer, share): the group epoch moves on; the assignor runs
  at the next heartbeat and every member moves to the new epoch;
- expire: the member is removed as its session timer would remove it (parked requests of a
  classic member are answered with UNKNOWN_MEMBER_ID; a modern group's member is fenced and
  the group epoch moves on), whatever it was doing.

A group that does not exist (or is Dead) is GROUP_ID_NOT_FOUND; a member that is not in
the group is UNKNOWN_MEMBER_ID; a group without members has nothing to rebalance
(INVALID_REQUEST, with the reason).
"""

from __future__ import annotations

from typing import Callable

from kgroup.assignors import ConsumerProtocolError, decode_assignment
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.classic_protocol import ClassicProtocol
from kgroup.core.modern_group import ModernGroup
from kgroup.core.modern_protocol import ModernProtocol
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.messages import (
    ExpireMemberRequest,
    GroupControlRequest,
    InspectedGroup,
    InspectedMember,
)
from kgroup.core.result import Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.group_types import CLASSIC

S = ClassicGroupState
CONSUMER_PROTOCOL_TYPE = "consumer"
REBALANCE = "rebalance requested"
EXPIRE = "expired on request"


def _not_found(group_id: str) -> GroupError:
    return GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")


def missing_group(req: GroupControlRequest | ExpireMemberRequest, reply: ReplyTo, now_ms: int) -> Result:
    """Every control operation on a group id that names no group."""
    raise _not_found(req.group_id)


class ClassicControl:
    def __init__(self, shard: ShardState, classic: ClassicProtocol) -> None:
        self.groups = shard.groups
        self.classic = classic

    def _group(self, group_id: str) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None or group.is_in(S.DEAD):
            raise _not_found(group_id)
        return group

    def inspect(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        # Assignments are the leader's bytes of the current generation: only shown once the
        # group is Stable (before, they belong to a generation that is being replaced).
        stable = group.is_in(S.STABLE)
        members = tuple(
            InspectedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, None,
                            _partitions(group.protocol_type, m.assignment) if stable else None)
            for m in group.members.values())
        view = InspectedGroup(group.group_id, CLASSIC.name, group.state.value, group.protocol_type, group.protocol,
                              None, group.generation, None, None, members)
        return Result((), ((reply, view),))

    def rebalance(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        return _rebalance(EventJournal(self.classic.shard, now_ms), group.group_id, bool(group.members), reply,
                          lambda out: self.classic.rebalance_now(group, out, now_ms))

    def expire(self, req: ExpireMemberRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        member_id = req.member if (group.has_member(req.member) or group.is_pending(req.member)) \
            else group.static_member_id(req.member)
        if member_id is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"no member or instance {req.member} in group {req.group_id}")
        out = ResultBuilder(EventJournal(self.classic.shard, now_ms))
        out.changed(group.group_id, EXPIRE, Departure.EXPIRED)
        self.classic.expire_member(group, member_id, out, now_ms)
        out.reply(reply, member_id)
        return out.build()


class ModernControl:
    """The control operations on a modern group (consumer, share, streams: streams_control.py),
    through its kind's handler set."""

    def __init__(self, shard: ShardState, protocol: ModernProtocol) -> None:
        self.shard = shard
        self.groups = protocol.groups
        self.protocol = protocol

    def _group(self, group_id: str) -> ModernGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise _not_found(group_id)
        return group

    def inspect(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        names = {topic_id: name for name, (topic_id, _) in self.shard.topics.items()}
        kind = group.TYPE

        def named(partitions) -> tuple[tuple[str, tuple[int, ...]], ...]:
            return tuple(sorted((names.get(t, t), tuple(ps)) for t, ps in partitions))

        members = tuple(
            InspectedMember(m.member_id, getattr(m.meta, "instance_id", None), m.meta.client_id,
                            m.meta.client_host, m.epoch, named(m.current.assigned),
                            named(getattr(m.current, "pending_revocation", ())),
                            # How the member speaks: a migrated consumer group has classic members.
                            CLASSIC.name if getattr(m.meta, "is_classic", False) else kind.name)
            for m in group.members.values())
        view = InspectedGroup(group.group_id, kind.name, group.status()[0], kind.protocol_type, None,
                              group.assignor_name(self.shard.config), None, group.epoch, group.target_epoch, members)
        return Result((), ((reply, view),))

    def rebalance(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        return _rebalance(EventJournal(self.shard, now_ms), group.group_id, bool(group.members), reply,
                          lambda out: self.protocol.bump_epoch(group, out))

    def expire(self, req: ExpireMemberRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        member = group.members.get(req.member) or group.static_member(req.member)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"no member or instance {req.member} in group {req.group_id}")
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        out.changed(group.group_id, EXPIRE, Departure.EXPIRED)
        self.protocol.remove_members(group, [member.member_id], out, now_ms)
        out.reply(reply, member.member_id)
        return out.build()


def _rebalance(journal: EventJournal, group_id: str, has_members: bool, reply: ReplyTo,
               start: Callable[[ResultBuilder], None]) -> Result:
    """A rebalance of either kind: refused without members, else `start` it; the reply is
    the group id."""
    if not has_members:
        raise GroupError(ErrorCode.INVALID_REQUEST, f"group {group_id} has no members to rebalance")
    out = ResultBuilder(journal)
    out.changed(group_id, REBALANCE)
    start(out)
    out.reply(reply, group_id)
    return out.build()


def _partitions(protocol_type: str, assignment: bytes) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """A classic consumer's assignment bytes as (topic, partitions); None for other bytes."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not assignment:
        return ()
    try:
        decoded = decode_assignment(assignment)
    except ConsumerProtocolError:
        return None
    return tuple(sorted((t, tuple(sorted(ps))) for t, ps in decoded.partitions))
