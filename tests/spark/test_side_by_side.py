"""format("kgroup") beside Spark's own format("kafka") (spark-sql-kafka-0-10), on kgroup and
on Apache Kafka 4.4: the same batch read, the same streaming reads (micro-batches under a
processing-time trigger, and Trigger.AvailableNow) and the same writes give the same rows.
Normalization: Spark's connector has headers only with includeHeaders=true, which it is
given; nothing else differs."""

from __future__ import annotations

from collections import Counter

import pyarrow.parquet as pq
import pytest

from tests.spark.topics import create, produce

N = 3000
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def reader(spark, connector, bootstrap, topic, stream=False, **options):
    r = (spark.readStream if stream else spark.read).format(connector) \
        .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest")
    if connector == "kafka":
        r = r.option("includeHeaders", "true")
    for name, value in options.items():
        r = r.option(name, value)
    return r.load()


def rows(records):
    return Counter(tuple(_plain(r[c]) for c in COLUMNS) for r in records)


def _plain(v):
    if isinstance(v, (bytes, bytearray)):
        return bytes(v)
    if isinstance(v, list):
        return tuple((h["key"], bytes(h["value"]) if h["value"] is not None else None) for h in v)
    return v


@pytest.fixture
def topic(any_broker, request):
    name = "side-" + "".join(c if c.isalnum() else "-" for c in request.node.name[5:])[-60:]
    create(any_broker.bootstrap, name, 3)
    produce(any_broker.bootstrap, name, 3, 0, N)
    return name


def test_a_batch_read_gives_the_rows_of_sparks_connector(spark, any_broker, kafka_connector, topic):
    ours = reader(spark, "kgroup", any_broker.bootstrap, topic).select(*COLUMNS).collect()
    theirs = reader(spark, "kafka", any_broker.bootstrap, topic).select(*COLUMNS).collect()
    assert len(ours) == N
    assert rows(r.asDict() for r in ours) == rows(r.asDict() for r in theirs)


# Micro-batches on both brokers; AvailableNow on Kafka here (on kgroup: test_source.py's
# AvailableNow test for ours, test_lag.py for Spark's connector).
@pytest.mark.parametrize("any_broker, trigger", [("kgroup", "processing_time"), ("kafka", "processing_time"),
                                                 ("kafka", "available_now")], indirect=["any_broker"])
def test_a_stream_writes_the_rows_of_sparks_connector(spark, any_broker, kafka_connector, topic,
                                                      trigger, tmp_path):
    out = {}
    for connector in ("kgroup", "kafka"):
        df = reader(spark, connector, any_broker.bootstrap, topic, stream=True,
                    maxOffsetsPerTrigger=1000)
        writer = (df.select(*COLUMNS).writeStream.format("parquet")
                  .option("path", str(tmp_path / connector))
                  .option("checkpointLocation", str(tmp_path / f"ck-{connector}")))
        if trigger == "available_now":
            query = writer.trigger(availableNow=True).start()
            query.awaitTermination()
        else:
            query = writer.trigger(processingTime="100 milliseconds").start()
            query.processAllAvailable()
            query.stop()
        assert query.exception() is None
        batches = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
        assert sum(batches) == N and max(batches) <= 1000, (connector, batches)
        out[connector] = rows(pq.read_table(tmp_path / connector).to_pylist())
    assert sum(out["kgroup"].values()) == N
    assert out["kgroup"] == out["kafka"]


def test_our_sink_writes_what_sparks_sink_writes(spark, any_broker, kafka_connector):
    side = "kgroup" if hasattr(any_broker, "console") else "kafka"
    df = spark.createDataFrame(
        [(None if i % 9 == 0 else f"k{i}", f"value-{i}".encode(),
          [("i", str(i).encode())] if i % 4 == 0 else [], i % 2) for i in range(N)],
        "key string, value binary, headers array<struct<key:string,value:binary>>, partition int")
    written = {}
    for connector in ("kgroup", "kafka"):
        topic = f"side-sink-{connector}-{side}"
        create(any_broker.bootstrap, topic, 2)
        df.repartition(2).write.format(connector).mode("append") \
            .option("kafka.bootstrap.servers", any_broker.bootstrap).option("topic", topic).save()
        back = reader(spark, "kafka", any_broker.bootstrap, topic).collect()
        written[connector] = Counter((r.key and bytes(r.key), bytes(r.value), r.partition,
                                      _plain(r.headers)) for r in back)
    assert sum(written["kgroup"].values()) == N
    assert written["kgroup"] == written["kafka"]
