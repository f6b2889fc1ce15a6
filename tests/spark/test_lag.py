"""Lag for Spark jobs: GroupCommitListener commits any streaming Kafka query's progress to a
named group — Spark's own format("kafka") and ours, on kgroup and on Apache Kafka 4.4 — so
Kafka's kafka-consumer-groups --describe, `kgroup groups describe` and the console show the
job's lag, and a query restarted from its checkpoint commits only what is new."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from kgroup.client.blocking import BlockingAdmin
from kgroup.spark.lag import GroupCommitListener, end_offsets
from kgroup.testing.reference import run_java
from tests.spark.topics import create, produce

KGROUP = str(Path(sys.executable).with_name("kgroup"))


def test_end_offsets_reads_both_connectors_formats():
    spark_kafka = '{"orders":{"1":20,"0":15}}'
    ours = {"offsets": {"orders": {"0": 15, "1": 20}}, "resumed": {"orders": {"1": 3}}}
    want = {("orders", 0): 15, ("orders", 1): 20}
    assert end_offsets([spark_kafka]) == end_offsets([json.dumps(ours)]) == end_offsets([ours]) == want
    # Other sources (a file source's log offset, rate) add nothing.
    assert end_offsets(['{"logOffset":3}', "12", "not json", '{"orders":{"0":-1}}']) == {}


def describe_with_kafkas_tool(bootstrap: str, group: str) -> dict[tuple[str, int], tuple[int, int, int]]:
    """kafka-consumer-groups --describe: (topic, partition) -> (current, log end, lag)."""
    done = run_java("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                    "--bootstrap-server", bootstrap, "--describe", "--group", group)
    assert done.returncode == 0, done.stderr
    rows = {}
    for line in done.stdout.splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0] == group:
            rows[(cells[1], int(cells[2]))] = (int(cells[3]), int(cells[4]), int(cells[5]))
    return rows


def describe_with_kgroup(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    done = subprocess.run([KGROUP, "groups", "describe", group, "--bootstrap-server", bootstrap,
                           "--format", "json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (described,) = json.loads(done.stdout)["groups"]
    return {(r["topic"], r["partition"]): r["lag"] for r in described["offsets"]}


# Spark's connector on kgroup and ours on Kafka: the listener reads each connector's offsets
# (end_offsets, above) and commits through any broker's OffsetCommit, independently, so the
# two crossings cover both connectors and both brokers (the other two cost ~40 s of CI).
@pytest.mark.parametrize("any_broker, connector", [("kgroup", "kafka"), ("kafka", "kgroup")],
                         indirect=["any_broker"])
def test_a_spark_jobs_lag_shows_in_kafka_consumer_groups_and_survives_a_restart(
        spark, any_broker, kafka_connector, connector, tmp_path):
    side = "kgroup" if hasattr(any_broker, "console") else "kafka"
    topic, group = f"lag-{connector}-{side}", f"lag-job-{connector}-{side}"
    create(any_broker.bootstrap, topic, 2)
    produce(any_broker.bootstrap, topic, 2, 0, 3000)
    listener = GroupCommitListener(any_broker.bootstrap, group, query_name=group)
    spark.streams.addListener(listener)

    def run() -> int:
        df = (spark.readStream.format(connector).option("kafka.bootstrap.servers", any_broker.bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", 1000).load())
        query = (df.select("value").writeStream.format("noop").queryName(group)
                 .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
        query.awaitTermination()
        assert query.exception() is None
        last = query.lastProgress["batchId"]
        assert listener.wait_for_batch(query.id, last)
        return len([p for p in query.recentProgress if p["numInputRows"]])

    try:
        assert run() == 3
        assert listener.commits == 3                         # one per micro-batch
        with BlockingAdmin(any_broker.bootstrap) as admin:
            assert admin.group_offsets(group) == {(topic, 0): 1500, (topic, 1): 1500}
        produce(any_broker.bootstrap, topic, 2, 3000, 400)   # the job is now 200 behind per partition
        assert describe_with_kafkas_tool(any_broker.bootstrap, group) == {
            (topic, 0): (1500, 1700, 200), (topic, 1): (1500, 1700, 200)}
        assert describe_with_kgroup(any_broker.bootstrap, group) == {(topic, 0): 200, (topic, 1): 200}
        if side == "kgroup":
            with urllib.request.urlopen(f"{any_broker.console}/api/groups/{group}", timeout=10) as r:
                detail = json.load(r)
            assert {(p["topic"], p["partition"]): p["lag"] for p in detail["partitions"]} == {
                (topic, 0): 200, (topic, 1): 200}

        # Restarted from its checkpoint (a new listener, as a new driver would have): only
        # the new micro-batch is committed, nothing of what the first run committed again.
        spark.streams.removeListener(listener)
        listener.close()
        listener = GroupCommitListener(any_broker.bootstrap, group, query_name=group)
        spark.streams.addListener(listener)
        assert run() == 1
        assert listener.commits == 1
        assert describe_with_kafkas_tool(any_broker.bootstrap, group) == {
            (topic, 0): (1700, 1700, 0), (topic, 1): (1700, 1700, 0)}
    finally:
        spark.streams.removeListener(listener)
        listener.close()
