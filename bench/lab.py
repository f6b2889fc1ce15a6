"""Rebalance lab throughput: simulated member events per CPU second, and Spark scaling.

    .venv/bin/python bench/lab.py                 # in-process figures + local[1] vs local[2]
    .venv/bin/python bench/lab.py --scale         # also the 10,000-group sweep on local[2]

Workload: bench/lab/scale-sweep.yaml (50 members, 200 partitions, 1 simulated hour, one
disruption every 10 minutes: bounce, crash or GC pause; four protocol variants).

Figures:
- executed member events / CPU s: events the engine really handed to member state
  machines (every heartbeat answer, poll, join answer...), per CPU second of one core.
- simulated member events / CPU s: the events a run that simulates every heartbeat
  (fast_forward off) processes for the same group, divided by the CPU time the default
  (fast-forward) run took; what the lab delivers per core.
- Spark: wall time of N groups on local[1] and local[2] (fresh `kgroup lab sweep`
  processes, Spark start-up included), and the speed-up.
Medians over --runs runs. Nothing here is asserted; compare runs on the same machine.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kgroup.lab.results import simulate
from kgroup.lab.scenario import scenario_from_dict
from kgroup.lab.sweep import parse_sweep

HERE = Path(__file__).resolve().parent
SWEEP = HERE / "lab" / "scale-sweep.yaml"
KGROUP = str(Path(sys.executable).with_name("kgroup"))


def in_process(groups_per_variant: int, runs: int) -> None:
    sweep = parse_sweep(SWEEP.read_text())
    by_variant: dict[str, list] = {}
    for g in sweep.groups:
        if len(by_variant.setdefault(g.variant, [])) < groups_per_variant:
            by_variant[g.variant].append(g)
    print(f"In-process, one core: {groups_per_variant} groups per variant, median of {runs} runs")
    print(f"{'variant':18} {'CPU s/group':>11} {'executed ev/CPU s':>18} {'simulated ev/CPU s':>19} "
          f"{'full-run events':>15}")
    total_cpu = []
    for variant, groups in by_variant.items():
        cpu_runs, events = [], 0
        for _ in range(runs):
            cpu = 0.0
            events = 0
            for g in groups:
                sc = scenario_from_dict(copy.deepcopy(g.scenario))
                t = time.process_time()
                events += simulate(sc).summary["member_events"]
                cpu += time.process_time() - t
            cpu_runs.append(cpu)
        cpu = statistics.median(cpu_runs)
        full = dict(copy.deepcopy(groups[0].scenario), fast_forward=False)
        full_events = simulate(scenario_from_dict(full)).summary["member_events"]
        per_group = cpu / len(groups)
        total_cpu.append(per_group)
        print(f"{variant:18} {per_group:11.3f} {events / cpu:18,.0f} {full_events / per_group:19,.0f} "
              f"{full_events:15,}")
    mean = statistics.mean(total_cpu)
    print(f"mean CPU per group {mean:.3f} s -> 10,000 groups on 2 cores ~ {mean * 10_000 / 2 / 60:.1f} min "
          f"of simulation (Spark overhead not included)")


def spark_sweep(groups: int, master: str, out: Path) -> float:
    """Wall seconds for a `kgroup lab sweep` of ``groups`` groups of the scale sweep."""
    data = yaml.safe_load(SWEEP.read_text())
    data["seeds"] = max(1, groups // len(data["variants"]))
    path = out / f"sweep-{groups}.yaml"
    path.write_text(yaml.safe_dump(data))
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    started = time.perf_counter()
    done = subprocess.run([KGROUP, "lab", "sweep", str(path), "--out", str(out / f"{master}-{groups}"),
                           "--master", master], capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"kgroup lab sweep failed:\n{done.stderr[-3000:]}")
    return took


def scaling(groups: int, runs: int) -> None:
    print(f"\nSpark: {groups} groups of the scale sweep, wall seconds, median of {runs} runs")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        walls = {m: statistics.median(spark_sweep(groups, m, out) for _ in range(runs))
                 for m in ("local[1]", "local[2]")}
    for master, wall in walls.items():
        print(f"  {master:9} {wall:7.1f} s   {groups / wall:6.1f} groups/s")
    print(f"  speed-up local[1] -> local[2]: {walls['local[1]'] / walls['local[2]']:.2f}x")


def scale() -> None:
    print("\nScale: 10,000 groups x 50 members x 1 simulated hour on local[2]")
    with tempfile.TemporaryDirectory() as tmp:
        wall = spark_sweep(10_000, "local[2]", Path(tmp))
    print(f"  {wall / 60:.1f} minutes ({10_000 / wall:.1f} groups/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups-per-variant", type=int, default=5)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--spark-groups", type=int, default=400)
    parser.add_argument("--scale", action="store_true", help="also run the 10,000-group sweep")
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    in_process(args.groups_per_variant, args.runs)
    if not args.no_spark:
        scaling(args.spark_groups, args.runs)
    if args.scale:
        scale()


if __name__ == "__main__":
    main()
