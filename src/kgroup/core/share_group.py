"""A share group (KIP-932): members that consume the same partitions together.

How this works: the coordinator owns the assignment, as for consumer groups. The group
epoch moves whenever what the group asks for changes (a member joins, leaves or changes its
subscription, a subscribed topic changes); when it is ahead of the target assignment's
epoch, the share assignor (assignors/share_simple.py) computes a new target and stamps it
with the group epoch. There is no reconciliation: a partition may be assigned to several
members at once (records, not partitions, are what members hold, one at a time, in the
share partitions), so a member simply takes its target, and the target epoch, on its next
heartbeat. A share group is Empty without members and Stable with them.

The whole aggregate is durable: only `apply_share_record` (replay) changes it; the handlers
in share_protocol.py compute records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from kgroup.core.records import (
    Partitions,
    ShareCurrentRecord,
    ShareCurrentValue,
    ShareGroupEpochRecord,
    ShareMemberRecord,
    ShareMemberValue,
    ShareTargetEpochRecord,
    ShareTargetRecord,
)

NEW_SHARE_MEMBER = ShareCurrentValue(0, 0, ())


class ShareGroupState(Enum):
    """As ShareGroupDescribe, ListGroups and DescribeGroups report it."""

    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass(slots=True)
class ShareGroupMember:
    member_id: str
    meta: ShareMemberValue
    current: ShareCurrentValue = NEW_SHARE_MEMBER

    @property
    def epoch(self) -> int:
        return self.current.member_epoch


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    epoch: int = 0
    target_epoch: int = 0
    # ((topic name, topic id, partitions), ...) the group subscribed to at `epoch`
    subscribed: tuple[tuple[str, str, int], ...] = ()
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    # Moves with every record replayed into the group (what the group events look at).
    version: int = field(default=0, compare=False)

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY


def apply_share_record(groups: dict[str, ShareGroup], record) -> bool:
    """Replay one share-group record into `groups`; True if it created the group."""
    kind = type(record)
    if kind is ShareGroupEpochRecord and record.epoch is None:
        groups.pop(record.group_id, None)
        return False
    group = groups.get(record.group_id)
    created = group is None
    if created:
        group = groups[record.group_id] = ShareGroup(record.group_id)
    group.version += 1
    if kind is ShareGroupEpochRecord:
        group.epoch = record.epoch
        group.subscribed = record.subscribed
    elif kind is ShareMemberRecord:
        if record.value is None:
            group.members.pop(record.member_id, None)
        elif record.member_id in group.members:
            group.members[record.member_id].meta = record.value
        else:
            group.members[record.member_id] = ShareGroupMember(record.member_id, record.value)
    elif kind is ShareTargetRecord:
        if record.partitions is None:
            group.target.pop(record.member_id, None)
        else:
            group.target[record.member_id] = record.partitions
    elif kind is ShareTargetEpochRecord:
        if record.epoch is not None:
            group.target_epoch = record.epoch
    elif kind is ShareCurrentRecord:
        member = group.members.get(record.member_id)
        if member is not None and record.value is not None:
            member.current = record.value
    else:
        raise TypeError(f"not a share-group record: {record!r}")
    return created
