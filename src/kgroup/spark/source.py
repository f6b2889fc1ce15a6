"""The ``kgroup`` Spark data source: format("kgroup") for read, readStream, write and
writeStream, and the batch read.

A batch read resolves startingOffsets (default earliest) and endingOffsets (default
latest) on the driver, then reads each partition's range in Spark tasks, a large range cut
into several tasks (``offsets.split``) so one big partition still uses every core.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from .offsets import DataLossError, OffsetRange, split
from .options import OptionError, check_batch, check_stream, sink_options, source_options
from .schema import SOURCE_DDL, check_sink_schema
from .stream import KgroupStreamReader, RangePartition


class KgroupDataSource(DataSource):
    """format("kgroup"); see ``kgroup.spark`` for the options."""

    @classmethod
    def name(cls) -> str:
        return "kgroup"

    def schema(self) -> str:
        source_options(self.options)  # a bad option fails at load(), before any query runs
        return SOURCE_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        opts = source_options(self.options)
        check_batch(opts)
        return KgroupBatchReader(opts)

    def streamReader(self, schema: Any) -> KgroupStreamReader:
        opts = source_options(self.options)
        check_stream(opts)
        return KgroupStreamReader(opts)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from .sink import KgroupWriter

        opts = sink_options(self.options)
        _check_write(schema, overwrite, opts.topic)
        return KgroupWriter(opts)

    def streamWriter(self, schema: Any, overwrite: bool) -> Any:
        from .sink import KgroupStreamWriter

        opts = sink_options(self.options)
        _check_write(schema, overwrite, opts.topic)
        return KgroupStreamWriter(opts)


def _check_write(schema: Any, overwrite: bool, topic: str | None) -> None:
    if overwrite:
        raise OptionError("the kgroup sink appends to topics; use mode('append')")
    check_sink_schema(schema, topic)


class KgroupBatchReader(DataSourceReader):
    """spark.read.format("kgroup"): fixed offset ranges, planned once."""

    def __init__(self, opts: Any) -> None:
        self.opts = opts

    def partitions(self) -> list[InputPartition]:
        # Planning is the driver's: its modules are not loaded where a task unpickles this.
        from kgroup.client.admin import EARLIEST, LATEST
        from kgroup.client.blocking import BlockingAdmin

        from .topics import log_offsets, partitions, resolve

        opts = self.opts
        with BlockingAdmin(opts.bootstrap, client_id="kgroup-spark-plan", config=opts.consumer) as admin:
            tps = partitions(admin, opts, must_exist=True)
            earliest = log_offsets(admin, tps, EARLIEST)
            latest = log_offsets(admin, tps, LATEST)
        starts = resolve(opts.starting, "earliest", EARLIEST, tps, earliest, latest)
        ends = resolve(opts.ending, "latest", LATEST, tps, earliest, latest)
        ranges = []
        for tp in tps:
            lo, hi = starts[tp], ends[tp]
            if hi > latest[tp]:
                raise OptionError(f"option endingOffsets: {tp[0]}-{tp[1]} ends at {hi} but "
                                  f"its log ends at {latest[tp]}")
            if lo > hi:
                raise OptionError(f"option startingOffsets: {tp[0]}-{tp[1]} starts at {lo}, "
                                  f"after its end {hi}")
            if lo < earliest[tp]:
                if opts.fail_on_data_loss:
                    raise DataLossError(f"{tp[0]}-{tp[1]}: offsets {lo} to {earliest[tp] - 1} "
                                        "are no longer in the log")
                lo = min(earliest[tp], hi)
            ranges.append(OffsetRange(tp[0], tp[1], lo, hi))
        pieces = split(ranges, opts.min_partitions, opts.max_records_per_partition)
        return [RangePartition(r) for r in pieces]

    def read(self, partition: InputPartition) -> Any:
        if not isinstance(partition.value, OffsetRange):  # no ranges: Spark's one empty task
            return iter(())
        from .range_reader import read_range  # the task's side: numpy, Arrow, the consumer

        return read_range(self.opts, partition.value)
