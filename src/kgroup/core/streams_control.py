"""The control API's operations on a streams group: inspect it, rebalance it now, expire a
member. As for the other modern kinds (group_control.ModernControl, which this extends): a
rebalance moves the group epoch on (the task assignor runs at the next heartbeat), an expiry
fences the member as its session timeout would; both persist and report group events like
the protocol's own moves."""

from __future__ import annotations

from kgroup.core.group_control import ModernControl
from kgroup.core.messages import GroupControlRequest, InspectedGroup, InspectedMember
from kgroup.core.result import ReplyTo, Result
from kgroup.core.streams_protocol import ASSIGNOR

STREAMS_PROTOCOL_TYPE = "streams"


def _by_subtopology(tasks) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Tasks as (subtopology, partitions), the shape the control API shows assignments in."""
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return tuple((s, tuple(sorted(ps))) for s, ps in sorted(out.items()))


class StreamsControl(ModernControl):
    """The modern kinds' control (group_control.ModernControl: a rebalance and an expiry go
    through the base's `bump_epoch` and `remove_members`), with a streams group's inspection:
    tasks by subtopology instead of partitions by topic."""

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
