"""The kgroup sink on a real local Spark and a real `kgroup serve`: rows written with
df.write and writeStream come back from the topic as they were written."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.spark.topics import create, produce

N = 10_000


def read_back(spark, broker, topic):
    rows = (spark.read.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic).load()
            .select("key", "value", "headers", "partition").collect())
    return Counter((bytes(r.key) if r.key is not None else None, bytes(r.value),
                    tuple((h.key, bytes(h.value)) for h in r.headers or ()), r.partition)
                   for r in rows)


def test_ten_thousand_rows_written_are_read_back_identical(spark, broker):
    create(broker.bootstrap, "sunk", 4)
    rows = []
    for i in range(N):
        key = None if i % 50 == 0 else f"key-{i}"
        headers = [("i", str(i).encode()), ("kind", b"even" if i % 2 == 0 else b"odd")] \
            if i % 7 == 0 else []
        rows.append((key, f"value-{i}".encode() * (1 + i % 3), headers, i % 4))
    df = spark.createDataFrame(
        rows, "key string, value binary, headers array<struct<key:string,value:binary>>, "
              "partition int")
    df.repartition(3).write.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap) \
        .option("topic", "sunk").mode("append").save()
    want = Counter((k.encode() if k is not None else None, v, tuple(h), p) for k, v, h, p in rows)
    assert read_back(spark, broker, "sunk") == want


def test_a_topic_column_and_the_producer_partitioner(spark, broker):
    create(broker.bootstrap, "left", 2)
    create(broker.bootstrap, "right", 2)
    df = spark.createDataFrame([(f"k{i}", f"v{i}", "left" if i % 2 else "right")
                                for i in range(200)], "key string, value string, topic string")
    df.write.format("kgroup").mode("append") \
        .option("kafka.bootstrap.servers", broker.bootstrap).save()
    left = read_back(spark, broker, "left")
    assert sorted(v for _, v, _, _ in left) == sorted(f"v{i}".encode() for i in range(1, 200, 2))
    assert sum(left.values()) == 100
    assert {p for _, _, _, p in left} == {0, 1}  # keys spread by murmur2
    assert sum(read_back(spark, broker, "right").values()) == 100


def test_a_stream_copies_a_topic_through_the_sink(spark, broker, tmp_path):
    create(broker.bootstrap, "copy-from", 2)
    create(broker.bootstrap, "copy-to", 2)
    produce(broker.bootstrap, "copy-from", 2, 0, 2000)
    source = (spark.readStream.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "copy-from").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 800).load())
    query = (source.selectExpr("key", "upper(cast(value as string)) as value", "headers",
                               "partition")
             .writeStream.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap)
             .option("topic", "copy-to").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    assert len([p for p in query.recentProgress if p["numInputRows"]]) == 3
    original = read_back(spark, broker, "copy-from")
    assert read_back(spark, broker, "copy-to") == Counter(
        {(k, v.upper(), h, p): n for (k, v, h, p), n in original.items()})


@pytest.mark.parametrize("columns,message", [
    ("key string, payload string", "the kgroup sink writes columns key, value, topic, partition, headers; the DataFrame also has payload"),
    ("key string", "the kgroup sink needs a value column"),
    ("value string", "the kgroup sink needs option topic or a topic column"),
    ("value int", "column value must be binary or string, not int"),
])
def test_a_bad_sink_dataframe_is_named_in_the_error(spark, broker, columns, message):
    df = spark.createDataFrame([], columns)
    writer = df.write.format("kgroup").mode("append") \
        .option("kafka.bootstrap.servers", broker.bootstrap)
    if "topic" not in message:
        writer = writer.option("topic", "t")
    with pytest.raises(Exception) as info:
        writer.save()
    assert "OptionError: " + message in str(info.value)


def test_the_write_path_is_read_back_exactly_by_confluent_kafka(any_broker):
    """The sink's bulk path without Spark (its task's `write_batches`, idempotent): librdkafka
    reads back every row, nulls and headers included, each on the partition Kafka's
    partitioner picks, in order within it."""
    import pyarrow as pa
    from confluent_kafka import Consumer, TopicPartition

    from kgroup.client.partitioner import partition_for_key
    from kgroup.spark.options import SinkOptions
    from kgroup.spark.sink import write_batches

    side = "kgroup" if hasattr(any_broker, "console") else "kafka"
    topic = f"sink-bulk-{side}"
    create(any_broker.bootstrap, topic, 3)
    rows = [(None if i % 5 == 0 else f"key-{i}", None if i % 11 == 0 and i % 5 else b"v%d" % i,
             [("h", None), ("n", b"%d" % i)] if i % 4 == 0 else [],
             i % 3 if i % 7 == 0 else None) for i in range(3000)]
    schema = pa.schema([("key", pa.string()), ("value", pa.binary()),
                        ("headers", pa.list_(pa.struct([("key", pa.string()),
                                                        ("value", pa.binary())]))),
                        ("partition", pa.int32())])
    table = pa.Table.from_pylist([dict(zip(schema.names, (k, v, [{"key": a, "value": b}
                                                                  for a, b in h], p)))
                                  for k, v, h, p in rows], schema)
    opts = SinkOptions(bootstrap=any_broker.bootstrap, topic=topic,
                       producer={"enable.idempotence": True, "batch.size": 16_384})
    assert write_batches(opts, iter(table.to_batches(max_chunksize=1000))).records == len(rows)

    consumer = Consumer({"bootstrap.servers": any_broker.bootstrap, "group.id": topic,
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
    got: dict[int, list[tuple]] = {0: [], 1: [], 2: []}
    try:
        while sum(map(len, got.values())) < len(rows):
            messages = consumer.consume(1000, timeout=10)
            assert messages, f"read {sum(map(len, got.values()))} of {len(rows)} rows"
            for m in messages:
                assert m.error() is None, m.error()
                got[m.partition()].append((m.key(), m.value(), m.headers() or []))
    finally:
        consumer.close()
    placed = {(k, v): p for p, recs in got.items() for k, v, _ in recs}
    want: dict[int, list[tuple]] = {0: [], 1: [], 2: []}
    for k, v, h, p in rows:
        key = k.encode() if k is not None else None
        if p is None and key is not None:
            p = partition_for_key(key, 3)
        want[placed[(key, v)] if p is None else p].append((key, v, h))
    assert got == want
