"""A test context for the transaction coordinator on a manual clock.

It extends the group context with what the broker does for transactions: it keeps the
markers each Result asks for (`markers`), and `write_markers()` plays the broker's part of
writing them -- the partitions it would append to are recorded in `written`, the offsets
markers go to this same shard (one shard holds both the transactional id and the group in
these tests), and the coordinator is told they are done.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.core.coordinator import GroupCoordinatorShard, counter_producer_ids
from kgroup.core.host import CoordinatorHost
from kgroup.core.messages import OffsetCommitPartition, OffsetFetchRequest
from kgroup.core.result import Result
from kgroup.core.transactions.config import TransactionConfig
from kgroup.core.transactions.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    MarkersWritten,
    TxnMarkers,
    TxnOffsetCommitRequest,
    TxnOffsetsMarker,
)

from tests.unit.core.groupctx import GroupContext, Pending


@dataclass
class TxnContext(GroupContext):
    txn_config: TransactionConfig = field(default_factory=TransactionConfig)
    markers: list[TxnMarkers] = field(default_factory=list)
    # (topic, partition, producer id, epoch, commit) for each marker the broker appended.
    written: list[tuple] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.at_once()
        CoordinatorHost.__init__(self, GroupCoordinatorShard(self.config, txn_config=self.txn_config,
                                                             new_producer_id=counter_producer_ids()), self.log)
        self.coord.update_topics({"t": ("id-t", 4), "u": ("id-u", 2)}, self.now)
        self.apply(self.coord.load_complete(self.now))

    def apply(self, result: Result) -> None:
        super().apply(result)
        self.markers.extend(result.markers)

    # ---- requests -------------------------------------------------------------------------

    def init(self, tid: str = "tx", timeout: int = 60_000, pid: int = -1, epoch: int = -1) -> Pending:
        return self.call(self.coord.init_producer_id, InitProducerIdRequest(tid, timeout, pid, epoch))

    def producer(self, tid: str = "tx", timeout: int = 60_000) -> tuple[int, int]:
        """InitProducerId that must succeed: (producer id, epoch)."""
        done = self.init(tid, timeout)
        assert done.error.name == "NONE", done
        return done.response.producer_id, done.response.producer_epoch

    def add(self, tid: str, pid: int, epoch: int, *partitions: tuple[str, int]) -> Pending:
        return self.call(self.coord.add_partitions_to_txn,
                         AddPartitionsToTxnRequest(tid, pid, epoch, tuple(partitions)))

    def add_offsets(self, tid: str, pid: int, epoch: int, group: str) -> Pending:
        return self.call(self.coord.add_offsets_to_txn, AddOffsetsToTxnRequest(tid, pid, epoch, group))

    def end(self, tid: str, pid: int, epoch: int, commit: bool = True) -> Pending:
        return self.call(self.coord.end_txn, EndTxnRequest(tid, pid, epoch, commit))

    def txn_commit(self, group: str, tid: str, pid: int, epoch: int, offsets: dict, *,
                   generation: int = -1, member: str = "", instance: str | None = None) -> Pending:
        return self.call(self.coord.txn_offset_commit, TxnOffsetCommitRequest(
            group, tid, pid, epoch, tuple(OffsetCommitPartition(t, p, o) for (t, p), o in offsets.items()),
            generation, member, instance))

    def txn_commit_error(self, *args, **kwargs):
        """The outcome of a TxnOffsetCommit of one partition: the request's or the partition's error."""
        done = self.txn_commit(*args, **kwargs)
        return done.raised if done.raised is not None else done.response.partitions[0].error

    def fetch_stable(self, group: str, partitions) -> dict:
        """OffsetFetch with RequireStable: {(topic, partition): (offset, error)}."""
        done = self.call(self.coord.fetch_offsets, OffsetFetchRequest(group, tuple(partitions), require_stable=True))
        return {(f.topic, f.partition): (f.offset, f.error) for f in done.response.partitions}

    def state(self, tid: str = "tx"):
        return self.coord.stored.transactions.get(tid)

    # ---- the broker's part ----------------------------------------------------------------

    def write_markers(self) -> list[TxnMarkers]:
        """Write every marker asked for so far; returns them."""
        done, self.markers = self.markers, []
        for m in done:
            for topic, partition in m.partitions:
                self.written.append((topic, partition, m.producer_id, m.producer_epoch, m.commit))
            if m.groups:
                self.call(self.coord.txn_offsets_marker,
                          TxnOffsetsMarker(m.producer_id, m.producer_epoch, m.commit, m.groups))
            self.call(self.coord.txn_markers_written,
                      MarkersWritten(m.transactional_id, m.producer_id, m.producer_epoch))
        return done

    def reloaded(self) -> "TxnContext":
        """A new shard that replays this one's log (a restart), loaded at the same time."""
        again = TxnContext(config=self.config, txn_config=self.txn_config, now=self.now)
        fresh = GroupCoordinatorShard(self.config, txn_config=self.txn_config,
                                      new_producer_id=counter_producer_ids(10_000))
        fresh.update_topics(dict(self.coord.shard.topics), self.now)
        again.log[:] = self.log
        again.reload(fresh)
        again.markers = []
        again.apply(fresh.load_complete(self.now))
        return again
