"""The sink: ``df.write.format("kgroup")`` and ``df.writeStream.format("kgroup")``.

How this works: every Spark task runs kgroup's ``Producer`` (acks=all unless
``kafka.acks`` says otherwise) on a ``LoopThread`` and sends its rows as Arrow batches
arrive: ``value``, and ``key``, ``headers`` and ``partition`` when the DataFrame has them,
to the row's ``topic`` column or else the ``topic`` option; without a partition the
producer's partitioner picks one (murmur2 of the key, as Kafka's). While one batch is on
its way the task sends the next, and waits for every acknowledgement before it reports.
Rows become record batches in the producer's bulk path (``Producer.send_columns``: Arrow
columns to Kafka batches with numpy, no Python object per row), one topic at a time.
A task's commit message counts what it wrote per topic partition; a failed send fails the
task (and Spark retries it: the sink is at-least-once, as Spark's Kafka sink is).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)

from kgroup.client import BatchMetadata, Producer
from kgroup.client.blocking import LoopThread

from .options import OptionError, SinkOptions

log = logging.getLogger(__name__)


@dataclass
class SinkCommitMessage(WriterCommitMessage):
    """What one task wrote: record counts per (topic, partition)."""

    counts: dict[tuple[str, int], int] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(self.counts.values())


def total(messages: list[Any]) -> dict[tuple[str, int], int]:
    """Counts per (topic, partition) over every task's message."""
    out: dict[tuple[str, int], int] = {}
    for m in messages:
        if isinstance(m, SinkCommitMessage):
            for tp, n in m.counts.items():
                out[tp] = out.get(tp, 0) + n
    return out


def write_batches(opts: SinkOptions, batches: Iterator[Any]) -> SinkCommitMessage:
    """Produce every row of ``batches``; returns the counts once all are acknowledged."""
    loop = LoopThread("kgroup-spark-write")
    settings = {"client.id": "kgroup-spark-sink", "acks": -1, "batch.size": 262_144,
                **opts.producer, "bootstrap.servers": opts.bootstrap}
    producer = Producer(settings)
    message = SinkCommitMessage()

    async def send(batch: Any) -> list[asyncio.Future[BatchMetadata]]:
        futures = []
        for topic, rows in by_topic(batch, opts.topic):
            names = rows.schema.names
            futures += await producer.send_columns(
                topic, rows.column("value"), *(rows.column(c) if c in names else None
                                               for c in ("key", "headers", "partition")))
        return futures

    async def settle(futures: list[asyncio.Future[BatchMetadata]]) -> None:
        for md in await asyncio.gather(*futures):
            tp = (md.topic, md.partition)
            message.counts[tp] = message.counts.get(tp, 0) + md.count

    try:
        loop.run(producer.start())
        in_flight: list[asyncio.Future[BatchMetadata]] = []
        for batch in batches:
            sent = loop.run(send(batch))
            loop.run(settle(in_flight))
            in_flight = sent
        loop.run(producer.flush())
        loop.run(settle(in_flight))
    finally:
        try:
            loop.run(producer.stop(), timeout=30)
        finally:
            loop.close()
    return message


def by_topic(batch: Any, default: str | None) -> list[tuple[str, Any]]:
    """The rows of an Arrow batch per topic: its topic column's, null or absent: ``default``."""
    if "topic" not in batch.schema.names:
        if default is None:
            raise OptionError("the sink has no topic option and the rows no topic column")
        return [(default, batch)] if batch.num_rows else []
    import pyarrow.compute as pc

    topics = batch.column("topic")
    if topics.null_count:
        if default is None:
            raise OptionError("a row has no topic: its topic column is null and the sink "
                              "has no topic option")
        topics = pc.fill_null(topics, default)
    names = pc.unique(topics).to_pylist()
    if len(names) == 1:
        return [(names[0], batch)]
    return [(name, batch.filter(pc.equal(topics, name))) for name in names]


class KgroupWriter(DataSourceArrowWriter):
    """df.write.format("kgroup")."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[Any]) -> None:
        counts = total(messages)
        log.info("kgroup sink wrote %d records to %d partitions", sum(counts.values()),
                 len(counts))

    def abort(self, messages: list[Any]) -> None:
        counts = total(messages)
        log.warning("kgroup sink: the write failed after %d records were acknowledged "
                    "(they stay in the topic)", sum(counts.values()))


class KgroupStreamWriter(DataSourceStreamArrowWriter):
    """df.writeStream.format("kgroup")."""

    def __init__(self, opts: SinkOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> SinkCommitMessage:
        return write_batches(self.opts, iterator)

    def commit(self, messages: list[Any], batchId: int) -> None:
        counts = total(messages)
        log.info("kgroup sink: micro-batch %d wrote %d records", batchId, sum(counts.values()))

    def abort(self, messages: list[Any], batchId: int) -> None:
        counts = total(messages)
        log.warning("kgroup sink: micro-batch %d failed after %d records were acknowledged; "
                    "Spark retries it (at-least-once)", batchId, sum(counts.values()))
