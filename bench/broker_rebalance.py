"""Classic-group rebalances: a newcomer joins a Stable group of N (default), or N members
join one empty group at once (--join); time until all are Stable.

    .venv/bin/python bench/broker_rebalance.py [--quick] [--runs N] [--sizes 10,100]
        [--bootstrap HOST:PORT] [--peer tansu|kafka]
    .venv/bin/python bench/broker_rebalance.py --join [--sizes 100,1000] [--partitions 1000]
        [--heartbeat-ms 300] [--runs N] [--peer kafka]

Per run: a fresh group of N members is brought to Stable with raw JoinGroup/SyncGroup
(bench/broker_common.py, one connection per member; not timed). Then, timed:
t0 = the newcomer sends JoinGroup (two-step MEMBER_ID_REQUIRED included, as a real client
does it); each existing member heartbeats in a tight loop (no sleep) until it sees
REBALANCE_IN_PROGRESS, then rejoins at once; the leader assigns in its SyncGroup, everyone
else syncs with no assignments. The figure is the time from t0 to the last member's SyncGroup
response for the new generation (N + 1 members). Client work is a few kio encodes/decodes
per member, on the same machine.
Without --bootstrap it starts `kgroup serve` with initial_rebalance_delay_ms=0, fsync=never.

--join: per run, N members (one connection each, opened and answered ApiVersions before
the clock starts) send JoinGroup to a new group at the same moment t0 and then behave as
a consumer does: join (two-step MEMBER_ID_REQUIRED included), sync, heartbeat every
--heartbeat-ms, rejoin when told REBALANCE_IN_PROGRESS; the leader deals --partitions
partitions round robin over the members it was given. Figures, for the final generation
(the one all N hold): "to Stable" = t0 -> the leader's SyncGroup answer (the group is
Stable once the leader's SyncGroup arrives); "every partition owned" = t0 -> the last
member's SyncGroup answer (each member then holds its partitions). Both brokers run at
once and the runs alternate (ours, Kafka, ours, ...), both with
group.initial.rebalance.delay.ms = 0 (kgroup's initial_rebalance_delay_ms = 0; Kafka's
default is 3 s, which would only add 3 s to both columns' first generation).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import peers
from broker_common import NONE, REBALANCE_IN_PROGRESS, Member, build_group, coordinator_ready, stabilize


async def _existing(m: Member, t0: float) -> float:
    m.phases = []  # (what, ms since t0) for the slow-run report
    beats = 0
    while True:
        err = await m.heartbeat()
        beats += 1
        if err == NONE:
            continue
        m.phases.append((f"heartbeat#{beats}->{err}", (time.perf_counter() - t0) * 1000))
        while True:
            if await m.join() != NONE:
                raise RuntimeError(f"join failed for {m.member_id}")
            m.phases.append(("join answered", (time.perf_counter() - t0) * 1000))
            err = await m.sync()
            m.phases.append((f"sync answered {err}", (time.perf_counter() - t0) * 1000))
            if err == NONE:
                return time.perf_counter() - t0
            if err != REBALANCE_IN_PROGRESS:
                raise RuntimeError(f"sync error {err}")


async def _newcomer(m: Member, t0: float) -> float:
    m.phases = []
    while True:
        err = await m.join()
        if err != NONE:
            raise RuntimeError(f"newcomer join error {err}")
        m.phases.append(("join answered", (time.perf_counter() - t0) * 1000))
        err = await m.sync()
        m.phases.append((f"sync answered {err}", (time.perf_counter() - t0) * 1000))
        if err == NONE:
            return time.perf_counter() - t0
        if err != REBALANCE_IN_PROGRESS:
            raise RuntimeError(f"newcomer sync error {err}")


SLOW_S = 0.5


def fmt_phases(m: Member) -> str:
    return ", ".join(f"{what} @{ms:.0f}ms" for what, ms in getattr(m, "phases", []))


async def one_run(host: str, port: int, n: int) -> float:
    group = f"rb-bench-{n}-{time.time_ns()}"
    members = await build_group(host, port, group, n)
    newcomer = await Member.open(host, port, group)
    try:
        t0 = time.perf_counter()
        times = await asyncio.wait_for(asyncio.gather(
            _newcomer(newcomer, t0), *(_existing(m, t0) for m in members)), 120)
        everyone = members + [newcomer]
        gens = {m.synced_generation for m in everyone}
        leaders = [m for m in everyone if m.leader]
        if len(gens) != 1 or len(leaders) != 1 or leaders[0].members_seen != n + 1:
            raise RuntimeError(f"not one Stable generation of {n + 1}: gens={gens}, "
                               f"leader saw {[x.members_seen for x in leaders]}")
        worst = max(times)
        if worst > SLOW_S:
            # Say where the time went: the first and last member to finish, the newcomer.
            last = members[max(range(n), key=lambda i: times[1 + i])]
            print(f"    slow run ({worst * 1000:.0f} ms): newcomer {fmt_phases(newcomer)}; "
                  f"last existing member {fmt_phases(last)}", flush=True)
        return worst
    finally:
        await asyncio.gather(*(m.close() for m in members + [newcomer]), return_exceptions=True)


async def measure(host: str, port: int, n: int, runs: int) -> list[float]:
    out = []
    for r in range(runs):
        ms = await one_run(host, port, n) * 1000
        out.append(ms)
        print(f"  {n} members, run {r + 1}: {ms:.1f} ms", flush=True)
    return out


async def join_run(b: peers.Broker, n: int, partitions: int, heartbeat_s: float) -> tuple[float, float]:
    """(ms to Stable, ms to every partition owned) of N members joining one empty group."""
    group = f"join-bench-{n}-{time.time_ns()}"
    members = list(await asyncio.gather(*(Member.open(b.host, b.port, group, partitions=partitions)
                                          for _ in range(n))))
    try:
        await coordinator_ready(members[0].conn, group)
        t0 = time.perf_counter()
        await stabilize(members, group, heartbeat_s, timeout=300)
        leader = next(m for m in members if m.leader)
        return (leader.synced_at - t0) * 1000, (max(m.synced_at for m in members) - t0) * 1000
    finally:
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)


def join_main(args) -> None:
    sizes = [int(x) for x in args.sizes.split(",")]
    runs = peers.runs(args)
    cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)
    with peers.brokers(args, cfg) as brokers:
        rows = peers.join_rows(brokers, runs, sizes, lambda _side, b, n: asyncio.run(
            join_run(b, n, args.partitions, args.heartbeat_ms / 1000)))
    peers.print_table(f"Classic protocol: N members join one empty group at once (JoinGroup v5 / SyncGroup v3, "
                      f"heartbeat every {args.heartbeat_ms} ms, {args.partitions} partitions dealt by the leader), "
                      f"{runs} runs (median, lower is better)", rows, peers.sides(args), higher_is_better=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--sizes", default=None,
                   help="group sizes before the newcomer (default 10,100); with --join, of the joining "
                        "group (default 100,1000)")
    p.add_argument("--join", action="store_true", help="N members join one empty group at once")
    p.add_argument("--partitions", type=int, default=1000, help="--join: partitions the leader deals")
    p.add_argument("--heartbeat-ms", type=int, default=300, help="--join: members' heartbeat interval")
    args = p.parse_args()
    if args.join:
        args.sizes = args.sizes or "100,1000"
        join_main(args)
        return
    args.sizes = args.sizes or "10,100"
    sizes = [int(x) for x in args.sizes.split(",")]
    runs = peers.runs(args)
    rows = {f"{n} members + 1 newcomer, ms": {} for n in sizes}
    cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)
    for side in peers.sides(args):
        print(f"{side}:", flush=True)
        with peers.broker(args, side, cfg) as b:
            for n, key in zip(sizes, rows):
                try:
                    rows[key][side] = peers.median(asyncio.run(measure(b.host, b.port, n, runs)))
                except Exception as exc:  # report the failure in the table, go on
                    print(f"  {n} members: failed: {exc!r}", flush=True)
                    rows[key][side] = f"failed ({type(exc).__name__})"
    peers.print_table(f"Rebalance overhead (newcomer JoinGroup sent -> last SyncGroup answer), "
                      f"{runs} runs (median, lower is better)", list(rows.items()), peers.sides(args),
                      higher_is_better=False)


if __name__ == "__main__":
    main()
