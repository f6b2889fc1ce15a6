"""DescribeGroups, ListGroups and DeleteGroups over a shard's groups (classic, consumer,
share and streams groups: ListGroups and DescribeGroups name their type, KIP-1043)."""

from __future__ import annotations

from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.errors import ErrorCode
from kgroup.core.messages import (
    DeletedGroup,
    DescribedGroup,
    DescribedMember,
    ListedGroup,
    ListGroupsRequest,
)
from kgroup.core.records import (
    ClassicGroupRecord,
    ConsumerGroupEpochRecord,
    ConsumerTargetEpochRecord,
    OffsetCommitRecord,
)
from kgroup.core.result import ReplyTo, Result, ResultBuilder
from kgroup.core.share_protocol import ShareProtocol
from kgroup.core.state import ShardState
from kgroup.core.streams_records import StreamsGroupEpochRecord, StreamsTargetEpochRecord, StreamsTopologyRecord

S = ClassicGroupState
CLASSIC = "classic"
CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"


class Admin:
    def __init__(self, shard: ShardState, share: ShareProtocol) -> None:
        self.shard = shard
        self.share = share

    def describe(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int,
                 missing_as_error: bool = False) -> Result:
        """Describe groups; metadata and assignments are shown only for a Stable group.

        A group that does not exist is reported Dead (DescribeGroups v0-v5) or with
        GROUP_ID_NOT_FOUND (v6+, `missing_as_error`).
        """
        described = []
        for group_id in group_ids:
            consumer = self.shard.consumer_groups.get(group_id)
            if consumer is not None:
                # The classic API sees a consumer group's members without protocol bytes.
                described.append(DescribedGroup(
                    group_id, ErrorCode.NONE, consumer.state().value, CONSUMER, "",
                    tuple(DescribedMember(m.member_id, m.meta.instance_id, m.meta.client_id,
                                          m.meta.client_host, b"", b"")
                          for m in consumer.members.values())))
                continue
            share = self.shard.share_groups.get(group_id)
            if share is not None:
                described.append(DescribedGroup(
                    group_id, ErrorCode.NONE, share.state().value, SHARE, "",
                    tuple(DescribedMember(m.member_id, None, m.meta.client_id, m.meta.client_host, b"", b"")
                          for m in share.members.values())))
                continue
            # A streams group is not a classic group to DescribeGroups: Kafka 4.4 answers it
            # as one that does not exist (Dead), below; StreamsGroupDescribe describes it.
            group = self.shard.groups.get(group_id)
            if group is None or group.is_in(S.DEAD):
                error = ErrorCode.GROUP_ID_NOT_FOUND if missing_as_error else ErrorCode.NONE
                if not group_id:
                    error = ErrorCode.INVALID_GROUP_ID
                described.append(DescribedGroup(group_id, error, S.DEAD.value, "", ""))
                continue
            described.append(self._describe(group))
        return Result((), ((reply, tuple(described)),))

    @staticmethod
    def _describe(group: ClassicGroup) -> DescribedGroup:
        stable = group.is_in(S.STABLE)
        members = tuple(
            DescribedMember(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(group.protocol) if stable else b"",
                m.assignment if stable else b"",
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
        for group_id in sorted(self.shard.groups):
            group = self.shard.groups[group_id]
            if group.is_in(S.DEAD):
                continue
            if states and group.state.value.lower() not in states:
                continue
            if types and CLASSIC not in types:
                continue
            listed.append(ListedGroup(group_id, group.protocol_type, group.state.value, CLASSIC))
        for group_id in sorted(self.shard.consumer_groups):
            state = self.shard.consumer_groups[group_id].state().value
            if states and state.lower() not in states:
                continue
            if types and CONSUMER not in types:
                continue
            listed.append(ListedGroup(group_id, CONSUMER, state, CONSUMER))
        for group_id in sorted(self.shard.share_groups):
            state = self.shard.share_groups[group_id].state().value
            if states and state.lower() not in states:
                continue
            if types and SHARE not in types:
                continue
            listed.append(ListedGroup(group_id, SHARE, state, SHARE))
        for group_id in sorted(self.shard.streams_groups):
            state = self.shard.streams_groups[group_id].state().value
            if states and state.lower() not in states:
                continue
            if types and STREAMS not in types:
                continue
            listed.append(ListedGroup(group_id, STREAMS, state, STREAMS))
        listed.sort(key=lambda g: g.group_id)
        return Result((), ((reply, tuple(listed)),))

    def delete(self, group_ids: tuple[str, ...], reply: ReplyTo, now_ms: int) -> Result:
        """Delete Empty groups with their offsets; others get a per-group error."""
        out = ResultBuilder()
        results = []
        for group_id in group_ids:
            out.changed(group_id, "DeleteGroups")
            group = self.shard.groups.get(group_id)
            consumer = self.shard.consumer_groups.get(group_id)
            share = self.shard.share_groups.get(group_id)
            streams = self.shard.streams_groups.get(group_id)
            if streams is not None:
                if streams.members:
                    results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
                    continue
                for topic, partition in sorted(self.shard.stored.offsets.get(group_id, {})):
                    out.record(OffsetCommitRecord(group_id, topic, partition, None))
                out.record(StreamsTopologyRecord(group_id, None))
                out.record(StreamsTargetEpochRecord(group_id, None))
                out.record(StreamsGroupEpochRecord(group_id, None))
                results.append(DeletedGroup(group_id, ErrorCode.NONE))
                continue
            if share is not None:
                if share.members:
                    results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
                else:
                    self.share.delete_group(share, out)
                    results.append(DeletedGroup(group_id, ErrorCode.NONE))
                continue
            if consumer is not None:
                if consumer.members:
                    results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
                    continue
                for topic, partition in sorted(self.shard.stored.offsets.get(group_id, {})):
                    out.record(OffsetCommitRecord(group_id, topic, partition, None))
                out.record(ConsumerTargetEpochRecord(group_id, None))
                out.record(ConsumerGroupEpochRecord(group_id, None))
                results.append(DeletedGroup(group_id, ErrorCode.NONE))
                continue
            if not group_id:
                results.append(DeletedGroup(group_id, ErrorCode.INVALID_GROUP_ID))
            elif group is None or group.is_in(S.DEAD):
                results.append(DeletedGroup(group_id, ErrorCode.GROUP_ID_NOT_FOUND))
            elif not group.is_in(S.EMPTY):
                results.append(DeletedGroup(group_id, ErrorCode.NON_EMPTY_GROUP))
            else:
                for topic, partition in sorted(self.shard.stored.offsets.get(group_id, {})):
                    out.record(OffsetCommitRecord(group_id, topic, partition, None))
                out.record(ClassicGroupRecord(group_id, None))
                group.transition_to(S.DEAD, now_ms)
                del self.shard.groups[group_id]
                results.append(DeletedGroup(group_id, ErrorCode.NONE))
        out.reply(reply, tuple(results))
        return out.build()
