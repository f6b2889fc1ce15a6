"""The columns of the kgroup source and sink, and records to Arrow and back.

The source has the columns of Spark's Kafka source (``headers`` as with its
includeHeaders=true: null for a record without headers). The sink takes ``value`` (binary or
string) and optionally ``key``, ``topic``, ``partition`` and ``headers``, as Spark's Kafka
sink does. Records cross into Spark as Arrow record batches, built column by column: far
cheaper than one Python tuple per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SOURCE_DDL = ("key binary, value binary, topic string, partition int, offset bigint, "
              "timestamp timestamp, timestampType int, "
              "headers array<struct<key:string,value:binary>>")

SINK_COLUMNS = ("key", "value", "topic", "partition", "headers")

_ARROW_SCHEMA: Any = None
_SHARE_ARROW_SCHEMA: Any = None


def source_schema() -> Any:
    """The source's StructType (built by hand: parsing SOURCE_DDL needs a SparkContext,
    which a task does not have)."""
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType,
                                   StructField, StructType, TimestampType)

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    return StructType([
        StructField("key", BinaryType()), StructField("value", BinaryType()),
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField("headers", ArrayType(header)),
    ])


def arrow_schema() -> Any:
    """The Arrow schema Spark expects the source's batches in (timestamps in UTC)."""
    global _ARROW_SCHEMA
    if _ARROW_SCHEMA is None:
        from pyspark.sql.pandas.types import to_arrow_schema

        _ARROW_SCHEMA = to_arrow_schema(source_schema(), timezone="UTC")
    return _ARROW_SCHEMA


def records_to_arrow(records: Sequence[Any], topic: str, partition: int) -> Any:
    """One Arrow record batch of ``ConsumerRecord``s of one partition (the per-record
    path; the source reads ``columns_to_arrow``'s, which tests compare with this)."""
    n = len(records)
    return _arrow_batch(arrow_schema(), [r.key for r in records], [r.value for r in records],
                        [topic] * n, [partition] * n, [r.offset for r in records],
                        [r.timestamp for r in records], [r.timestamp_type for r in records],
                        [r.headers for r in records])


def columns_to_arrow(columns: Any, topic: str, partition: int) -> Any:
    """One Arrow record batch of ``RecordColumns`` (``kgroup.client.record_columns``) of one
    partition: the fetched columns as they are, no Python object per record."""
    import numpy as np
    import pyarrow as pa

    schema = arrow_schema()
    n = len(columns)
    name = topic.encode()
    topics = pa.Array.from_buffers(pa.string(), n, [
        None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * len(name)), pa.py_buffer(name * n)])
    headers_type = schema.field("headers").type
    if columns.headers is None:
        header_column = pa.nulls(n, type=headers_type)
    else:  # a record without headers has null headers, as in Spark's Kafka source
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] if h else None
                                  for h in columns.headers], type=headers_type)
    stamps = pa.array(columns.timestamps, type=pa.timestamp("ms", tz="UTC"))
    return pa.RecordBatch.from_arrays([
        columns.keys, columns.values, topics,
        pa.array(np.full(n, partition, np.int32)),
        pa.array(columns.offsets),
        stamps.cast(schema.field("timestamp").type),
        pa.array(columns.timestamp_types),
        header_column,
    ], schema=schema)


def share_rows_to_arrow(rows: Sequence[tuple]) -> Any:
    """One Arrow record batch of format("kgroup-share") rows: (topic, partition, offset,
    timestamp ms, key, value, headers, delivery count)."""
    import pyarrow as pa

    global _SHARE_ARROW_SCHEMA
    if _SHARE_ARROW_SCHEMA is None:
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import IntegerType, StructField, StructType

        fields = source_schema().fields + [StructField("deliveryCount", IntegerType())]
        _SHARE_ARROW_SCHEMA = to_arrow_schema(StructType(fields), timezone="UTC")
    topics, partitions, offsets, stamps, keys, values, headers, counts = zip(*rows)
    return _arrow_batch(_SHARE_ARROW_SCHEMA, keys, values, topics, partitions, offsets, stamps,
                        [0] * len(rows), headers, [pa.array(counts, type=pa.int32())])


def _arrow_batch(schema: Any, keys: Sequence[Any], values: Sequence[Any], topics: Sequence[str],
                 partitions: Sequence[int], offsets: Sequence[int], millis: Sequence[int],
                 types: Sequence[int], headers: Sequence[Any], extra: Sequence[Any] = ()) -> Any:
    """The source's columns (and ``extra`` ones after them) as one Arrow record batch."""
    import pyarrow as pa

    n = len(keys)
    headers_type = schema.field("headers").type
    # A record without headers has null headers, as in Spark's Kafka source.
    if any(headers):
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] if h else None
                                  for h in headers], type=headers_type)
    else:
        header_column = pa.nulls(n, type=headers_type)
    stamps = pa.array(millis, type=pa.timestamp("ms", tz="UTC"))
    columns = [
        pa.array(keys, type=pa.binary()),
        pa.array(values, type=pa.binary()),
        pa.array(topics, type=pa.string()),
        pa.array(partitions, type=pa.int32()),
        pa.array(offsets, type=pa.int64()),
        stamps.cast(schema.field("timestamp").type),
        pa.array(types, type=pa.int32()),
        header_column,
        *extra,
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# -- the sink --------------------------------------------------------------------------------


def check_sink_schema(schema: Any, default_topic: str | None) -> None:
    """The DataFrame written must have the sink's columns with the right types."""
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, ShortType,
                                   StringType, StructType)

    from .options import OptionError

    fields = {f.name: f.dataType for f in schema.fields}
    unknown = sorted(set(fields) - set(SINK_COLUMNS))
    if unknown:
        raise OptionError(f"the kgroup sink writes columns {', '.join(SINK_COLUMNS)}; "
                          f"the DataFrame also has {', '.join(unknown)} (select the columns "
                          "to write)")
    if "value" not in fields:
        raise OptionError("the kgroup sink needs a value column (binary or string)")
    for name in ("key", "value"):
        if name in fields and not isinstance(fields[name], (BinaryType, StringType)):
            raise OptionError(f"column {name} must be binary or string, not "
                              f"{fields[name].simpleString()}")
    if "topic" in fields and not isinstance(fields["topic"], StringType):
        raise OptionError(f"column topic must be a string, not {fields['topic'].simpleString()}")
    if "topic" not in fields and default_topic is None:
        raise OptionError("the kgroup sink needs option topic or a topic column")
    if "partition" in fields and not isinstance(fields["partition"],
                                                (IntegerType, LongType, ShortType)):
        raise OptionError("column partition must be an integer, not "
                          f"{fields['partition'].simpleString()}")
    if "headers" in fields:
        h = fields["headers"]
        ok = (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
              and [f.name for f in h.elementType.fields] == ["key", "value"]
              and isinstance(h.elementType.fields[0].dataType, StringType)
              and isinstance(h.elementType.fields[1].dataType, (BinaryType, StringType)))
        if not ok:
            raise OptionError("column headers must be array<struct<key:string,value:binary>>, "
                              f"not {h.simpleString()}")
