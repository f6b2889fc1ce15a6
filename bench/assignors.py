"""Assignor benchmark: the grid of Kafka's assignor benchmarks, printed as a table.

    .venv/bin/python bench/assignors.py            # full grid (several minutes)
    .venv/bin/python bench/assignors.py --quick    # small grid
    .venv/bin/python bench/assignors.py --big      # only the headline cases (10k x 100k, 1M)
    .venv/bin/python bench/assignors.py --case 10000x100000x100 --subs mixed \
        --mode incremental --only uniform,range   # one row, chosen assignors

Grid: members 100/1,000/10,000 x partitions per member 5/10/50 x topics 10/100/1,000;
identical and mixed subscriptions (mixed: topics in 3 buckets, member i subscribes to
buckets i%3 and (i+1)%3); full assignment and incremental (one member added to an assigned
group). c-range and c-rr are the client-side range and roundrobin (stateless: incremental
means one member more). Times are medians in ms. kafka-python's sticky and
cooperative-sticky run side by side where they finish in reasonable time (<= 10,000
partitions) and the ratio kafka-python / ours is printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "unit" / "assignors"))

from kgroup.assignors import (  # noqa: E402
    ClientMember, GroupSpec, MemberSpec, Subscription, get_client_assignor, get_server_assignor,
)
from kgroup.assignors.spec import topic_partitions  # noqa: E402

# kafka-python's sticky assignors take seconds at 5,000 partitions and ~20-50 s at 10,000,
# so they run up to 1,000 partitions, plus the 1,000 members x 10,000 partitions headline.
KAFKA_PYTHON_MAX_PARTITIONS = 1_000
KAFKA_PYTHON_HEADLINE = (1000, 10_000, 100)


def group(members: int, ppm: int, topics: int, mixed: bool):
    total = members * ppm
    per_topic = total // topics
    names = [f"topic-{j:04d}" for j in range(topics)]
    counts = dict.fromkeys(names, per_topic)
    if not mixed:
        every = frozenset(names)
        subs = {f"member-{i:05d}": every for i in range(members)}
    else:
        buckets = [frozenset(n for j, n in enumerate(names) if j % 3 == b) for b in range(3)]
        pairs = [buckets[b] | buckets[(b + 1) % 3] for b in range(3)]
        subs = {f"member-{i:05d}": pairs[i % 3] for i in range(members)}
    return subs, counts


def new_member_sub(subs):
    first = subs[min(subs)]
    return first


CLOCK = time.perf_counter


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        t0 = CLOCK()
        fn()
        samples.append((CLOCK() - t0) * 1000)
    return statistics.median(samples)


def server_case(name, subs, counts, incremental, runs):
    assignor = get_server_assignor(name)
    spec = GroupSpec({m: MemberSpec(m, s) for m, s in subs.items()})
    if incremental:
        prev = assignor.assign(spec, counts)
        members = {m: MemberSpec(m, s, assignment=prev[m]) for m, s in subs.items()}
        members["member-zzzzz"] = MemberSpec("member-zzzzz", new_member_sub(subs))
        spec = GroupSpec(members)
    return timed(lambda: assignor.assign(spec, counts), runs)


def client_members(subs, owned, generation):
    return {m: ClientMember(m, None, Subscription(
        tuple(sorted(s)), None, topic_partitions(owned.get(m, {})),
        generation if owned.get(m) else -1)) for m, s in subs.items()}


def coop_case(subs, counts, incremental, runs):
    assignor = get_client_assignor("cooperative-sticky")
    members = client_members(subs, {}, -1)
    prev = None
    if incremental:
        out = assignor.assign(members, counts)
        prev = {m: a.as_dict() for m, a in out.items()}
        subs = {**subs, "member-zzzzz": new_member_sub(subs)}
        members = client_members(subs, prev, 1)
    return timed(lambda: assignor.assign(members, counts), runs), subs, prev


def client_case(name, subs, counts, incremental, runs):
    """A stateless client-side assignor (range, roundrobin): incremental = one member more."""
    assignor = get_client_assignor(name)
    if incremental:
        subs = {**subs, "member-zzzzz": new_member_sub(subs)}
    members = client_members(subs, {}, -1)
    return timed(lambda: assignor.assign(members, counts), runs)


def kafka_python_case(name, subs, counts, prev, runs):
    import kafka_python_side
    return timed(lambda: kafka_python_side.run(name, subs, counts, prev, 1), runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grid")
    ap.add_argument("--big", action="store_true", help="headline large cases only")
    ap.add_argument("--runs", type=int, default=0, help="runs per case (default: by size)")
    ap.add_argument("--case", action="append", default=[], metavar="MxPxT",
                    help="only this case: members x total partitions x topics (repeatable)")
    ap.add_argument("--subs", choices=("identical", "mixed"), help="only these subscriptions")
    ap.add_argument("--mode", choices=("full", "incremental"), help="only this mode")
    ap.add_argument("--only", default="uniform,range,coop,client,kp",
                    help="comma-separated subset of uniform,range,coop,client,kp (default: all);"
                         " client = the client-side range and roundrobin")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall: perf_counter; cpu: process_time (steadier on a busy machine)")
    args = ap.parse_args()
    if args.clock == "cpu":
        global CLOCK
        CLOCK = time.process_time
    only = set(args.only.split(","))
    if args.case:
        grid = []
        for case in args.case:
            m, p, t = (int(x.replace("_", "").replace(",", "")) for x in case.split("x"))
            grid.append((m, p // m, t))
    elif args.quick:
        grid = [(m, p, t) for m in (100, 1000) for p in (5, 10) for t in (10, 100)]
    elif args.big:
        grid = [(1000, 10, 100), (10000, 10, 100), (10000, 10, 1000), (10000, 50, 1000),
                (10000, 100, 1000), (1000, 1000, 1000)]
    else:
        grid = [(m, p, t) for m in (100, 1000, 10000) for p in (5, 10, 50)
                for t in (10, 100, 1000)]
    print(f"{'members':>8} {'parts':>8} {'topics':>6} {'subs':>9} {'mode':>11} | "
          f"{'uniform':>9} {'range':>9} {'coop-st':>9} {'c-range':>9} {'c-rr':>9} |"
          f" {'kp sticky':>10} {'kp coop':>10}"
          f" {'kp/ours':>8}")
    for members, ppm, topics in grid:
        total = members * ppm
        if total < topics:
            continue
        runs = args.runs or (7 if total <= 50_000 else 5 if total <= 200_000 else 3)
        for mixed in (False, True):
            if args.subs and args.subs != ("mixed" if mixed else "identical"):
                continue
            subs, counts = group(members, ppm, topics, mixed)
            for incremental in (False, True):
                if args.mode and args.mode != ("incremental" if incremental else "full"):
                    continue
                nan = float("nan")
                uni = server_case("uniform", subs, counts, incremental, runs) \
                    if "uniform" in only else nan
                rng = server_case("range", subs, counts, incremental, runs) \
                    if "range" in only else nan
                crange = client_case("range", subs, counts, incremental, runs) \
                    if "client" in only else nan
                crr = client_case("roundrobin", subs, counts, incremental, runs) \
                    if "client" in only else nan
                coop = nan
                if "coop" in only or "kp" in only:
                    coop, subs2, prev = coop_case(subs, counts, incremental, runs)
                if "kp" not in only:
                    kp = f"{'not run':>30}"
                elif (total <= KAFKA_PYTHON_MAX_PARTITIONS
                        or (members, total, topics) == KAFKA_PYTHON_HEADLINE):
                    kp_runs = 1 if total >= 5000 else 3
                    kps = kafka_python_case("sticky", subs2, counts, prev, kp_runs)
                    kpc = kafka_python_case("cooperative-sticky", subs2, counts, prev, kp_runs)
                    kp = f"{kps:10.1f} {kpc:10.1f} {kpc / coop:7.0f}x"
                else:
                    kp = f"{'skipped (too slow)':>30}"
                print(f"{members:>8} {total:>8} {topics:>6} {'mixed' if mixed else 'identical':>9}"
                      f" {'incremental' if incremental else 'full':>11} | {uni:9.1f} {rng:9.1f}"
                      f" {coop:9.1f} {crange:9.1f} {crr:9.1f} | {kp}", flush=True)


if __name__ == "__main__":
    main()
