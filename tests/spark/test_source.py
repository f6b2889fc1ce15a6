"""The kgroup source on a real local Spark and a real `kgroup serve`: batch and streaming
reads of a 100,000-record topic, offsets checkpointed by Spark, progress committed to a
consumer group, and options checked up front."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from kgroup.client.blocking import BlockingAdmin
from tests.spark.topics import create, expected, produce

N = 100_000


def read(spark, broker, **options):
    reader = spark.read.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def as_records(rows) -> dict[tuple[int, int], tuple]:
    return {(r.partition, r.offset): (bytes(r.key), bytes(r.value),
                                      tuple((h.key, bytes(h.value)) for h in r.headers or ()))
            for r in rows}


def test_a_batch_read_returns_every_record_with_its_content(spark, broker):
    create(broker.bootstrap, "batch100k", 4)
    produce(broker.bootstrap, "batch100k", 4, 0, N)
    df = read(spark, broker, subscribe="batch100k")
    assert df.rdd.getNumPartitions() >= 4  # one task per partition at least
    rows = df.select("key", "value", "headers", "partition", "offset").collect()
    assert len(rows) == N
    assert as_records(rows) == expected(4, N)
    first = df.where("offset = 0 and partition = 0").collect()[0]
    assert first.topic == "batch100k" and first.timestampType == 0
    assert first.timestamp is not None


def test_a_batch_read_between_json_offsets_of_assigned_partitions(spark, broker):
    create(broker.bootstrap, "ranges", 3)
    produce(broker.bootstrap, "ranges", 3, 0, 300)
    df = read(spark, broker, assign='{"ranges": [0, 2]}',
              startingOffsets='{"ranges": {"0": 10, "2": -2}}',
              endingOffsets='{"ranges": {"0": 20, "2": -1}}')
    got = {(r.partition, r.offset) for r in df.select("partition", "offset").collect()}
    assert got == {(0, o) for o in range(10, 20)} | {(2, o) for o in range(100)}
    # maxRecordsPerPartition cuts one partition's range into several tasks.
    df = read(spark, broker, subscribe="ranges", maxRecordsPerPartition="30")
    assert df.rdd.getNumPartitions() == 3 * 4
    assert df.count() == 300


def test_a_stream_with_available_now_writes_each_record_once_and_resumes(spark, broker, tmp_path):
    create(broker.bootstrap, "stream100k", 4)
    produce(broker.bootstrap, "stream100k", 4, 0, N)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run() -> list[int]:
        df = (spark.readStream.format("kgroup")
              .option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", "stream100k").option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 40_000).load())
        query = (df.select("partition", "offset", "key", "value").writeStream.format("parquet")
                 .option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

    batches = run()
    assert len(batches) >= 3 and sum(batches) == N and max(batches) <= 40_000
    table = pq.read_table(out).to_pylist()
    assert len(table) == N
    want = expected(4, N)
    assert {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in table} == \
        {k: v[:2] for k, v in want.items()}

    produce(broker.bootstrap, "stream100k", 4, N, 1000)
    assert sum(run()) == 1000  # only the new records
    table = pq.read_table(out).to_pylist()
    assert len(table) == N + 1000
    assert {(r["partition"], r["offset"]) for r in table} == set(expected(4, N + 1000))


def test_group_id_commits_the_last_processed_offsets_after_each_batch(spark, broker):
    create(broker.bootstrap, "committed", 4)
    produce(broker.bootstrap, "committed", 4, 0, 8000)
    seen: list[tuple[int, dict, dict]] = []

    def batch(df, batch_id):
        ends = {("committed", r.partition): r.end for r in
                df.groupBy("partition").agg({"offset": "max"}).toDF("partition", "end")
                .collect()}
        with BlockingAdmin(broker.bootstrap) as admin:
            committed = admin.group_offsets("spark-progress", {"committed": [0, 1, 2, 3]})
        seen.append((batch_id, {tp: end + 1 for tp, end in ends.items()}, committed))

    df = (spark.readStream.format("kgroup").option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribe", "committed").option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", 3000).option("group.id", "spark-progress").load())
    query = (df.writeStream.foreachBatch(batch).trigger(availableNow=True).start())
    query.awaitTermination()
    assert query.exception() is None
    assert len(seen) == 3
    # While batch n runs, the group holds what batch n-1 processed (every partition of it).
    processed: dict = {("committed", p): 0 for p in range(4)}
    for _, ends, committed in sorted(seen):
        assert committed == processed
        processed = {**processed, **ends}
    with BlockingAdmin(broker.bootstrap) as admin:
        final = admin.group_offsets("spark-progress", {"committed": [0, 1, 2, 3]})
    assert final == processed == {("committed", p): 2000 for p in range(4)}


BAD_OPTIONS = [
    ({"subscribe": "t"}, "option kafka.bootstrap.servers is missing"),
    ({"startingOffsets": "yesterday"}, "option startingOffsets: 'yesterday' is not"),
    ({"assign": '{"t": [0]}'}, "set exactly one of the options subscribe, subscribePattern and assign"),
    ({"startingOffsets": "latest"}, "option startingOffsets: 'latest' (-1) is not allowed in a batch"),
    ({"startingOffsets": '{"t": {"x": 1}}'}, "option startingOffsets: 'x' in 't' is not a partition"),
    ({"subscibe": "t"}, "unknown option 'subscibe'"),
    ({"kafka.linger.mss": "5"}, "option kafka.linger.mss: 'linger.mss' is not a setting"),
    ({"group.mode": "leader"}, "option group.mode: 'leader' is not a mode"),
]


@pytest.mark.parametrize("options,message", BAD_OPTIONS)
def test_a_bad_option_is_named_in_the_error(spark, broker, options, message):
    reader = spark.read.format("kgroup")
    base = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "t"}
    if "kafka.bootstrap.servers is missing" in message:
        base.pop("kafka.bootstrap.servers")
    for name, value in {**base, **options}.items():
        reader = reader.option(name, value)
    with pytest.raises(Exception) as info:
        reader.load().count()
    text = str(info.value)
    assert "OptionError: " + message in text
    # The error comes from checking the options, not from deep inside the client.
    assert "kgroup/client" not in text and "kgroup/spark/range_reader" not in text
