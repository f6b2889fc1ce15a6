"""DescribeGroups, ListGroups and DeleteGroups over a shard's groups, of every kind in the
registry (kgroup/group_types.py; ListGroups and DescribeGroups name their type, KIP-1043).

How this works: every group is found through the core's kind bindings (kinds.py), so a kind
added there is listed, described and deleted here with nothing to add but its deletion:
DeleteGroups hands an empty group to the deleter of its kind (`deleters`, one per kind, the
kind's handler set's `delete_group`), which writes the records that remove it.
"""

from __future__ import annotations

from typing import Any, Callable

from kgroup.core.classic_group import ClassicGroup
from kgroup.core.errors import ErrorCode
from kgroup.core.event_journal import EventJournal
from kgroup.core.kinds import find_group, live_groups
from kgroup.core.messages import (
    DeletedGroup,
    DescribedGroup,
    DescribedMember,
    ListedGroup,
    ListGroupsRequest,
)
from kgroup.core.result import ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.group_types import DEAD, EMPTY, GroupType

# A kind's deleter: the records that delete an empty group of the kind (and its progress).
Deleter = Callable[[Any, ResultBuilder, int], None]


class Admin:
    def __init__(self, shard: ShardState, deleters: dict[GroupType, Deleter]) -> None:
        self.shard = shard
        self.deleters = deleters

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int,
                 missing_as_error: bool = False) -> Result:
        """Describe classic groups; member metadata is shown only for a Stable group.

        A group that does not exist, or is not a classic group, is reported Dead
        (DescribeGroups v0-v5) or with GROUP_ID_NOT_FOUND (v6+, `missing_as_error`).
        """
        described = []
        for group_id in group_ids:
            group = find_group(self.shard, group_id)
            # A kind DescribeGroups does not describe (every modern kind: Kafka 4.4 answers
            # "Group ... is not a classic group" as for a group that does not exist) is Dead to
            # it; its own describe API describes it.
            if isinstance(group, ClassicGroup) and group.TYPE.in_describe_groups:
                described.append(self._describe(group))
            else:
                # (The empty group id too is described as any other, as Kafka does for old clients.)
                if not missing_as_error:
                    described.append(DescribedGroup(group_id, ErrorCode.NONE, DEAD, "", ""))
                    continue
                # v6+ says which of the two it is, in Kafka 4.4's words.
                why = "not found" if group is None else "is not a classic group"
                described.append(DescribedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND, DEAD, "", "",
                                                error_message=f"Group {group_id} {why}."))
        return Result((), ((reply, tuple(described)),))

    @staticmethod
    def _describe(group: ClassicGroup) -> DescribedGroup:
        stable = group.status()[0] == "Stable"
        # Metadata only when Stable; the assignment always — the last one a member got,
        # until a rebalance that fails the pending syncs resets it (Kafka's
        # describeNoMetadata keeps it too).
        members = tuple(
            DescribedMember(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(group.protocol) if stable else b"",
                m.assignment,
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group.group_id, ErrorCode.NONE, group.state.value, group.protocol_type,
            (group.protocol or "") if stable else "", members,
        )

    def list(self, req: ListGroupsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Groups of this shard, filtered by state and type (case-insensitive, KIP-518/848)."""
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        listed = []
        for group in live_groups(self.shard):
            state = group.status()[0]
            if states and state.lower() not in states:
                continue
            if types and group.TYPE.name not in types:
                continue
            listed.append(ListedGroup(group.group_id, group.TYPE.protocol_type or group.protocol_type, state,
                                      group.TYPE.name))
        listed.sort(key=lambda g: g.group_id)
        return Result((), ((reply, tuple(listed)),))

    def delete(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        """Delete Empty groups with their offsets; others get a per-group error."""
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        results = []
        for group_id in group_ids:
            out.changed(group_id, "DeleteGroups")
            group = find_group(self.shard, group_id)
            if group is None:
                # (The empty group id is deleted as any other, as Kafka does for old clients.)
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.status()[0] != EMPTY:
                error = ErrorCode.NON_EMPTY_GROUP
            else:
                self.deleters[group.TYPE](group, out, now_ms)
                error = ErrorCode.NONE
            results.append(DeletedGroup(group_id, error))
        out.reply(reply, tuple(results))
        return out.build()
