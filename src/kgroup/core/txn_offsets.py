"""Transactional offsets (KIP-98, KIP-447): TxnOffsetCommit, pending until the transaction ends.

How this works: a TxnOffsetCommit is fenced by the group exactly like an OffsetCommit
(generation, member id, instance id -- KIP-447, so a zombie of a consume-transform-produce
application cannot commit for partitions that moved on), except that a rebalance in
progress does not hold it back. Its offsets become `TxnOffsetCommitRecord`s: on replay they
are kept *pending* under the producer id, invisible to OffsetFetch (which answers
UNSTABLE_OFFSET_COMMIT for them when asked for stable offsets). When the transaction ends,
its coordinator sends this shard a marker (`TxnOffsetsMarker`), recorded as a
`TxnOffsetMarkerRecord`: on replay a commit moves the producer's pending offsets into the
committed ones and an abort drops them. A regular commit (or a tombstone) of the same
partition replayed after a pending offset wins over it, as in Kafka, where the later record
in the log is the one that counts: the pending offset is dropped then. Snapshots write
pending offsets after the committed ones, so that order survives them.
"""

from __future__ import annotations

from kgroup.core.classic_group import ClassicGroup
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.event_journal import EventJournal
from kgroup.core.messages import OffsetCommitRequest, OffsetCommitResponse, PartitionError
from kgroup.core.offsets import Offsets
from kgroup.core.records import (
    OffsetCommitRecord,
    OffsetCommitValue,
    TxnOffsetCommitRecord,
    TxnOffsetMarkerRecord,
)
from kgroup.core.result import ReplyTo, Result, ResultBuilder
from kgroup.core.state import ShardState
from kgroup.core.transactions.messages import TxnOffsetCommitRequest, TxnOffsetsMarker, TxnResponse


class TxnOffsets:
    """Handlers of TxnOffsetCommit and of the end-of-transaction markers for offsets."""

    def __init__(self, shard: ShardState, offsets: Offsets) -> None:
        self.shard = shard
        self.offsets = offsets
        self.stored = shard.stored

    # ---- TxnOffsetCommit ------------------------------------------------------------------

    def commit(self, req: TxnOffsetCommitRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Fence the committer by the group, then write the offsets as pending."""
        # 1. The group fences the committer (KIP-447); a client outside group management
        #    (generation -1) may create a simple group, as with OffsetCommit.
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_GROUP_ID, "group id must not be empty")
        as_commit = OffsetCommitRequest(req.group_id, req.generation_id, req.member_id, req.partitions,
                                        req.group_instance_id, api_version=req.api_version)
        out = ResultBuilder()
        consumer_group = self.shard.consumer_groups.get(req.group_id)
        streams_group = self.shard.streams_groups.get(req.group_id)
        if consumer_group is not None:
            self.offsets.validate_consumer_commit(consumer_group, as_commit, transactional=True)
        elif streams_group is not None:
            self.offsets.validate_streams_commit(streams_group, as_commit, transactional=True)
        else:
            group = self.shard.groups.get(req.group_id)
            if group is None:
                if req.generation_id >= 0:
                    code = ErrorCode.GROUP_ID_NOT_FOUND if req.api_version >= 6 else ErrorCode.ILLEGAL_GENERATION
                    raise GroupError(code, f"group {req.group_id} does not exist")
                out.then(self.shard.groups.setdefault, req.group_id, ClassicGroup(req.group_id, now_ms))
            else:
                self.offsets.validate_commit(group, as_commit, transactional=True)
        # 2. One pending record per partition whose metadata fits.
        limit = self.offsets.config.offset_metadata_max_bytes
        errors = []
        for p in req.partitions:
            metadata = p.metadata or ""
            if len(metadata.encode()) > limit:
                errors.append(PartitionError(p.topic, p.partition, ErrorCode.OFFSET_METADATA_TOO_LARGE))
                continue
            out.record(TxnOffsetCommitRecord(req.group_id, p.topic, p.partition, req.producer_id,
                                             OffsetCommitValue(p.offset, p.leader_epoch, metadata, now_ms)))
            errors.append(PartitionError(p.topic, p.partition, ErrorCode.NONE))
        out.reply(reply, OffsetCommitResponse(tuple(errors)))
        return out.build()

    # ---- the end of a transaction ---------------------------------------------------------

    def marker(self, req: TxnOffsetsMarker, reply: ReplyTo, now_ms: int) -> Result:
        """Commit or drop the producer's pending offsets; the groups whose offsets a commit
        made visible are named for the group events."""
        out = ResultBuilder(EventJournal(self.shard, now_ms))
        pending = self.stored.pending_offsets.get(req.producer_id)
        if pending:
            out.record(TxnOffsetMarkerRecord(req.producer_id, req.commit))
            if req.commit:
                for group_id, offsets in sorted(pending.items()):
                    if offsets:
                        out.changed(group_id, "transaction committed", committed=tuple(sorted(offsets)))
        out.reply(reply, TxnResponse(ErrorCode.NONE))
        return out.build()

    # ---- replay ---------------------------------------------------------------------------

    def replay_pending(self, record: TxnOffsetCommitRecord) -> None:
        by_group = self.stored.pending_offsets.setdefault(record.producer_id, {})
        by_group.setdefault(record.group_id, {})[(record.topic, record.partition)] = record.value
        self.stored.open_txn_groups.setdefault(record.group_id, set()).add(record.producer_id)

    def replay_marker(self, record: TxnOffsetMarkerRecord) -> None:
        by_group = self.stored.pending_offsets.pop(record.producer_id, None)
        if by_group is None:
            return
        committed = self.stored.offsets
        for group_id, offsets in by_group.items():
            producers = self.stored.open_txn_groups.get(group_id)
            if producers is not None:
                producers.discard(record.producer_id)
                if not producers:
                    del self.stored.open_txn_groups[group_id]
            if record.commit and offsets:
                committed.setdefault(group_id, {}).update(offsets)

    def superseded(self, record: OffsetCommitRecord) -> None:
        """A regular commit or tombstone of a partition replaces pending offsets of it."""
        producers = self.stored.open_txn_groups.get(record.group_id)
        if not producers:
            return
        key = (record.topic, record.partition)
        for pid in producers:
            self.stored.pending_offsets[pid].get(record.group_id, {}).pop(key, None)

    def snapshot_records(self) -> list[TxnOffsetCommitRecord]:
        """Pending offsets as records (written after the committed ones)."""
        return [TxnOffsetCommitRecord(group_id, t, p, pid, value)
                for pid, by_group in sorted(self.stored.pending_offsets.items())
                for group_id, offsets in sorted(by_group.items())
                for (t, p), value in sorted(offsets.items())]
