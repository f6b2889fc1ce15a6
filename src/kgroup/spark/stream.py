"""The streaming read: ``spark.readStream.format("kgroup")``.

How this works: Spark keeps the stream reader in a Python process of its own on the
driver for the whole query and asks it, per micro-batch, for the latest offset (with the
read limit of maxOffsetsPerTrigger), then for the partitions between two offsets; tasks
read those ranges (``range_reader``). The offsets are the JSON-able dicts of
``offsets.stream_offset``; Spark checkpoints them, so a restarted query continues where
its checkpoint says. With Trigger.AvailableNow the latest offsets of every partition are
taken once, when the query starts, and no micro-batch reads past them.

Committing (``group.id``): Spark calls ``commit(end)`` only after it has planned the next
micro-batch, so a query's last batch would never be committed. But Spark runs one
micro-batch at a time and asks for the next latest offset only after the previous batch is
done (its commit log written), with the previous end as ``start``. So ``latestOffset``
commits ``start`` first: the group's committed offsets equal the query's processed offsets
as soon as a micro-batch is done. Without group.mode this is a commit without membership
(a group of its own, with no other members); with ``group.mode=member`` it is the
member's commit (``membership``).

Delivery: Spark's checkpoint decides what a query reads, so a query restarted from its
checkpoint into a sink that writes each micro-batch once (files, Parquet) gets every
record exactly once. Group mode is at least once; ``membership`` says which duplicates
can occur and how many.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)

from .driver_side import DriverSide
from .offsets import ranges_between, split
from .options import SourceOptions

if TYPE_CHECKING:
    from .stream_planner import StreamPlanner


class RangePartition(InputPartition):
    """One Spark task: an ``OffsetRange``."""


class KgroupStreamReader(DriverSide["StreamPlanner"], DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Spark's stream reader for format("kgroup"); see the module comment.

    Spark also pickles this object into its tasks (which only call ``read``), so the
    driver-side state (``driver``, a ``StreamPlanner``) is made on first use and never
    pickled.
    """

    opts: SourceOptions

    def _make_driver(self) -> StreamPlanner:
        # Imported here: the planner's modules (the admin client, group membership) are
        # the driver's; a task's Python worker unpickling this reader never loads them.
        from .stream_planner import StreamPlanner

        return StreamPlanner(self.opts)

    def initialOffset(self) -> dict:
        return self.driver.initial()

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self.driver.prepare_available_now()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        return self.driver.latest(start, limit)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        pieces = split(ranges_between(start, end), self.opts.min_partitions,
                       self.opts.max_records_per_partition)
        return [RangePartition(r) for r in pieces]

    def read(self, partition: InputPartition) -> Any:
        # Imported here: the reader's driver side (the process Spark starts for every
        # streaming query) never reads, and numpy, Arrow and the consumer would be most of
        # its import time, paid before the query's first micro-batch.
        from .range_reader import read_range

        return read_range(self.opts, partition.value)

    def commit(self, end: dict) -> None:
        self.driver.completed(end)
