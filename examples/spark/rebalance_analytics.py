"""Rebalance analytics on Spark: per-group rebalance timelines from the broker's own events.

    .venv/bin/python examples/spark/rebalance_analytics.py --bootstrap 127.0.0.1:9092 --out rebalances

Reads the internal topic ``__kgroup_events`` (every group change the broker made, one JSON
event a record; README, "Group events") with kgroup's Spark source and writes:

- ``rebalances.parquet``: one row per completed rebalance — group, protocol, generation (or
  group epoch), when it started and completed, how long it took, the members after it, and
  the partitions whose assignment moved to another member in it;
- ``groups.parquet``: per group — rebalances, total and longest rebalance time, partitions
  moved, and unowned partition-seconds (partitions that no member's current assignment
  held, as the coordinator saw it: from a member's departure or revocation until the
  partition is in someone's assignment again).

Each group's events are walked in order by one pandas function (``applyInPandas``), so a
group's timeline is computed where its events are, whatever the number of groups.
"""

from __future__ import annotations

import argparse
import os
import sys

import pandas as pd

EVENTS_TOPIC = "__kgroup_events"
EVENT_SCHEMA = ("v int, time_ms long, `group` string, protocol string, kind string, member string, "
                "instance string, generation long, member_epoch long, state string, "
                "partitions array<array<string>>, reason string")
REBALANCE_SCHEMA = ("`group` string, protocol string, generation long, started_ms long, completed_ms long, "
                    "duration_s double, members long, moved long")
GROUP_SCHEMA = ("`group` string, protocol string, rebalances long, rebalance_s_total double, "
                "rebalance_s_max double, moved long, unowned_partition_s double")
DEPARTED = ("member_left", "member_expired", "member_fenced")


def walk(events: pd.DataFrame) -> tuple[list[dict], dict]:
    """One group's events (any order) -> (rebalance rows, the group's summary row)."""
    events = events.sort_values("time_ms", kind="stable")
    group = str(events["group"].iloc[0])
    protocol = str(events["protocol"].iloc[0])
    owner: dict[tuple[str, int], str] = {}
    last_owner: dict[tuple[str, int], str] = {}      # survives a departure: "moved" compares to it
    unowned_since: dict[tuple[str, int], int] = {}
    members: set[str] = set()
    rows: list[dict] = []
    current: dict | None = None
    unowned_ms = 0
    moved = 0

    def release(partitions, t: int) -> None:
        for p in partitions:
            owner.pop(p, None)
            unowned_since.setdefault(p, t)

    for e in events.itertuples(index=False):
        t, kind, member = int(e.time_ms), e.kind, e.member
        if kind == "member_joined" and member:
            members.add(member)
        elif kind in DEPARTED and member:
            members.discard(member)
            release([p for p, m in owner.items() if m == member], t)
        elif kind == "rebalance_started" and current is None:
            current = {"group": group, "protocol": protocol, "generation": None, "started_ms": t,
                       "completed_ms": None, "duration_s": None, "members": None, "moved": 0}
        elif kind == "rebalance_completed":
            if current is None:
                current = {"group": group, "protocol": protocol, "started_ms": t, "moved": 0}
            current.update(generation=int(e.generation), completed_ms=t,
                           duration_s=(t - current["started_ms"]) / 1000, members=len(members))
            rows.append(current)
            current = None
        elif kind == "assignment_changed" and member:
            now = {(str(tp[0]), int(tp[1])) for tp in (e.partitions if e.partitions is not None else ())}
            release([p for p, m in owner.items() if m == member and p not in now], t)
            for p in sorted(now):
                previous = last_owner.get(p)
                last_owner[p] = member
                if previous is not None and previous != member:
                    moved += 1
                    (current or (rows[-1] if rows else {"moved": 0}))["moved"] += 1
                if p in unowned_since:
                    unowned_ms += t - unowned_since.pop(p)
                owner[p] = member
    durations = [r["duration_s"] for r in rows]
    summary = {"group": group, "protocol": protocol, "rebalances": len(rows),
               "rebalance_s_total": float(sum(durations)), "rebalance_s_max": float(max(durations, default=0.0)),
               "moved": moved, "unowned_partition_s": unowned_ms / 1000}
    return rows, summary


def _rebalances(events: pd.DataFrame) -> pd.DataFrame:
    rows, _ = walk(events)
    return pd.DataFrame(rows, columns=[c.split()[0].strip("`") for c in REBALANCE_SCHEMA.split(", ")])


def _summary(events: pd.DataFrame) -> pd.DataFrame:
    _, row = walk(events)
    return pd.DataFrame([row])


def analyse(spark, bootstrap: str):
    """(rebalances, groups) DataFrames from every event in ``__kgroup_events``."""
    from pyspark.sql import functions as F

    import kgroup.spark

    kgroup.spark.register(spark)
    raw = (spark.read.format("kgroup").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", EVENTS_TOPIC).option("startingOffsets", "earliest")
           .option("endingOffsets", "latest").load())
    events = (raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
              .select("e.*").where(F.col("group").isNotNull()))
    rebalances = events.groupBy("group").applyInPandas(_rebalances, REBALANCE_SCHEMA)
    groups = events.groupBy("group").applyInPandas(_summary, GROUP_SCHEMA)
    return rebalances, groups


def write(spark, bootstrap: str, out: str):
    """``analyse`` written to ``out``/rebalances.parquet and ``out``/groups.parquet; the groups."""
    rebalances, groups = analyse(spark, bootstrap)
    rebalances.write.mode("overwrite").parquet(os.path.join(out, "rebalances.parquet"))
    groups.write.mode("overwrite").parquet(os.path.join(out, "groups.parquet"))
    return groups


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Per-group rebalance timelines from __kgroup_events.")
    parser.add_argument("--bootstrap", default=os.environ.get("KGROUP_BOOTSTRAP", "127.0.0.1:9092"),
                        help="the broker (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--out", default="rebalance-analytics", help="output directory")
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(args.master).appName("kgroup-rebalance-analytics")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "8").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        write(spark, args.bootstrap, args.out).orderBy("group").show(50, truncate=False)
    finally:
        spark.stop()
    print(f"wrote {args.out}/rebalances.parquet and {args.out}/groups.parquet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
