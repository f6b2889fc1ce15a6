"""group.mode=member on a real local Spark and a real `kgroup serve`: two streaming queries
in one consumer group split the topic's partitions; when one stops, the other takes its
partitions over from the group's committed offsets, losing nothing and duplicating at most
one micro-batch (the documented bound, see kgroup.spark.membership)."""

from __future__ import annotations

import asyncio
import threading
import time

from kgroup.client import AdminClient
from kgroup.client.blocking import BlockingAdmin
from tests.integration.clients import wait_for
from tests.spark.topics import create, expected, produce

TOPIC, GROUP, LIMIT = "shared", "spark-members", 1000


def describe(bootstrap: str) -> dict[str, set[int]]:
    """client id -> partitions of TOPIC, per member of GROUP."""
    async def main():
        async with AdminClient(bootstrap) as admin:
            return await admin.describe_group(GROUP)

    desc = asyncio.run(main())
    return {m.client_id: set((m.assignment or {}).get(TOPIC, ())) for m in desc.members}


def committed(bootstrap: str) -> dict[tuple[str, int], int]:
    with BlockingAdmin(bootstrap) as admin:
        return admin.group_offsets(GROUP, {TOPIC: [0, 1, 2, 3]})


def test_two_queries_split_a_topic_and_one_takes_over_when_the_other_stops(spark, broker, tmp_path):
    create(broker.bootstrap, TOPIC, 4)
    produce(broker.bootstrap, TOPIC, 4, 0, 2000)
    lock = threading.Lock()
    phase = ["alone"]
    got: dict[str, list[tuple[str, int, int]]] = {"a": [], "b": []}

    def start(name: str):
        def batch(df, batch_id):
            rows = df.select("partition", "offset").collect()
            with lock:
                got[name].extend((phase[0], r.partition, r.offset) for r in rows)

        df = (spark.readStream.format("kgroup")
              .option("kafka.bootstrap.servers", broker.bootstrap).option("subscribe", TOPIC)
              .option("group.id", GROUP).option("group.mode", "member")
              .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", LIMIT)
              .option("kafka.client.id", f"query-{name}")
              .option("kafka.session.timeout.ms", 6000)
              .option("kafka.heartbeat.interval.ms", 500).load())
        return (df.writeStream.foreachBatch(batch).trigger(processingTime="500 milliseconds")
                .option("checkpointLocation", str(tmp_path / name)).start())

    def read(name: str, when: str | None = None) -> list[tuple[int, int]]:
        with lock:
            return [(p, o) for ph, p, o in got[name] if when is None or ph == when]

    a = start("a")
    wait_for(lambda: describe(broker.bootstrap) == {"query-a": {0, 1, 2, 3}}, 90,
             what="query a alone owning every partition")
    wait_for(lambda: len(read("a")) > 0, 90, what="query a reading")
    b = start("b")
    wait_for(lambda: sorted(map(len, describe(broker.bootstrap).values())) == [2, 2], 90,
             what="the two queries splitting the partitions")
    owners = describe(broker.bootstrap)
    a_parts, b_parts = owners["query-a"], owners["query-b"]
    with lock:
        phase[0] = "both"
    produce(broker.bootstrap, TOPIC, 4, 2000, 2000)
    wait_for(lambda: {p for p, _ in read("b")} == b_parts
             and {p for p, _ in read("a", "both")} == a_parts, 90, what="both queries reading")
    # Each reads only its own partitions.
    assert {p for p, _ in read("b")} <= b_parts
    assert {p for p, _ in read("a", "both")} <= a_parts

    with lock:
        phase[0] = "after"
    b.stop()
    wait_for(lambda: describe(broker.bootstrap) == {"query-a": {0, 1, 2, 3}}, 90,
             what="query a taking every partition back")
    produce(broker.bootstrap, TOPIC, 4, 4000, 2000)
    everything = set(expected(4, 6000))
    wait_for(lambda: set(read("a")) | set(read("b")) >= everything, 120,
             what="query a reading the rest of the topic")
    # The group's offsets follow query a's finished micro-batches to the end of the topic.
    wait_for(lambda: committed(broker.bootstrap) == {(TOPIC, p): 1500 for p in range(4)}, 60,
             what="query a committing its last micro-batch")
    stopped = time.monotonic()
    a.stop()
    assert a.exception() is None

    seen = read("a") + read("b")
    assert set(seen) == everything  # nothing lost
    assert len(seen) - len(everything) <= LIMIT  # at most one micro-batch twice
    # Query a took each of b's partitions over where b's reading ended (or up to one
    # micro-batch before it): from the group's committed offset.
    for p in b_parts:
        b_end = max(o for q, o in read("b") if q == p) + 1
        a_from = min(o for q, o in read("a", "after") if q == p)
        assert b_end - LIMIT <= a_from <= b_end
    # A stopped query's member is gone: it leaves, or, when Spark ends the reader's process
    # before it can (see kgroup.spark.membership, "Stopping"), its session expires.
    wait_for(lambda: describe(broker.bootstrap) == {}, 20, what="the stopped query's member gone")
    assert time.monotonic() - stopped < 6.0 + 5.0
