"""ListOffsets (data/apis.py: the versions served): earliest, latest, max timestamp, or by timestamp.

Version notes: v0 (several offsets per partition) is not served; v1 one offset and its
timestamp; v2 isolation level (read_committed: latest is the last stable offset, and an
offset found by timestamp at or past it is not answered); v4 current_leader_epoch in (a stale one is
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH: data/leader_epochs_api.py), leader_epoch
out (the epoch the offset was written at, from the partition's history: 0 on a single broker);
v6 flexible; v7 MAX_TIMESTAMP (-3, KIP-734); v8 EARLIEST_LOCAL (-4, KIP-405: no
tiered storage, so the log start); v9 LATEST_TIERED (-5, KIP-1005); v10 a timeout for remote
reads (KIP-1075: nothing here is remote); v11 EARLIEST_PENDING_UPLOAD (-6, KIP-1023). A
timestamp below the lowest special one the request's version knows (-3 at v6, -5 at v8, -7
at any) is UNSUPPORTED_VERSION for that partition, as Kafka answers it.

Special timestamps: -2 earliest → log start offset; -1 latest → log end offset (the high
watermark); -4 earliest local → log start; -3 max timestamp → the first record holding the
largest timestamp in the log and that timestamp; (-1, -1) for an empty log. Any other
timestamp → the first record at or after the log start whose timestamp is >= it, and its
timestamp, as Kafka answers: `PartitionLog.offset_for_timestamp` finds the first batch whose
max timestamp is >= it, and that batch's records are decoded to find the record (a batch
that cannot be decoded is answered with its base offset, which is at or before it); offset
-1 / timestamp -1 when no record qualifies.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.data.context import NOT_LEADER, DataContext, log, per_partition_keyed
from kgroup.broker.data.leader_epochs_api import LeaderEpochError, check_leader_epoch, epoch_of_offset
from kgroup.wire.kio_build import build, get, item
from kgroup.storage import PartitionLog, StorageError
from kgroup.storage.errors import NotOwnedError, TopicError
from kgroup.wire import RequestHeader, WireError, response_class
from kgroup.wire import record_batch
from kgroup.error_codes import ErrorCode

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6

# The lowest special timestamp each version knows (Kafka: a lower one is UNSUPPORTED_VERSION).
_LOWEST_SPECIAL = ((11, EARLIEST_PENDING_UPLOAD), (9, LATEST_TIERED), (8, EARLIEST_LOCAL), (7, MAX_TIMESTAMP),
                   (0, EARLIEST))


def lowest_special(version: int) -> int:
    return next(ts for since, ts in _LOWEST_SPECIAL if version >= since)


def max_timestamp(plog: PartitionLog) -> int:
    """The largest batch max timestamp still in the log, -1 if none.

    Reads the per-segment maxima the log keeps in memory (PartitionLog has no public
    accessor for them yet)."""
    segments = getattr(plog, "_segments", ())
    return max((s.max_timestamp for s in segments if s.next_offset > plog.log_start_offset),
               default=-1)


def lookup(plog: PartitionLog, timestamp: int) -> tuple[int, int]:
    """(offset, timestamp) answered for `timestamp` (see the module docstring)."""
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == LATEST:
        return plog.log_end_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return -1, -1           # no tiered storage: nothing tiered, nothing pending upload
    if timestamp == MAX_TIMESTAMP:
        timestamp = max_timestamp(plog)
        if timestamp < 0:
            return -1, -1
    found = plog.offset_for_timestamp(timestamp)
    return (-1, -1) if found is None else _first_record_at(plog, found, timestamp)


def _first_record_at(plog: PartitionLog, found: tuple[int, int], timestamp: int) -> tuple[int, int]:
    """The first record of the batch at ``found`` (its offset, max timestamp) whose
    timestamp is >= ``timestamp``; ``found`` itself if the batch cannot be decoded."""
    start, _ = found
    try:
        batches = record_batch.split_batches(plog.read(start, 1))
        records = record_batch.decode_records(batches[0]) if batches else ()
    except WireError as exc:
        log.warning("cannot decode the batch at %s offset %d for a timestamp lookup: %s",
                    plog.directory, start, exc)
        return found
    for r in records:
        if r.offset >= start and r.timestamp >= timestamp:
            return r.offset, r.timestamp
    return found


def committed_lookup(ctx: DataContext, key: tuple[str, int], plog: PartitionLog,
                     timestamp: int) -> tuple[int, int]:
    """`lookup` for read_committed: nothing at or past the last stable offset. As Kafka
    (Partition.fetchOffsetForTimestamp): LATEST is the last stable offset, EARLIEST is the
    log start whatever the LSO (an empty partition's earliest is 0, not "none"), and only
    a lookup by time is cut at the LSO."""
    stable = ctx.producers.of(key, plog).last_stable_offset(plog.log_end_offset)
    if timestamp == LATEST:
        return stable, -1
    offset, found = lookup(plog, timestamp)
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return offset, found
    return (offset, found) if offset < stable else (-1, -1)


def list_offsets(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The ListOffsets response (read_committed: nothing at or past the last stable offset)."""
    isolation = int(get(request, "isolation_level", 0))
    read_committed = isolation == 1
    lowest = lowest_special(header.api_version)

    def answer(topic: str, p: Any) -> dict:
        index = int(p.partition_index)
        if isolation not in (0, 1):
            # Kafka cannot read the isolation level: the whole request fails with
            # UNKNOWN_SERVER_ERROR, every partition answered with it.
            return dict(partition_index=index, error_code=ErrorCode.UNKNOWN_SERVER_ERROR, timestamp=-1,
                        offset=-1, leader_epoch=-1)
        if int(p.timestamp) < lowest:       # (Kafka checks it before it looks for the partition)
            return dict(partition_index=index, error_code=ErrorCode.UNSUPPORTED_VERSION, timestamp=-1,
                        offset=-1, leader_epoch=-1)
        try:
            plog = ctx.data.partition_log(topic, index)
            if not plog.owned:
                raise NotOwnedError(f"{topic}-{index} was taken over by another node")
            check_leader_epoch(int(get(p, "current_leader_epoch", -1)), plog.leader_epoch)
            if read_committed:
                offset, timestamp = committed_lookup(ctx, (topic, index), plog, int(p.timestamp))
            else:
                offset, timestamp = lookup(plog, int(p.timestamp))
            return dict(partition_index=index, error_code=ErrorCode.NONE, timestamp=timestamp, offset=offset,
                        leader_epoch=epoch_of_offset(plog.leader_epoch_history(), offset) if offset >= 0 else -1)
        except TopicError:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        except LeaderEpochError as exc:
            code = exc.code
        except NOT_LEADER:
            code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        except StorageError as exc:
            log.error("list offsets of %s-%d failed in storage: %s", topic, index, exc)
            code = ErrorCode.KAFKA_STORAGE_ERROR
        return dict(partition_index=index, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1)

    def duplicate(topic: str, p: Any) -> dict:
        return dict(partition_index=int(p.partition_index), error_code=ErrorCode.INVALID_REQUEST, timestamp=-1,
                    offset=-1, leader_epoch=-1)

    cls = response_class(header.api_key, header.api_version)
    if isolation not in (0, 1):
        # Kafka's error answer names every topic asked for, one naming no partition too.
        topic_cls = item(cls, "topics")
        part_cls = item(topic_cls, "partitions")
        return build(cls, throttle_time=0, topics=tuple(
            build(topic_cls, name=t.name, partitions=tuple(build(part_cls, **answer(t.name, p)) for p in t.partitions))
            for t in request.topics))
    # Kafka answers a partition named twice once, INVALID_REQUEST (a topic named twice once).
    return build(cls, throttle_time=0, topics=per_partition_keyed(cls, request.topics, answer, duplicate))
