"""DescribeProducers: the producers each partition knows (KIP-664).

For each partition asked: its active producers from the partition's producer state (id,
epoch, last sequence, last timestamp, coordinator epoch of the last marker, first offset of
the open transaction or -1) -- what `kafka-transactions.sh describe-producers` prints and
what an operator reads to find a hanging transaction. As Kafka 4.4 answers (its wire
check): a partition of the topic named "" gets INVALID_TOPIC_EXCEPTION, one of a topic that
does not exist UNKNOWN_TOPIC_OR_PARTITION, each with the error's default message; a
partition a topic that exists lacks UNKNOWN_TOPIC_OR_PARTITION without one.
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.data.context import DataContext, log
from kgroup.storage import StorageError
from kgroup.storage.errors import TopicError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item
from kgroup.error_codes import ErrorCode

# The default messages of Kafka's errors, which its answer carries.
_INVALID_TOPIC_TEXT = "The request attempted to perform an operation on an invalid topic."
_UNKNOWN_TEXT = "This server does not host this topic-partition."


def describe_producers(ctx: DataContext, header: RequestHeader, request: Any) -> Any:
    cls = response_class(header.api_key, header.api_version)
    # The response's nested classes: topics, their partitions, their active producers.
    topic_cls, part_cls, producer_cls = _nested(cls, "topics", "partitions", "active_producers")
    topics = []
    for topic in request.topics:
        parts = []
        for index in topic.partition_indexes:
            index = int(index)
            if not topic.name:
                parts.append(build(part_cls, partition_index=index, error_code=ErrorCode.INVALID_TOPIC_EXCEPTION,
                                   error_message=_INVALID_TOPIC_TEXT, active_producers=()))
                continue
            try:
                plog = ctx.data.partition_log(topic.name, index)
                active = ctx.producers.of((topic.name, index), plog).active()
            except TopicError:
                # Kafka explains a partition of a topic it does not know (its metadata check), not
                # one missing from a topic it has (its replica manager's answer).
                parts.append(build(part_cls, partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                   error_message=None if _known(ctx, topic.name) else _UNKNOWN_TEXT,
                                   active_producers=()))
                continue
            except StorageError as exc:
                log.error("describe producers of %s-%d failed in storage: %s", topic.name, index, exc)
                parts.append(build(part_cls, partition_index=index, error_code=ErrorCode.KAFKA_STORAGE_ERROR,
                                   error_message=str(exc), active_producers=()))
                continue
            parts.append(build(part_cls, partition_index=index, error_code=ErrorCode.NONE, error_message=None,
                               active_producers=tuple(
                                   build(producer_cls, producer_id=p.producer_id, producer_epoch=p.epoch,
                                         last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                                         coordinator_epoch=p.coordinator_epoch,
                                         current_txn_start_offset=p.txn_first_offset)
                                   for p in active)))
        topics.append(build(topic_cls, name=topic.name, partitions=tuple(parts)))
    return build(cls, throttle_time=0, topics=tuple(topics))


def _known(ctx: DataContext, name: str) -> bool:
    try:
        ctx.data.topic(name)
    except TopicError:
        return False
    return True


def _nested(cls: type, *fields: str) -> list[type]:
    """The item classes of `cls`'s list field, of that class's, and so on."""
    out = []
    for name in fields:
        cls = item(cls, name)
        out.append(cls)
    return out


class ProducersApi:
    """DescribeProducers over the data path's partitions."""

    def __init__(self, ctx: DataContext) -> None:
        self.ctx = ctx

    async def describe_producers(self, header: RequestHeader, request: Any) -> Any:
        return describe_producers(self.ctx, header, request)
