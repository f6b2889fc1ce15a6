"""PySpark connectors side by side: format("kgroup") and Spark's own format("kafka")
(spark-sql-kafka-0-10, from `make spark`), on kgroup and on Apache Kafka 4.4.

    .venv/bin/python bench/spark_io.py                       # kgroup serve and Kafka 4.4, both connectors
    .venv/bin/python bench/spark_io.py --brokers kgroup      # one broker
    .venv/bin/python bench/spark_io.py --bootstrap HOST:PORT # a running broker instead of kgroup serve

One SparkSession (local[2], the same settings for both connectors) with both connectors.
Per broker: --records (default 200,000) records of 100-byte values with 8-byte keys in a
topic of 4 partitions and one of 1 partition. Measured, rows per second, wall clock:

- batch read: the whole topic, touching every value (count and sum of lengths);
- stream, micro-batches: readStream from earliest with maxOffsetsPerTrigger = records/4
  (4 micro-batches) into the noop sink (length of every value), from start() until
  processAllAvailable() returns ("start to end"), and within the micro-batches (the sum of
  their triggerExecution times: the steady state, without starting and stopping the query);
- stream, AvailableNow: the same with Trigger.AvailableNow, until the query ends;
- sink: a cached DataFrame of the same shape written to a new 4-partition topic;
- a longer topic (--long-records, default 2,000,000, 0 skips it): a batch read, and streams
  from start() to the end, micro-batches of a quarter of it and AvailableNow; where the
  fixed costs of a query (below) weigh less against the rows read;
- a query's fixed cost, in seconds: an AvailableNow query over a topic of 8 records, from
  start() to the end, for each connector and for a Python data source that reads one row
  and does nothing else (what any Python data source's streaming query pays on this
  PySpark before and after its batches: Spark starts a Python process for its stream
  reader, which imports pyspark).

Runs are interleaved (each run measures both connectors, alternating which goes first), and
medians of --runs (default 3) are printed, with the load average of the machine during the
run. Our broker (kgroup serve, fsync=never) and Kafka (ReferenceKafka with benchmark JVM
settings) run one at a time, so they do not compete for the cores.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import peers
from kgroup.client import AdminClient, Producer

VALUE = b"x" * 100
CONNECTORS = ("kgroup", "kafka")
# The reference Kafka with a JVM sized for throughput (the test settings start fast instead).
KAFKA_JVM = ("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-Djava.awt.headless=true")


async def fill(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    await create(bootstrap, topic, partitions)
    async with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 262_144,
                         "acks": "1"}) as producer:
        for i in range(records):
            await producer.send(topic, VALUE, f"{i:08d}".encode(), partition=i % partitions)
        await producer.flush()


async def fill_columns(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    """The same records as ``fill``, through the producer's bulk path (a long topic fills in
    seconds instead of minutes)."""
    import pyarrow as pa

    await create(bootstrap, topic, partitions)
    async with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 262_144,
                         "acks": "1"}) as producer:
        for lo in range(0, records, 50_000):
            ids = range(lo, min(records, lo + 50_000))
            sent = await producer.send_columns(
                topic, pa.array([VALUE] * len(ids), pa.binary()),
                pa.array([f"{i:08d}".encode() for i in ids], pa.binary()),
                partitions=pa.array([i % partitions for i in ids], pa.int32()))
            await asyncio.gather(*sent)


async def create(bootstrap: str, topic: str, partitions: int) -> None:
    async with AdminClient(bootstrap) as admin:
        await admin.create_topics({topic: partitions})


def session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kgroup.spark
    from kgroup.spark.connector import kafka_connector_jars, kafka_connector_unavailable

    why = kafka_connector_unavailable()
    if why:
        sys.exit(f"bench/spark_io.py: {why}")
    spark = (SparkSession.builder.master("local[2]").appName("kgroup-spark-io-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4")
             .config("spark.jars", ",".join(kafka_connector_jars())).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kgroup.spark.register(spark)
    return spark


def _read(spark, connector: str, bootstrap: str, topic: str, stream: bool = False):
    r = (spark.readStream if stream else spark.read).format(connector) \
        .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic) \
        .option("startingOffsets", "earliest")
    return r


def batch_read(spark, connector: str, bootstrap: str, topic: str, records: int) -> float:
    from pyspark.sql import functions as F

    started = time.perf_counter()
    rows, size = _read(spark, connector, bootstrap, topic).load() \
        .agg(F.count("*"), F.sum(F.length("value"))).first()
    took = time.perf_counter() - started
    assert rows == records and size == 100 * rows, (connector, rows, size)
    return rows / took


def stream_read(spark, connector: str, bootstrap: str, topic: str, records: int,
                available_now: bool, scratch: str) -> tuple[float, float]:
    """(rows/s from start() to the end, rows/s within the micro-batches' triggers)."""
    checkpoint = tempfile.mkdtemp(dir=scratch)
    reader = _read(spark, connector, bootstrap, topic, stream=True)
    if not available_now:
        reader = reader.option("maxOffsetsPerTrigger", records // 4)
    writer = reader.load().selectExpr("length(value) as n").writeStream.format("noop") \
        .option("checkpointLocation", checkpoint)
    started = time.perf_counter()
    if available_now:
        query = writer.trigger(availableNow=True).start()
        query.awaitTermination()
    else:
        query = writer.start()
        query.processAllAvailable()
        query.stop()
    took = time.perf_counter() - started
    assert query.exception() is None, query.exception()
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in batches)
    assert rows == records, (connector, rows)
    in_batches = sum(p["durationMs"]["triggerExecution"] for p in batches) / 1000
    shutil.rmtree(checkpoint, ignore_errors=True)
    return rows / took, rows / in_batches


def register_one_row(spark) -> None:
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

    # Classes defined here, not at module level: Spark pickles them by value into its
    # Python processes, which cannot import this script.
    class OneRowReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        """A stream reader that reads one row and does nothing else."""

        def initialOffset(self) -> dict:
            return {"at": 0}

        def latestOffset(self, start: dict, limit) -> dict:
            return {"at": 1}

        def prepareForTriggerAvailableNow(self) -> None:
            pass

        def partitions(self, start: dict, end: dict) -> list:
            return [InputPartition(0)] if start["at"] < end["at"] else []

        def read(self, partition):
            yield ("x",)

        def commit(self, end: dict) -> None:
            pass

    class OneRow(DataSource):
        @classmethod
        def name(cls) -> str:
            return "one-row"

        def schema(self) -> str:
            return "value string"

        def streamReader(self, schema):
            return OneRowReader()

    spark.dataSource.register(OneRow)


def fixed_cost(spark, connector: str, bootstrap: str, topic: str, scratch: str) -> float:
    """Seconds from start() to the end of an AvailableNow query over ``topic`` (8 records;
    connector "one-row": the do-nothing Python source, which ignores the options, 1 row)."""
    records = 1 if connector == "one-row" else 8
    return records / stream_read(spark, connector, bootstrap, topic, records, True, scratch)[0]


def sink(spark, connector: str, bootstrap: str, source, topic: str, records: int) -> float:
    asyncio.run(create(bootstrap, topic, 4))
    started = time.perf_counter()
    (source.write.format(connector).mode("append").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).save())
    return records / (time.perf_counter() - started)


MEASURES = ("batch read, 4 partitions", "batch read, 1 partition",
            "stream, micro-batches, 4 partitions, start to end", "stream, micro-batches, within batches",
            "stream, AvailableNow, 4 partitions, start to end", "stream, AvailableNow, within the batch",
            "sink, 4 partitions")
LONG = ("batch read, 4 partitions, {n} rows", "stream, micro-batches, {n} rows, start to end",
        "stream, AvailableNow, {n} rows, start to end")
FIXED = "fixed cost of an AvailableNow query over 8 records, start to end (s)"


def measure(spark, bootstrap: str, records: int, runs: int, tag: str, scratch: str,
            long_records: int = 0) -> tuple[dict[str, dict[str, float]], list[float]]:
    """{measure: {connector: median rows/s (seconds for FIXED)}} and the load averages seen;
    FIXED also has the do-nothing Python source's seconds under "one-row"."""
    topics = {n: f"bench-read-{tag}-{n}" for n in (1, 4)}
    for n, topic in topics.items():
        asyncio.run(fill(bootstrap, topic, n, records))
    tiny = f"bench-read-{tag}-tiny"
    asyncio.run(fill(bootstrap, tiny, 4, 8))
    long_topic = f"bench-read-{tag}-long"
    if long_records:
        asyncio.run(fill_columns(bootstrap, long_topic, 4, long_records))
    long_names = [m.format(n=f"{long_records:,}") for m in LONG] if long_records else []
    source = spark.range(records).selectExpr("lpad(cast(id as string), 8, '0') as key",
                                             "repeat('x', 100) as value").cache()
    source.count()
    rates: dict[str, dict[str, list[float]]] = {m: {c: [] for c in CONNECTORS}
                                                for m in MEASURES + tuple(long_names) + (FIXED,)}
    one_row: list[float] = []
    loads = [os.getloadavg()[0]]
    for run in range(runs + 1):                       # run 0 warms both connectors up, unmeasured
        order = CONNECTORS if run % 2 else CONNECTORS[::-1]
        for connector in order:
            micro = stream_read(spark, connector, bootstrap, topics[4], records, False, scratch)
            now = stream_read(spark, connector, bootstrap, topics[4], records, True, scratch)
            got = {
                MEASURES[0]: batch_read(spark, connector, bootstrap, topics[4], records),
                MEASURES[1]: batch_read(spark, connector, bootstrap, topics[1], records),
                MEASURES[2]: micro[0], MEASURES[3]: micro[1], MEASURES[4]: now[0], MEASURES[5]: now[1],
                MEASURES[6]: sink(spark, connector, bootstrap, source, f"bench-sink-{tag}-{connector}-{run}",
                                  records),
                FIXED: fixed_cost(spark, connector, bootstrap, tiny, scratch),
            }
            if long_records:
                got[long_names[0]] = batch_read(spark, connector, bootstrap, long_topic, long_records)
                got[long_names[1]] = stream_read(spark, connector, bootstrap, long_topic, long_records,
                                                 False, scratch)[0]
                got[long_names[2]] = stream_read(spark, connector, bootstrap, long_topic, long_records,
                                                 True, scratch)[0]
            if run:
                for name, rate in got.items():
                    rates[name][connector].append(rate)
            loads.append(os.getloadavg()[0])
            print(f"  {tag} run {run}{' (warm-up)' if not run else ''} {connector}: " +
                  ", ".join(f"{v:,.2f}" if k == FIXED else f"{v:,.0f}" for k, v in got.items()),
                  flush=True)
        took = fixed_cost(spark, "one-row", bootstrap, tiny, scratch)
        if run:
            one_row.append(took)
        print(f"  {tag} run {run}: one-row Python source, fixed cost {took:.2f} s", flush=True)
    source.unpersist()
    medians = {m: {c: peers.median(v) for c, v in by.items()} for m, by in rates.items()}
    medians[FIXED]["one-row"] = peers.median(one_row)
    return medians, loads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", default="kgroup,kafka", help="kgroup, kafka or both (comma-separated)")
    parser.add_argument("--bootstrap", metavar="HOST:PORT", help="a running broker instead of kgroup serve")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3, help="measured runs per figure (medians)")
    parser.add_argument("--long-records", type=int, default=2_000_000,
                        help="records of the longer stream (0: skip it)")
    args = parser.parse_args()
    # Spark starts Python processes for our source (the stream reader's, the tasks'); each
    # imports kgroup. Where bytecode may not be written (PYTHONDONTWRITEBYTECODE, as on our
    # CI machines, with kgroup installed editable) each would compile it from source again,
    # which a user's `pip install` (it compiles on install) never does: compile it first.
    compileall.compile_dir(Path(__file__).resolve().parents[1] / "src" / "kgroup", quiet=1)
    spark = session()
    register_one_row(spark)
    scratch = tempfile.mkdtemp(prefix="kgroup-spark-io-")
    results: dict[str, dict[str, dict[str, float]]] = {}
    loads: dict[str, list[float]] = {}
    try:
        for side in args.brokers.split(","):
            if side == "kgroup":
                if args.bootstrap:
                    results[side], loads[side] = measure(spark, args.bootstrap, args.records, args.runs, side,
                                                     scratch, args.long_records)
                    continue
                b = peers.start_kgroup(peers.toml_config(fsync="never"))
                try:
                    results[side], loads[side] = measure(spark, b.bootstrap, args.records, args.runs, side,
                                                     scratch, args.long_records)
                finally:
                    b.stop()
            elif side == "kafka":
                from kgroup.testing.reference import ReferenceKafka

                with ReferenceKafka(jvm_options=KAFKA_JVM) as kafka:
                    results[side], loads[side] = measure(spark, kafka.bootstrap, args.records, args.runs, side,
                                                     scratch, args.long_records)
            else:
                parser.error(f"--brokers: {side!r} is not kgroup or kafka")
    finally:
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    for side, by_measure in results.items():
        rows = [(f"{name} (rows/s)", {"kgroup": by_measure[name]["kgroup"], "kafka": by_measure[name]["kafka"]})
                for name in by_measure if name != FIXED]
        peers.print_table(f"on {side}: format(\"kgroup\") vs Spark's format(\"kafka\"), {args.records:,} x "
                          f"100-byte rows, local[2], median of {args.runs}; load average "
                          f"{min(loads[side]):.1f}-{max(loads[side]):.1f}", rows, ["kgroup", "kafka"])
        fixed = by_measure[FIXED]
        print(f"{FIXED}: format(\"kgroup\") {fixed['kgroup']:.2f}, format(\"kafka\") {fixed['kafka']:.2f}, "
              f"a Python data source that reads one row {fixed['one-row']:.2f}")


if __name__ == "__main__":
    main()
