"""PySpark source and sink throughput: rows/s read from topics of 1 and 4 partitions, and
rows/s written through the sink.

    .venv/bin/python bench/spark_io.py                  # starts its own kgroup serve (fsync=never)
    .venv/bin/python bench/spark_io.py --peer tansu     # the same source/sink against Tansu too
    .venv/bin/python bench/spark_io.py --bootstrap HOST:PORT

Records: --records (default 200,000) of 100-byte values with 8-byte keys. Reads are batch
reads of the whole topic on local[2] that touch every value (sum of lengths), so the rows
really cross from the source into Spark; the sink writes a DataFrame of the same shape to a
new topic each run (acks=all). Medians of --runs runs, wall clock, Spark start-up excluded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

import peers
from kgroup.client import AdminClient, Producer

VALUE = b"x" * 100


async def fill(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.create_topics({topic: partitions})
    async with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 262_144,
                         "acks": "1"}) as producer:
        for i in range(records):
            await producer.send(topic, VALUE, f"{i:08d}".encode(), partition=i % partitions)
        await producer.flush()


def session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kgroup.spark

    spark = (SparkSession.builder.master("local[2]").appName("kgroup-spark-io-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kgroup.spark.register(spark)
    return spark


def measure(spark, bootstrap: str, records: int, runs: int, tag: str) -> dict[str, float]:
    from pyspark.sql import functions as F

    out: dict[str, float] = {}
    for partitions in (1, 4):
        topic = f"bench-read-{tag}-{partitions}"
        asyncio.run(fill(bootstrap, topic, partitions, records))
        rates = []
        for _ in range(runs):
            started = time.perf_counter()
            df = (spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest").load())
            rows, size = df.agg(F.count("*"), F.sum(F.length("value"))).first()
            took = time.perf_counter() - started
            assert rows and size == 100 * rows, (rows, size)
            if rows != records:
                # Seen with Tansu 0.6: its end offsets stop short of what it acknowledged.
                print(f"  note: {tag} {topic}: the broker's end offsets cover {rows:,} of the "
                      f"{records:,} records it acknowledged; rates count rows read")
            rates.append(rows / took)
        out[f"read, {partitions} partition{'s' if partitions > 1 else ''} (rows/s)"] = peers.median(rates)
    rates = []
    source = spark.range(records).selectExpr("lpad(cast(id as string), 8, '0') as key",
                                             f"repeat('x', 100) as value").cache()
    source.count()
    for run in range(runs):
        topic = f"bench-sink-{tag}-{run}"
        asyncio.run(_create(bootstrap, topic, 4))
        started = time.perf_counter()
        (source.write.format("kgroup").mode("append").option("kafka.bootstrap.servers", bootstrap)
         .option("topic", topic).save())
        rates.append(records / (time.perf_counter() - started))
    out["sink, 4 partitions (rows/s)"] = peers.median(rates)
    return out


async def _create(bootstrap: str, topic: str, partitions: int) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.create_topics({topic: partitions})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(parser)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    runs = peers.runs(args)
    spark = session()
    results: dict[str, dict[str, float]] = {}
    try:
        for side in peers.sides(args):
            with peers.broker(args, side, peers.toml_config(fsync="never")) as b:
                results[side] = measure(spark, b.bootstrap, args.records, runs, side)
    finally:
        spark.stop()
    rows = [(name, {side: results[side][name] for side in results}) for name in next(iter(results.values()))]
    peers.print_table(f"PySpark source/sink, {args.records:,} x 100-byte rows, local[2], median of {runs}",
                      rows, list(results))


if __name__ == "__main__":
    main()
