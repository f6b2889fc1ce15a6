"""The rebalance lab on Spark: simulate a sweep's groups in Spark tasks.

How this works: the driver expands the sweep into its groups (each carries its whole
scenario), parallelizes them, and every task runs its groups through the pure lab engine
(``kgroup.lab``), one after another. Results come back as rows: ``groups.parquet`` (one row
per group, with each member's stop-the-world seconds and the event windows nested),
``windows.parquet`` (the windows exploded) and ``comparison.parquet`` (aggregated per
variant with Spark SQL, the columns of ``kgroup.lab.report.AGGREGATES``). A group's result
depends only on its spec, so any master and any number of cores give the same rows.

Progress: a driver thread prints how many groups are done every few seconds.
On a cluster, every executor needs kgroup installed (``pip install kgroup[spark]``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from kgroup.lab.report import AGGREGATES
from kgroup.lab.results import SUMMARY_COLUMNS, WINDOW_COLUMNS, GroupResult, simulate
from kgroup.lab.scenario import scenario_from_dict
from kgroup.lab.sweep import Sweep, SweepGroup
from kgroup.plugins import load_assignor_plugins
from kgroup.spark.setup import require_java

_SPARK_TYPES = {"string": "string", "long": "bigint", "double": "double", "boolean": "boolean"}


def local_environment() -> None:
    """What a local Spark needs here: loopback only, and workers on this Python."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def session(master: str = "local[*]", app: str = "kgroup-lab") -> Any:
    """A SparkSession for the lab (quiet logs, no web UI); SparkSetupError without Java 17."""
    local_environment()
    require_java()
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    conf = SparkConf().setMaster(master).setAppName(app).setAll([
        ("spark.ui.enabled", "false"), ("spark.ui.showConsoleProgress", "false"),
        ("spark.sql.shuffle.partitions", "8"),
        ("spark.driver.bindAddress", os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))])
    _gateway_of_its_own(conf)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _gateway_of_its_own(conf: Any) -> None:
    """Start Spark's JVM (unless one runs) in a session of its own, so that Ctrl-C at the
    terminal reaches kgroup alone. In the terminal's process group every PySpark worker
    gets the SIGINT too, and PySpark's workers restore Python's default handler on purpose:
    each running one printed a KeyboardInterrupt traceback. kgroup cancels the jobs itself
    (cli/lab.py), and the JVM still exits with kgroup (PySpark's gateway ends when its
    parent's pipe closes). SparkContext then finds this gateway instead of launching one."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is None:
        SparkContext._gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
        SparkContext._jvm = SparkContext._gateway.jvm


def simulate_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """One group spec (as JSON-able data) -> its summary row with nested stops and windows."""
    sc = scenario_from_dict(dict(spec["scenario"]), source=spec["group"])
    result = simulate(sc, group=spec["group"], variant=spec["variant"])
    row = dict(result.summary)
    row["stop_s_members"] = list(result.stop_s.values())
    row["windows"] = result.windows
    return row


def _simulate_partition(specs: Iterator[str]) -> Iterator[dict[str, Any]]:
    load_assignor_plugins()   # an executor is a process of its own
    for text in specs:
        yield simulate_spec(json.loads(text))


def _schema() -> str:
    fields = [f"`{n}` {_SPARK_TYPES[t]}" for n, t in SUMMARY_COLUMNS]
    fields.append("`stop_s_members` array<double>")
    window = ", ".join(f"`{n}`: {_SPARK_TYPES[t]}" for n, t in WINDOW_COLUMNS)
    fields.append(f"`windows` array<struct<{window}>>")
    return ", ".join(fields)


@dataclass
class SweepOutput:
    comparison: list[dict[str, Any]]
    summaries: list[dict[str, Any]]      # the columns the report needs, for every group
    windows: list[dict[str, Any]]        # the first few event windows, for the report
    stops: dict[str, tuple[float, ...] | None]
    examples: dict[str, GroupResult]
    groups: int


def run_sweep(spark: Any, sweep: Sweep, out_dir: str, *, partitions: int | None = None,
              progress: Callable[[str], None] | None = None) -> SweepOutput:
    """Simulate every group of ``sweep`` on ``spark``; write Parquet under ``out_dir``."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    specs = [json.dumps({"group": g.group, "variant": g.variant, "scenario": g.scenario}, sort_keys=True)
             for g in sweep.groups]
    # Eight tasks per core at least, and about 50 groups a task for big sweeps, so progress
    # moves in small steps and a slow task does not hold the others up.
    slices = partitions or max(1, min(len(specs), max(sc.defaultParallelism * 8, len(specs) // 50)))
    from pyspark import StorageLevel

    rows = sc.parallelize(specs, slices).mapPartitions(_simulate_partition)
    # Simulated once, kept, and used for every output: re-reading the Parquet by path would
    # take an --out with [ ] or * in its name for a glob.
    groups = spark.createDataFrame(rows, _schema()).persist(StorageLevel.MEMORY_AND_DISK)
    groups_path = os.path.join(out_dir, "groups.parquet")
    stop = threading.Event()
    if progress is not None:
        threading.Thread(target=_report_progress, args=(sc, len(specs), slices, progress, stop),
                         daemon=True).start()
    try:
        groups.write.mode("overwrite").parquet(groups_path)
    finally:
        stop.set()
    if progress is not None:
        progress(f"{len(specs)}/{len(specs)} groups simulated")
    windows = groups.select(F.explode("windows").alias("w")).select("w.*")
    windows.write.mode("overwrite").parquet(os.path.join(out_dir, "windows.parquet"))
    comparison = _compare(groups)
    comparison.write.mode("overwrite").parquet(os.path.join(out_dir, "comparison.parquet"))
    order = {v: i for i, v in enumerate(sweep.variants)}
    compared = sorted((r.asDict() for r in comparison.collect()), key=lambda r: order.get(r["variant"], 0))
    stops = {r["variant"]: tuple(r["q"]) if r["q"] else None for r in (
        groups.select("variant", F.explode("stop_s_members").alias("s")).groupBy("variant")
        .agg(F.percentile_approx("s", [0.0, 0.25, 0.5, 0.75, 1.0], 10000).alias("q")).collect())}
    summaries = [r.asDict() for r in groups.select("group", "variant", "unowned_partition_s")
                 .orderBy("group").collect()]
    first_windows = [r.asDict() for r in windows.orderBy("group", "start_s").limit(200).collect()]
    groups.unpersist()
    return SweepOutput(compared, summaries, first_windows, stops, examples(sweep), len(specs))


def examples(sweep: Sweep) -> dict[str, GroupResult]:
    """One group per variant re-run on the driver with its ownership timeline recorded."""
    out: dict[str, GroupResult] = {}
    for g in sweep.groups:
        if g.variant not in out:
            out[g.variant] = example(g)
    return out


def example(g: SweepGroup) -> GroupResult:
    sc = scenario_from_dict(dict(g.scenario), source=g.group)
    return simulate(sc, group=g.group, variant=g.variant, record_timeline=True)


def _compare(groups: Any) -> Any:
    from pyspark.sql import functions as F

    how = {"count": F.count, "mean": F.avg, "max": F.max, "sum": F.sum,
           "median": lambda c: F.percentile_approx(c, 0.5, 10000)}
    aggs = [how[kind](column).alias(name) for name, kind, column in AGGREGATES]
    return groups.groupBy("variant").agg(*aggs)


def _report_progress(sc: Any, total: int, slices: int, say: Callable[[str], None], stop: threading.Event) -> None:
    tracker = sc.statusTracker()
    last = -1
    while not stop.wait(2.0):
        done = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None and info.numTasks == slices:
                done = info.numCompletedTasks
        groups = min(total, done * total // max(1, slices))
        if groups != last:
            last = groups
            say(f"{groups}/{total} groups simulated ({done}/{slices} tasks)")
