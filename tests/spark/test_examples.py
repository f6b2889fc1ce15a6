"""The shipped Spark examples, run as the README shows them (one command each), against a
real `kgroup serve`: rebalance analytics counts the rebalances the broker gave the members;
topic_to_parquet copies a topic once and commits to its group."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

from kgroup.client.blocking import BlockingAdmin
from tests.integration.clients import wait_for
from tests.integration.test_group_events import MemberThread
from tests.spark.topics import create, produce

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "spark"


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          timeout=300, env=env)


def test_rebalance_analytics_counts_the_rebalances_the_broker_gave_the_members(spark, broker, tmp_path):
    create(broker.bootstrap, "analysed", 4)
    group = "analytics-g"
    a = MemberThread(broker.bootstrap, group, "analysed", "member-a")
    b = MemberThread(broker.bootstrap, group, "analysed", "member-b")
    a.start()
    wait_for(lambda: a.latest is not None, 40, what="a assigned")
    b.start()
    wait_for(lambda: a.latest and b.latest and a.latest[0] == b.latest[0]
             and len(a.latest[2] | b.latest[2]) == 4, 40, what="a and b sharing the topic")
    a.stop()
    wait_for(lambda: b.latest[2] == {0, 1, 2, 3} and b.latest[0] > a.assignments[-1][0], 40, what="b alone")
    given = sorted({g for t in (a, b) for g, _, _ in t.assignments})
    b.stop()
    assert a.error is None and b.error is None

    rebalances, groups = example("rebalance_analytics").analyse(spark, broker.bootstrap)
    mine = sorted((r.asDict() for r in rebalances.where(f"`group` = '{group}'").collect()),
                  key=lambda r: r["generation"])
    # One row per generation the broker completed (its log says which), every generation a
    # member was given among them. They may be more: a kafka-python member whose poll ended
    # between JoinGroup and SyncGroup joins again (src/kgroup/testing/kafka_python_pending_join.py),
    # so the broker completes a generation that member never takes, and settles one later.
    completed = sorted(int(g) for g in re.findall(rf"group {group}: rebalance completed \(generation (\d+)",
                                                  broker.log()))
    assert [r["generation"] for r in mine] == completed and set(given) <= set(completed), (mine, given)
    assert all(r["duration_s"] >= 0 for r in mine)
    (summary,) = [r.asDict() for r in groups.where(f"`group` = '{group}'").collect()]
    assert summary["rebalances"] == len(completed) >= 3
    assert summary["moved"] >= 2                # b took a's partitions when a left
    assert summary["unowned_partition_s"] >= 0

    out = tmp_path / "analytics"
    done = run("rebalance_analytics.py", "--bootstrap", broker.bootstrap, "--out", str(out), "--master", "local[2]")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {r["group"]: r for r in pq.read_table(out / "groups.parquet").to_pylist()}
    assert rows[group]["rebalances"] == len(completed)


def test_topic_to_parquet_copies_each_record_once_and_commits_to_its_group(broker, tmp_path):
    create(broker.bootstrap, "copied", 3)
    produce(broker.bootstrap, "copied", 3, 0, 3000)
    out = tmp_path / "copy"
    args = ("--bootstrap", broker.bootstrap, "--topic", "copied", "--group", "copier", "--out", str(out),
            "--max-per-batch", "1000")
    done = run("topic_to_parquet.py", *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "holds 3000 records" in done.stdout
    produce(broker.bootstrap, "copied", 3, 3000, 600)
    again = run("topic_to_parquet.py", *args)             # from the checkpoint: only the new ones
    assert again.returncode == 0 and "holds 3600 records" in again.stdout, again.stderr[-3000:]
    rows = pq.read_table(out / "data").to_pylist()
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows) == 3600
    with BlockingAdmin(broker.bootstrap) as admin:
        assert admin.group_offsets("copier", {"copied": [0, 1, 2]}) == {("copied", p): 1200 for p in range(3)}
