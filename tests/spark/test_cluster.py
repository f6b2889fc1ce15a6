"""The kgroup source and sink against a 3-node kgroup cluster: partitions led by different
nodes, one node killed with kill -9 between jobs, and a streaming query committing to a
group coordinated by that node."""

from __future__ import annotations

import pytest

from tests.integration.cluster_process import ClusterProcess, group_coordinated_by
from tests.spark.topics import create, produce, record

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ClusterProcess(tmp_path_factory.mktemp("spark-cluster"), extra={"fsync": "never"},
                       group={"initial_rebalance_delay_ms": 0}).start()
    yield c
    c.finish()


def values(spark, bootstrap: str, topic: str) -> list[bytes]:
    rows = (spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).load().select("value").collect())
    return sorted(bytes(r.value) for r in rows)


def test_batch_reads_and_writes_follow_the_leaders_across_a_kill(spark, cluster, tmp_path):
    create(cluster.bootstrap, "spread-in", 6)                # leaders on nodes 0, 1, 2
    produce(cluster.bootstrap, "spread-in", 6, 0, 3000)
    want = sorted(record(i)[1] for i in range(3000))
    assert values(spark, cluster.bootstrap, "spread-in") == want

    cluster.nodes[1].kill9()                                 # its partitions move to 0 and 2
    bootstrap = cluster.live_bootstrap()
    assert values(spark, bootstrap, "spread-in") == want
    df = spark.createDataFrame([(f"row-{i}",) for i in range(600)], "value string")
    (df.write.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", "spread-in").mode("append").save())
    assert len(values(spark, bootstrap, "spread-in")) == 3600
    cluster.nodes[1].start()
    assert len(values(spark, cluster.bootstrap, "spread-in")) == 3600


def test_a_stream_commits_to_a_group_whose_coordinator_is_killed(spark, cluster, tmp_path):
    create(cluster.bootstrap, "stream-in", 3)
    produce(cluster.bootstrap, "stream-in", 3, 0, 300)
    group = group_coordinated_by(2, "spark-stream")

    def run_once(bootstrap: str) -> list:
        out = tmp_path / "out"
        query = (spark.readStream.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
                 .option("subscribe", "stream-in").option("startingOffsets", "earliest")
                 .option("group.id", group).load().selectExpr("CAST(value AS STRING) AS v")
                 .writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(tmp_path / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination(120)
        assert query.exception() is None
        return spark.read.parquet(str(out)).collect()

    assert len(run_once(cluster.bootstrap)) == 300
    cluster.nodes[2].kill9()                                 # the group's coordinator
    bootstrap = cluster.live_bootstrap()
    produce(bootstrap, "stream-in", 3, 300, 150)
    assert sorted(r.v for r in run_once(bootstrap)) == sorted(record(i)[1].decode() for i in range(450))
    from tests.integration.test_cluster_failover import _committed

    assert _committed(bootstrap, group) == {0: 150, 1: 150, 2: 150}
    cluster.nodes[2].start()
