"""The shipped Spark examples against a real `kgroup serve`, in this suite's Spark session:
rebalance analytics counts the rebalances the broker gave the members; topic_to_parquet
copies a topic once and commits to its group. Each runs its script's own function
(`write`, `copy`) rather than the script, which would start a Spark of its own: the scripts
run as one command each, as a user types them, in tests/integration/test_readme.py (the
README's Spark examples), which checks what they wrote."""

from __future__ import annotations

import importlib.util
import re
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
    example("rebalance_analytics").write(spark, broker.bootstrap, str(out))
    rows = {r["group"]: r for r in pq.read_table(out / "groups.parquet").to_pylist()}
    assert rows[group]["rebalances"] == len(completed)
    written = pq.read_table(out / "rebalances.parquet").to_pylist()
    assert sorted(r["generation"] for r in written if r["group"] == group) == completed


def test_topic_to_parquet_copies_each_record_once_and_commits_to_its_group(spark, broker, tmp_path):
    create(broker.bootstrap, "copied", 3)
    produce(broker.bootstrap, "copied", 3, 0, 3000)
    out = str(tmp_path / "copy")
    copy = example("topic_to_parquet").copy
    assert copy(spark, broker.bootstrap, "copied", "copier", out, max_per_batch=1000) == 3000
    produce(broker.bootstrap, "copied", 3, 3000, 600)
    # From the checkpoint: only the new ones.
    assert copy(spark, broker.bootstrap, "copied", "copier", out, max_per_batch=1000) == 3600
    rows = pq.read_table(tmp_path / "copy" / "data").to_pylist()
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows) == 3600
    with BlockingAdmin(broker.bootstrap) as admin:
        assert admin.group_offsets("copier", {"copied": [0, 1, 2]}) == {("copied", p): 1200 for p in range(3)}
