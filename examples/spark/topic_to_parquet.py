"""Copy a kgroup topic into Parquet with Spark, committing progress to a consumer group.

    .venv/bin/kgroup topics create orders --partitions 4
    seq 1 1000 | .venv/bin/kgroup produce orders
    .venv/bin/python examples/spark/topic_to_parquet.py --topic orders --group orders-to-parquet

A streaming query with Trigger.AvailableNow: it reads everything there is now, in
micro-batches of at most --max-per-batch records, writes each record once to --out, commits
each finished micro-batch to the group (so `kgroup groups describe orders-to-parquet` shows
its lag) and stops. Run it again later: from the checkpoint, it copies only what is new.
"""

from __future__ import annotations

import argparse
import os
import sys


def copy(spark, bootstrap: str, topic: str, group: str, out: str, max_per_batch: int = 10_000) -> int:
    """Copy what is new in ``topic`` to ``out``/data in ``spark``; how many records it holds."""
    import kgroup.spark

    kgroup.spark.register(spark)
    records = (spark.readStream.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
               .option("subscribe", topic).option("startingOffsets", "earliest")
               .option("maxOffsetsPerTrigger", max_per_batch).option("group.id", group).load())
    query = (records.selectExpr("partition", "offset", "timestamp", "cast(key as string) as key",
                                "cast(value as string) as value")
             .writeStream.format("parquet").option("path", os.path.join(out, "data"))
             .option("checkpointLocation", os.path.join(out, "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return spark.read.parquet(os.path.join(out, "data")).count()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KGROUP_BOOTSTRAP", "127.0.0.1:9092"),
                        help="the broker (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="orders-to-parquet")
    parser.add_argument("--out", default="orders-parquet")
    parser.add_argument("--max-per-batch", type=int, default=10_000)
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[*]").appName("kgroup-topic-to-parquet")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        count = copy(spark, args.bootstrap, args.topic, args.group, args.out, args.max_per_batch)
    finally:
        spark.stop()
    print(f"{args.out}/data holds {count} records of {args.topic}; progress committed to group {args.group}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
