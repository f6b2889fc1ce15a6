"""format("kgroup-share"): two streaming queries, each with two tasks per micro-batch, consume
one partition through one share group; a task of one query is killed mid-batch. Every
record lands in the output exactly once — the killed batch's records released by the failed
query and delivered again (deliveryCount 2) — on kgroup and on Apache Kafka 4.4."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from kgroup.client import AdminClient
from kgroup.client.admin import GROUP_RESOURCE
from kgroup.spark.share_source import share_options
from kgroup.spark.options import OptionError
from kgroup.client import Producer
from tests.integration.share_clients import KgroupCluster
from tests.integration.waits import hold, pace, until, wait_for
from tests.spark.topics import create, record

N = 300


# The most records one micro-batch takes (maxRecordsPerTrigger): the size cap of the killed batch.
BATCH = 40


def start_query(spark, bootstrap, topic, group, out, checkpoint, kill=None):
    from pyspark.sql import functions as F

    df = (spark.readStream.format("kgroup-share").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("group.id", group)
          .option("maxRecordsPerTrigger", BATCH).option("numPartitions", 2).load())
    if kill is not None:
        claim, seen = kill

        @F.udf("long")
        def work(offset):
            # The first task to claim the marker dies on its fifth row: a task killed mid-batch.
            global _rows
            _rows = globals().get("_rows", 0) + 1
            if _rows >= 5 and os.path.exists(claim):
                try:
                    os.rename(claim, claim + ".taken")
                except OSError:
                    return offset
                with open(seen, "w") as f:
                    f.write(str(offset))
                os.kill(os.getpid(), signal.SIGKILL)
            return offset

        df = df.withColumn("offset", work("offset"))
    return (df.select("partition", "offset", "value", "deliveryCount").writeStream.format("parquet")
            .option("path", str(out)).option("checkpointLocation", str(checkpoint)).start())


def produce_in_small_batches(bootstrap, topic):
    """Records 0..N-1 in batches of 10: a share group hands out whole batches."""
    async def main() -> None:
        async with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as p:
            for start in range(0, N, 10):
                futures = [await p.send(topic, record(i)[1], record(i)[0], partition=0)
                           for i in range(start, start + 10)]
                await p.flush()
                for f in futures:
                    f.result()
    asyncio.run(main())


def committed_rows(spark, *paths):
    rows = []
    for p in paths:
        if (p / "_spark_metadata").exists():
            rows += spark.read.schema("partition int, offset bigint, value binary, deliveryCount int") \
                .parquet(str(p)).collect()
    return rows


def test_two_queries_share_one_partition_and_a_killed_batch_is_delivered_again(spark, any_broker, tmp_path):
    side = "kgroup" if hasattr(any_broker, "console") else "kafka"
    topic, group = f"share-jobs-{side}", f"share-runners-{side}"
    bootstrap = any_broker.bootstrap
    create(bootstrap, topic, 1)

    async def earliest() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.alter_configs(GROUP_RESOURCE, group, [("share.auto.offset.reset", 0, "earliest")])
    asyncio.run(earliest())
    produce_in_small_batches(bootstrap, topic)
    claim, seen = tmp_path / "kill-once", tmp_path / "killed-offset"
    claim.touch()
    out_a, out_b = tmp_path / "a", tmp_path / "b"
    a = start_query(spark, bootstrap, topic, group, out_a, tmp_path / "ck-a", kill=(str(claim), str(seen)))

    # b starts once a holds the partition: a topic new to the group is assigned a heartbeat
    # after its share partitions are initialized (as in Kafka 4.4), and b, started at once,
    # could take every record before a's first batch (the one killed) ever ran.
    until(lambda: KgroupCluster(any_broker).assigned_members(group) >= 1, 60, 0.2,
          "query a's member assigned the partition")
    b = start_query(spark, bootstrap, topic, group, out_b, tmp_path / "ck-b")
    try:
        deadline = time.monotonic() + 120
        wait_for(lambda: not a.isActive, max(deadline - time.monotonic(), 1), 0.5,
                 what="query a to fail with its killed task")
        assert not a.isActive and a.exception() is not None       # the killed task failed the query
        killed = int(seen.read_text())
        # Query A again from its checkpoint: the batch it had planned re-runs empty.
        a = start_query(spark, bootstrap, topic, group, out_a, tmp_path / "ck-a")
        while time.monotonic() < deadline:
            if len(committed_rows(spark, out_a, out_b)) >= N:
                break
            assert a.isActive and b.isActive, (a.exception(), b.exception())
            pace(1)
        hold(2, "nothing more arrives")
        rows = committed_rows(spark, out_a, out_b)
    finally:
        for q in (a, b):
            q.stop()
    offsets = sorted(r.offset for r in rows)
    assert offsets == list(range(N))                                 # each record exactly once
    counts = {r.offset: r.deliveryCount for r in rows}
    assert counts[killed] >= 2
    again = [o for o, c in counts.items() if c >= 2]
    # Redelivered: the killed batch (its records only, at most BATCH), never a batch that committed.
    assert killed in again and 1 <= len(again) <= BATCH
    assert {r.value for r in rows if r.offset == 7} == {b"value-7-" + str(7 * 7919 % 10007).encode()}
    # Both queries took part: A acquired the killed batch (and may have written more after its
    # restart, if B left it any), B wrote records.
    assert committed_rows(spark, out_b)


def test_share_options_are_checked():
    base = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}
    with pytest.raises(OptionError, match="needs option group.id"):
        share_options(base)
    with pytest.raises(OptionError, match="startingOffsets"):
        share_options({**base, "group.id": "g", "startingOffsets": "earliest"})
    with pytest.raises(OptionError, match="maxRecordsPerTrigger: must be at least 1"):
        share_options({**base, "group.id": "g", "maxRecordsPerTrigger": "0"})
    assert share_options({**base, "group.id": "g"}).max_records == 10_000
