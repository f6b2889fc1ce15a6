"""DeleteRecords, DescribeLogDirs and AlterReplicaLogDirs: the log's extent and its dir
(admin/apis.py has the versions served).

DeleteRecords moves a partition's log start offset (its low watermark) up to the offset
given, -1 meaning the high watermark, and deletes the segments wholly below it; the new
start is persisted before the answer. Per partition: unknown → UNKNOWN_TOPIC_OR_PARTITION;
an offset past the high watermark or below -1 → OFFSET_OUT_OF_RANGE; an internal topic →
INVALID_TOPIC_EXCEPTION (Kafka's "Cannot delete records of internal topic"); in a cluster, a
partition another node leads → NOT_LEADER_OR_FOLLOWER. An offset
below the current start changes nothing and answers the current start, as in Kafka.

DescribeLogDirs answers one log dir, the data dir, with each partition's size on disk
(offset lag 0: nothing is ever behind on one broker) and, v4, the file system's total and
usable bytes. A null topic list means every topic.

AlterReplicaLogDirs: kgroup has one log dir per node (the data dir, as DescribeLogDirs
names it), so, as Kafka 4.4 answers for a broker with one dir: another path is
LOG_DIR_NOT_FOUND for each partition named under it, whatever the partition; the dir it
has is NONE for a partition it has (already there) and UNKNOWN_TOPIC_OR_PARTITION for one
it has not.
"""

from __future__ import annotations

import os
from typing import Any

from kgroup.broker.data.context import NOT_LEADER, DataContext, log, per_partition_keyed
from kgroup.broker.internal_topics import is_internal
from kgroup.storage import OffsetOutOfRangeError, StorageError
from kgroup.storage.errors import TopicError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item
from kgroup.error_codes import ErrorCode

HIGH_WATERMARK = -1


def delete_records(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The DeleteRecords response."""

    def answer(topic: str, p: Any) -> dict:
        code, low = _delete_before(ctx, topic, int(p.partition_index), int(p.offset))
        return dict(partition_index=int(p.partition_index), low_watermark=low, error_code=code)

    cls = response_class(header.api_key, header.api_version)
    # Kafka keys the request by partition: a topic named twice is answered once with the
    # partitions of both (a partition named twice: its last offset, answered once).
    return build(cls, throttle_time=0, topics=per_partition_keyed(cls, request.topics, answer))


def _delete_before(ctx: DataContext, topic: str, index: int, wanted: int) -> tuple[ErrorCode, int]:
    """(error, new low watermark) of one partition's DeleteRecords."""
    if is_internal(topic):
        return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
    try:
        plog = ctx.data.partition_log(topic, index)
        target = plog.log_end_offset if wanted == HIGH_WATERMARK else wanted
        if target < 0:
            return ErrorCode.OFFSET_OUT_OF_RANGE, -1
        low = plog.delete_records_before(target)
    except TopicError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    except NOT_LEADER:
        # In a cluster, another node leads it (Kafka: DeleteRecords goes to the leader).
        return ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
    except StorageError as exc:
        log.error("delete records of %s-%d failed in storage: %s", topic, index, exc)
        return ErrorCode.KAFKA_STORAGE_ERROR, -1
    log.info("deleted records of %s-%d before %d", topic, index, low)
    return ErrorCode.NONE, low


def describe_log_dirs(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The DescribeLogDirs response."""
    cls = response_class(header.api_key, header.api_version)
    result_cls = item(cls, "results")
    topic_cls = item(result_cls, "topics")
    part_cls = item(topic_cls, "partitions")
    logs = ctx.data.partition_logs()
    wanted: dict[str, set[int] | None]
    if request.topics is None:
        wanted = {name: None for name in ctx.data.topics()}
    else:
        wanted = {}
        for t in request.topics:
            wanted.setdefault(t.topic, set()).update(int(p) for p in t.partitions)
    topics = []
    for name in sorted(wanted):
        parts = [build(part_cls, partition_index=p, partition_size=plog.size_bytes, offset_lag=0,
                       is_future_key=False)
                 for (t, p), plog in sorted(logs.items())
                 if t == name and (wanted[name] is None or p in wanted[name])]
        if parts:
            topics.append(build(topic_cls, name=name, partitions=tuple(parts)))
    try:
        stat = os.statvfs(ctx.data.path)
        total, usable = stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize
    except OSError:
        total = usable = -1
    result = build(result_cls, error_code=ErrorCode.NONE, log_dir=str(os.path.abspath(ctx.data.path)),
                   topics=tuple(topics), total_bytes=total, usable_bytes=usable)
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, results=(result,))


def alter_replica_log_dirs(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    """The AlterReplicaLogDirs response (one result per topic named, in the order named)."""
    cls = response_class(header.api_key, header.api_version)
    topic_cls = item(cls, "results")
    part_cls = item(topic_cls, "partitions")
    here = os.path.abspath(ctx.data.path)
    topics = ctx.data.topics()
    answers: dict[str, dict[int, ErrorCode]] = {}
    for d in request.dirs:
        mine = os.path.abspath(d.path) == here
        for t in d.topics:
            meta = topics.get(t.name)
            for p in t.partitions:
                known = meta is not None and 0 <= int(p) < meta.partitions
                answers.setdefault(t.name, {})[int(p)] = (
                    ErrorCode.LOG_DIR_NOT_FOUND if not mine
                    else ErrorCode.NONE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return build(cls, throttle_time=0, results=tuple(
        build(topic_cls, topic_name=name, partitions=tuple(build(part_cls, partition_index=p, error_code=code)
                                                           for p, code in parts.items()))
        for name, parts in answers.items()))


class RecordsApi:
    """DeleteRecords and DescribeLogDirs over the data path's context."""

    def __init__(self, ctx: DataContext) -> None:
        self.ctx = ctx

    async def delete_records(self, header: RequestHeader, request: Any) -> Any:
        return delete_records(self.ctx, header, request)

    async def describe_log_dirs(self, header: RequestHeader, request: Any) -> Any:
        return describe_log_dirs(self.ctx, header, request)

    async def alter_replica_log_dirs(self, header: RequestHeader, request: Any) -> Any:
        return alter_replica_log_dirs(self.ctx, header, request)
