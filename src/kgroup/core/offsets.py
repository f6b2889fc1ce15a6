"""Committed offsets: commit with generation fencing, fetch, delete, and retention.

How this works: a commit is validated against the group (member, instance id, generation;
a generation of -1 from a client outside group management is a "simple" commit, allowed
only while the group has no members; a consumer-protocol member's epoch may trail its
current one for partitions it already held then, KIP-1251), then becomes one
OffsetCommitRecord per partition.
Offsets live in the shard's stored state and change only by replay. Retention follows
KIP-211: an Empty group's offsets expire `offsets.retention` after the group became empty
(whatever their commit time, as in Kafka); a group with no protocol type (simple commits only) uses
the commit time; offsets of a Stable consumer group expire only for topics nobody
subscribes to. An Empty group left with no offsets is deleted.
"""

from __future__ import annotations

from kgroup.core.assignment_epochs import check_commit as check_assignment_epochs
from kgroup.core.classic_group import ClassicGroup, ClassicGroupState
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.kinds import find_group
from kgroup.core.messages import (
    UNKNOWN_MEMBER_ID,
    FetchedOffset,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    PartitionError,
)
from kgroup.core.records import ClassicGroupRecord, OffsetCommitRecord, OffsetCommitValue
from kgroup.core.result import EMPTY_RESULT, Departure, ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.streams_offsets import check_commit as check_streams_commit
from kgroup.core.streams_offsets import check_fetch as check_streams_fetch
from kgroup.core.subscriptions import subscribed_topics
from kgroup.core.timers import OFFSETS_EXPIRY_KEY, TimerKind, TimerOp, classic_session_key

S = ClassicGroupState
CONSUMER_PROTOCOL_TYPE = "consumer"


class Offsets:
    """Handlers of OffsetCommit, OffsetFetch, OffsetDelete and the retention timer."""

    def __init__(self, shard: ShardState) -> None:
        self.shard = shard
        self.config = shard.config

    # ---- OffsetCommit ---------------------------------------------------------------------

    def commit(self, req: OffsetCommitRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Validate the committer, then write one record per partition that fits."""
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
        consumer_group = self.shard.consumer_groups.get(req.group_id)
        if consumer_group is not None:
            self.validate_consumer_commit(consumer_group, req)
            return self._write_commits(req, reply, now_ms)
        streams_group = self.shard.streams_groups.get(req.group_id)
        if streams_group is not None:
            self.validate_streams_commit(streams_group, req)
            return self._write_commits(req, reply, now_ms)
        group = self.shard.groups.get(req.group_id)
        if group is None:
            if req.generation_id >= 0:
                # Only a client outside group management may create a group by committing.
                raise GroupError(
                    ErrorCode.GROUP_ID_NOT_FOUND if req.api_version >= 9 else ErrorCode.ILLEGAL_GENERATION,
                    f"group {req.group_id} does not exist",
                )
            # A simple commit makes the group only if it commits something: Kafka's group of
            # a commit that writes no record is never seen (nothing commits it).
            result = self._write_commits(req, reply, now_ms)
            if result.records:
                self.shard.groups[req.group_id] = ClassicGroup(req.group_id, now_ms)
            return result
        self.validate_commit(group, req)
        if req.member_id and group.has_member(req.member_id):
            # A commit is proof of life, as a heartbeat is.
            member = group.members[req.member_id]
            key = classic_session_key(group.group_id, member.member_id)
            deadline = now_ms + member.session_timeout_ms
            if not self.shard.timers.extend(key, deadline):
                self.shard.timers.schedule(key, deadline, TimerOp(TimerKind.CLASSIC_SESSION, group.group_id,
                                                                  member.member_id))
        return self._write_commits(req, reply, now_ms)

    def validate_consumer_commit(self, group, req: OffsetCommitRequest, transactional: bool = False) -> None:
        """Consumer-protocol groups fence commits by member epoch and each partition's
        assignment epoch (KIP-848, KIP-1251: assignment_epochs.py), as Kafka 4.4's
        ConsumerGroup.validateOffsetCommit. A transactional commit (TxnOffsetCommit, KIP-447)
        that is too old gets ILLEGAL_GENERATION, which transactional producers know, as in
        Kafka before TxnOffsetCommit v6. A partition whose metadata is too large is left to
        its own error and not checked, as in Kafka."""
        epoch = req.generation_id
        if epoch < 0 and not group.members:
            return  # an admin or simple commit to a group nobody is in
        if transactional and epoch == -1 and not req.member_id and req.group_instance_id is None:
            return  # a producer committing without the group's metadata (KIP-447's old API)
        member = group.members.get(req.member_id)
        if member is None:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {group.group_id}")
        classic = member.meta.is_classic
        if not transactional and not classic and req.api_version < 9:
            raise GroupError(ErrorCode.UNSUPPORTED_VERSION,
                             "a consumer-protocol member must commit with OffsetCommit v9 or later")
        if epoch == member.epoch:
            return
        topics = self.shard.topics
        limit = self.config.offset_metadata_max_bytes
        checked = ((p.topic, topics.get(p.topic, (None,))[0], p.partition) for p in req.partitions
                   if not p.metadata or len(p.metadata.encode()) <= limit)
        try:
            check_assignment_epochs(member.current, epoch, checked, classic)
        except GroupError as e:
            if transactional and e.code is ErrorCode.STALE_MEMBER_EPOCH and req.api_version < 6:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION, e.message) from None
            raise

    @staticmethod
    def validate_streams_commit(group, req: OffsetCommitRequest, transactional: bool = False) -> None:
        """Streams groups fence commits by member epoch and each task's assignment epoch
        (streams_offsets.py); a transactional commit that is too old gets ILLEGAL_GENERATION,
        as for consumer groups."""
        try:
            check_streams_commit(group, req.member_id, req.group_instance_id, req.generation_id, req.api_version,
                                 ((p.topic, p.partition) for p in req.partitions), transactional)
        except GroupError as e:
            if transactional and e.code is ErrorCode.STALE_MEMBER_EPOCH and req.api_version < 6:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION, e.message) from None
            raise

    def _write_commits(self, req: OffsetCommitRequest, reply: ReplyTo, now_ms: int) -> Result:
        # The hot path of every consumer's auto-commit: plain lists, no builder calls.
        records = []
        errors = []
        limit = self.config.offset_metadata_max_bytes
        group_id = req.group_id
        retention = req.retention_time_ms
        default_retention = self.config.offsets_retention_ms
        for p in req.partitions:
            metadata = p.metadata or ""
            if metadata and len(metadata.encode()) > limit:
                errors.append(PartitionError(p.topic, p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            expire = None
            if retention >= 0:
                expire = now_ms + retention
            elif p.commit_timestamp_ms >= 0:
                expire = p.commit_timestamp_ms + default_retention
            records.append(OffsetCommitRecord(
                group_id, p.topic, p.partition,
                OffsetCommitValue(p.offset, p.leader_epoch, metadata, now_ms, expire),
            ))
            errors.append(PartitionError(p.topic, p.partition, ErrorCode.NONE))
        replies = ((reply, OffsetCommitResponse(tuple(errors))),) if reply is not None else ()
        return Result(tuple(records), replies)

    @staticmethod
    def validate_commit(group: ClassicGroup, req: OffsetCommitRequest, transactional: bool = False) -> None:
        """Fence a commit to a classic group by member, instance id and generation. A
        transactional commit (KIP-447) is not held back by a rebalance in progress, and one
        with neither member nor generation (TxnOffsetCommit v0-v2) is let through, as in
        Kafka."""
        if group.is_in(S.DEAD):
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if req.generation_id < 0 and group.is_in(S.EMPTY):
            return  # simple commit to a group nobody is in
        if req.generation_id >= 0 or req.member_id != UNKNOWN_MEMBER_ID or req.group_instance_id is not None:
            group.validate_member(req.member_id, req.group_instance_id)
            if req.generation_id != group.generation:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION,
                                 f"generation {req.generation_id} is not the group's {group.generation}")
        elif not transactional:
            # No member and no generation: only allowed while nobody is in the group.
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, "group has members; commit with member id and generation")
        if not transactional and group.is_in(S.COMPLETING_REBALANCE):
            # The member knows the new generation but has no assignment yet.
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)

    # ---- OffsetFetch ----------------------------------------------------------------------

    def fetch(self, req: OffsetFetchRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Committed offsets of listed partitions (-1 where none), or of all of them."""
        consumer_group = self.shard.consumer_groups.get(req.group_id)
        if consumer_group is not None and req.member_id:
            member = consumer_group.members.get(req.member_id)
            if member is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in the group")
            if req.member_epoch != member.epoch:
                raise GroupError(ErrorCode.STALE_MEMBER_EPOCH,
                                 f"epoch {req.member_epoch} is not the member's {member.epoch}")
        streams_group = self.shard.streams_groups.get(req.group_id)
        if streams_group is not None:
            check_streams_fetch(streams_group, req.member_id, req.member_epoch)
        stored = self.shard.stored.offsets.get(req.group_id, {})
        if req.partitions is None:
            found = tuple(
                FetchedOffset(t, p, v.offset, v.leader_epoch, v.metadata)
                for (t, p), v in sorted(stored.items())
            )
        else:
            fetched = []
            for t, p in req.partitions:
                v = stored.get((t, p))
                fetched.append(FetchedOffset(t, p, -1, -1, "") if v is None
                               else FetchedOffset(t, p, v.offset, v.leader_epoch, v.metadata))
            found = tuple(fetched)
        if req.require_stable and req.group_id in self.shard.stored.open_txn_groups:
            # KIP-447: a partition whose offset a transaction is still committing is unstable.
            unstable = self.shard.stored.has_pending_offset
            found = tuple(FetchedOffset(f.topic, f.partition, -1, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
                          if unstable(req.group_id, f.topic, f.partition) else f for f in found)
        return Result((), ((reply, OffsetFetchResponse(ErrorCode.NONE, found)),))

    # ---- OffsetDelete ---------------------------------------------------------------------

    def delete(self, req: OffsetDeleteRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Delete offsets, except of topics the group's live members subscribe to (a group of
        any kind that keeps committed offsets: the coordinator refuses the others)."""
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
        group = find_group(self.shard, req.group_id)
        if group is None:
            raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {req.group_id} does not exist")
        if not isinstance(group, ClassicGroup):
            # A modern group: the topics its members subscribe to, by name (existing or not)
            # or as its group epoch has them (a regex's too); none once it is empty (an empty
            # streams group keeps its topology's topics).
            protected: frozenset[str] = frozenset(
                {n for m in group.members.values() for n in getattr(m.meta, "subscribed_topic_names", ())}
                | {name for name, _, _ in group.subscribed}) if group.members else frozenset()
        elif group.is_in(S.EMPTY) or not group.protocol_type:
            protected = frozenset()
        elif group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            protected = self.subscribed_topics(group) or frozenset()
        else:
            raise GroupError(ErrorCode.NON_EMPTY_GROUP, "the group has members of a non-consumer protocol")
        out = ResultBuilder()
        stored = self.shard.stored.offsets.get(req.group_id, {})
        errors = []
        for topic, partition in req.partitions:
            if topic in protected:
                errors.append(PartitionError(topic, partition, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
                continue
            if (topic, partition) in stored:
                out.record(OffsetCommitRecord(req.group_id, topic, partition, None))
            errors.append(PartitionError(topic, partition, ErrorCode.NONE))
        out.reply(reply, OffsetDeleteResponse(ErrorCode.NONE, tuple(errors)))
        return out.build()

    # ---- Deleted topics -------------------------------------------------------------------

    def topics_deleted(self, topics: frozenset[str], now_ms: int) -> Result:
        """Tombstone every offset, committed or pending in a transaction, of partitions of
        the deleted `topics` in every group (a tombstone drops pending offsets too). Groups
        stay: an Empty one left with no offsets goes at the next retention check, as in Kafka."""
        if not topics:
            return EMPTY_RESULT
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        stored = self.shard.stored
        held: dict[str, set[tuple[str, int]]] = {}
        for group_id, offsets in stored.offsets.items():
            held.setdefault(group_id, set()).update(k for k in offsets if k[0] in topics)
        for by_group in stored.pending_offsets.values():
            for group_id, offsets in by_group.items():
                held.setdefault(group_id, set()).update(k for k in offsets if k[0] in topics)
        for group_id in sorted(g for g, keys in held.items() if keys):
            out.changed(group_id, "offsets of a deleted topic")
            for topic, partition in sorted(held[group_id]):
                out.record(OffsetCommitRecord(group_id, topic, partition, None))
        return out.build() if out.records else EMPTY_RESULT

    @staticmethod
    def subscribed_topics(group: ClassicGroup) -> frozenset[str] | None:
        """Topics the members subscribe to, or None if any member's metadata is unreadable."""
        topics: set[str] = set()
        for member in group.members.values():
            member_topics = subscribed_topics(member.metadata(group.protocol))
            if member_topics is None:
                return None
            topics.update(member_topics)
        return frozenset(topics)

    # ---- Retention ------------------------------------------------------------------------

    def schedule_expiry(self, now_ms: int) -> None:
        self.shard.timers.schedule(OFFSETS_EXPIRY_KEY, now_ms + self.config.offsets_retention_check_interval_ms,
                                   TimerOp(TimerKind.OFFSETS_EXPIRY, ""))

    def expire(self, now_ms: int) -> Result:
        """Tombstone expired offsets; delete Empty groups that are left with none."""
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        retention = self.config.offsets_retention_ms
        stored = self.shard.stored
        for group_id in sorted(set(stored.offsets) | set(self.shard.groups)):
            group = self.shard.groups.get(group_id)
            offsets = stored.offsets.get(group_id, {})
            expired = self._expired(group, offsets, now_ms, retention)
            dropped = group is not None and group.is_in(S.EMPTY) and len(expired) == len(offsets)
            if expired or (dropped and group_id in stored.classic_groups):
                out.changed(group_id, "offsets expired", Departure.EXPIRED)
            for topic, partition in expired:
                out.record(OffsetCommitRecord(group_id, topic, partition, None))
            if dropped:
                group.transition_to(S.DEAD, now_ms)
                del self.shard.groups[group_id]
                if group_id in stored.classic_groups:
                    out.record(ClassicGroupRecord(group_id, None))
        self.schedule_expiry(now_ms)
        return out.build() if out.records else EMPTY_RESULT

    def _expired(self, group: ClassicGroup | None, offsets: dict, now_ms: int,
                 retention: int) -> list[tuple[str, int]]:
        if not offsets:
            return []
        if group is None or not group.protocol_type:
            base = None  # simple group: each commit's own time
            keep: frozenset[str] = frozenset()
        elif group.is_in(S.EMPTY):
            base = group.state_timestamp_ms
            keep = frozenset()
        elif group.is_in(S.STABLE) and group.protocol_type == CONSUMER_PROTOCOL_TYPE:
            subscribed = self.subscribed_topics(group)
            if subscribed is None:
                return []
            base = None
            keep = subscribed
        else:
            return []
        expired = []
        pending = group is not None and group.group_id in self.shard.stored.open_txn_groups
        for (topic, partition), v in sorted(offsets.items()):
            if topic in keep:
                continue
            if pending and self.shard.stored.has_pending_offset(group.group_id, topic, partition):
                continue  # a transaction is committing this offset: keep it (as Kafka does)
            if v.expire_timestamp_ms is not None:
                if now_ms >= v.expire_timestamp_ms:
                    expired.append((topic, partition))
            elif now_ms - (v.commit_timestamp_ms if base is None else base) >= retention:
                expired.append((topic, partition))
        return expired


def deleted_topics(before: dict[str, tuple[str, int]], after: dict[str, tuple[str, int]]) -> frozenset[str]:
    """Names of topics in `before` (name -> (topic id, partitions)) that `after` no longer
    has, or has under another topic id (deleted, then created again with the same name)."""
    return frozenset(name for name, (topic_id, _) in before.items()
                     if name not in after or after[name][0] != topic_id)
