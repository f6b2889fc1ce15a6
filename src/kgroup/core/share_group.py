"""A share group (KIP-932): members that consume the same partitions together.

How this works: the coordinator owns the assignment, as for consumer groups. The group
epoch moves whenever what the group asks for changes (a member joins, leaves or changes its
subscription, a subscribed topic changes); when it is ahead of the target assignment's
epoch, the share assignor (assignors/share_simple.py) computes a new target and stamps it
with the group epoch. There is no reconciliation: a partition may be assigned to several
members at once (records, not partitions, are what members hold, one at a time, in the
share partitions), so a member simply takes its target, and the target epoch, on its next
heartbeat. A share group is Empty without members and Stable with them.

A subscribed topic's partitions are assignable once the group has initialized their share
state; the topics initialized stay so (`initialized`, ShareInitRecords) while no member
subscribes to them, until their state is deleted (DeleteShareGroupOffsets, the topic's
deletion), as Kafka 4.4 keeps its initialized topics.

The whole aggregate is durable: only `ShareGroup.apply` (replay) changes it; the handlers
in share_protocol.py compute records. What share groups share with the other modern kinds
(epochs, members, the target assignment, replay) is modern_group.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from kgroup.assignors.share_simple import SimpleShareAssignor
from kgroup.core.config import GroupConfig
from kgroup.core.records import (
    InitializedTopic,
    Partitions,
    ShareCurrentRecord,
    ShareCurrentValue,
    ShareGroupEpochRecord,
    ShareInitRecord,
    ShareMemberRecord,
    ShareMemberValue,
    ShareTargetEpochRecord,
    ShareTargetRecord,
)
from kgroup.core.modern_group import ModernGroup, ModernMember, ModernRecords, Phase, register_records, replaced
from kgroup.group_types import SHARE, GroupType

NEW_SHARE_MEMBER = ShareCurrentValue(0, 0, ())
# The share assignor's name, as ShareGroupDescribe gives it.
SHARE_ASSIGNOR = SimpleShareAssignor.name


class ShareGroupState(Enum):
    """As ShareGroupDescribe, ListGroups and DescribeGroups report it."""

    EMPTY = "Empty"
    STABLE = "Stable"


@dataclass(slots=True)
class ShareGroupMember(ModernMember):
    meta: ShareMemberValue
    current: ShareCurrentValue = NEW_SHARE_MEMBER


@register_records
@dataclass(slots=True)
class ShareGroup(ModernGroup):
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, Partitions] = field(default_factory=dict)
    # topic id -> the topic's partitions whose share state the group has initialized.
    # Replaced whole on a change.
    initialized: dict[str, InitializedTopic] = field(default_factory=dict)

    RECORDS: ClassVar[ModernRecords] = ModernRecords(
        ShareGroupEpochRecord, ShareMemberRecord, ShareTargetRecord, ShareTargetEpochRecord, ShareCurrentRecord)
    MORE_RECORDS: ClassVar[tuple[type, ...]] = (ShareInitRecord,)
    TYPE: ClassVar[GroupType] = SHARE
    MEMBER: ClassVar[type] = ShareGroupMember
    NEW_CURRENT: ClassVar[ShareCurrentValue] = NEW_SHARE_MEMBER

    def state(self) -> ShareGroupState:
        return ShareGroupState.STABLE if self.members else ShareGroupState.EMPTY

    def assignor_name(self, config: GroupConfig) -> str:
        """The share assignor (there is one, `simple`)."""
        return SHARE_ASSIGNOR

    def apply_more(self, record: ShareInitRecord) -> None:
        self.initialized = replaced(self.initialized, record.topic_id, record.value)

    def snapshot(self) -> list:
        out = ModernGroup.snapshot(self)
        out[1:1] = [ShareInitRecord(self.group_id, t, v) for t, v in sorted(self.initialized.items())]
        return out

    @classmethod
    def state_of(cls, phase: Phase) -> ShareGroupState:
        # No reconciliation: a share group is Stable as soon as it has members.
        return ShareGroupState.EMPTY if phase is Phase.EMPTY else ShareGroupState.STABLE
