"""The control API's operations on a streams group: inspect it, rebalance it now, expire a
member. As for consumer groups (group_control.py): a rebalance moves the group epoch on (the
task assignor runs at the next heartbeat), an expiry fences the member as its session timeout
would; both persist and report group events like the protocol's own moves."""

from __future__ import annotations

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest, InspectedGroup, InspectedMember
from kgroup.core.result import Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.streams_group import StreamsGroup
from kgroup.core.streams_protocol import ASSIGNOR, StreamsProtocol

STREAMS_PROTOCOL_TYPE = "streams"


def _by_subtopology(tasks) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Tasks as (subtopology, partitions), the shape the control API shows assignments in."""
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return tuple((s, tuple(sorted(ps))) for s, ps in sorted(out.items()))


class StreamsControl:
    def __init__(self, shard: ShardState, streams: StreamsProtocol) -> None:
        self.groups = shard.streams_groups
        self.streams = streams

    def _group(self, group_id: str) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id} does not exist")
        return group

    def inspect(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        members = tuple(
            InspectedMember(m.member_id, m.meta.instance_id, m.meta.client_id, m.meta.client_host, m.epoch,
                            _by_subtopology(m.current.assigned().active),
                            _by_subtopology(m.current.pending().active), "streams")
            for m in group.members.values())
        view = InspectedGroup(group.group_id, "streams", group.state().value, STREAMS_PROTOCOL_TYPE, None, ASSIGNOR,
                              None, group.epoch, group.target_epoch, members)
        return Result((), ((reply, view),))

    def rebalance(self, req: GroupControlRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        if not group.members:
            raise GroupError(ErrorCode.INVALID_REQUEST, f"group {group.group_id} has no members to rebalance")
        out = ResultBuilder()
        out.changed(group.group_id, "rebalance requested")
        self.streams.bump_epoch(group, out)
        out.reply(reply, group.group_id)
        return out.build()

    def expire(self, req: ExpireMemberRequest, reply: ReplyTo, now_ms: int) -> Result:
        group = self._group(req.group_id)
        member = group.members.get(req.member) or group.static_member(req.member)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"no member or instance {req.member} in group {req.group_id}")
        out = ResultBuilder()
        out.changed(group.group_id, "expired on request", Departure.EXPIRED)
        self.streams.fence(group, [member.member_id], out)
        out.reply(reply, member.member_id)
        return out.build()
