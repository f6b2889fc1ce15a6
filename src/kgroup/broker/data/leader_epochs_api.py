"""OffsetForLeaderEpoch (KIP-320; data/apis.py: the versions served): where a leader epoch of
a partition ends, so a consumer can tell whether the log it read was truncated under it.

Version notes: v2 current_leader_epoch (the fencing check below); v3 replica_id (followers
and consumers alike are answered from the leader's log); v4 flexible. Kafka 4.4 serves v2–v4.

The epoch history of a partition is a list of (epoch, start offset) entries, oldest first,
as Kafka's leader-epoch cache (LeaderEpochFileCache) keeps them: storage/leader_epochs.py
keeps it per partition, in its epoch directory, across takeovers. A partition's leader epoch
is its ownership epoch less one: 0 on a single broker for ever (as on a single Kafka
broker), one more after each takeover in a cluster; Metadata, DescribeTopicPartitions,
ListOffsets and the epoch stamped on appended batches say the same. kgroup's nodes share one
data dir and never truncate a log under a reader, so a client validating its position after
a leader move finds its epoch ending at or past the offset it holds.

The end offset of a requested epoch, as Kafka answers it (`end_offset_for`):
- -1 (no epoch): (-1, -1);
- the latest epoch: (that epoch, the log end offset);
- an epoch with a newer one after it: the start offset of the first newer epoch, with the
  newest epoch at or below the requested one (or the requested one itself when it is older
  than every entry);
- an epoch newer than every entry: (-1, -1).

Fencing (v2+): a current_leader_epoch other than -1 must be the partition's leader epoch;
older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH (the client refreshes its metadata).
A partition this node does not lead is NOT_LEADER_OR_FOLLOWER, an unknown one
UNKNOWN_TOPIC_OR_PARTITION; an error leaves the epoch and the offset at -1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroup.broker.data.context import NOT_LEADER, DataContext, log
from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.storage.errors import NotOwnedError, TopicError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item

UNDEFINED = (-1, -1)

EpochHistory = Sequence[tuple[int, int]]   # (epoch, start offset), oldest first


def end_offset_for(entries: EpochHistory, requested: int, log_end_offset: int) -> tuple[int, int]:
    """(epoch, end offset) answered for `requested` over the history `entries`."""
    if requested == -1 or not entries:
        return UNDEFINED
    if entries[-1][0] == requested:
        return requested, log_end_offset
    higher = next((e for e in entries if e[0] > requested), None)
    if higher is None:
        return UNDEFINED
    floor = [e for e in entries if e[0] <= requested]
    return (floor[-1][0] if floor else requested), higher[1]


def fencing_error(current_leader_epoch: int, leader_epoch: int) -> ErrorCode | None:
    """The error a client's idea of the current leader epoch gets, None when it is right
    (-1: the client does not say)."""
    if current_leader_epoch == -1 or current_leader_epoch == leader_epoch:
        return None
    return ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < leader_epoch else ErrorCode.UNKNOWN_LEADER_EPOCH


class LeaderEpochError(Exception):
    """A request's current_leader_epoch is not the partition's (Fetch, ListOffsets)."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


def check_leader_epoch(current_leader_epoch: int, leader_epoch: int) -> None:
    """Raise LeaderEpochError when `current_leader_epoch` is stale or from the future."""
    code = fencing_error(current_leader_epoch, leader_epoch)
    if code is not None:
        raise LeaderEpochError(code)


def epoch_of_offset(entries: EpochHistory, offset: int) -> int:
    """The leader epoch `offset` was (or is to be) written at: that of the newest entry
    starting at or before it (-1 before every entry)."""
    found = -1
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found


def offset_for_leader_epoch(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The OffsetForLeaderEpoch response: each partition asked for, in request order."""
    cls = response_class(header.api_key, header.api_version)
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")

    def answer(topic: str, p: Any) -> Any:
        index = int(p.partition)
        try:
            plog = ctx.data.partition_log(topic, index)
            if not plog.owned:
                raise NotOwnedError(f"{topic}-{index} was taken over by another node")
            code = fencing_error(int(get(p, "current_leader_epoch", -1)), plog.leader_epoch)
            if code is not None:
                return build(part_cls, error_code=code, partition=index, leader_epoch=-1, end_offset=-1)
            epoch, end = end_offset_for(plog.leader_epoch_history(), int(p.leader_epoch), plog.log_end_offset)
            return build(part_cls, error_code=ErrorCode.NONE, partition=index, leader_epoch=epoch, end_offset=end)
        except TopicError:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        except NOT_LEADER:
            code = ErrorCode.NOT_LEADER_OR_FOLLOWER
        except StorageError as exc:
            log.error("offset for leader epoch of %s-%d failed in storage: %s", topic, index, exc)
            code = ErrorCode.KAFKA_STORAGE_ERROR
        return build(part_cls, error_code=code, partition=index, leader_epoch=-1, end_offset=-1)

    return build(cls, throttle_time=0, topics=tuple(
        build(topic_cls, topic=t.topic, partitions=tuple(answer(t.topic, p) for p in t.partitions))
        for t in request.topics))
