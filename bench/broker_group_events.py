"""What the group event stream costs: `group_events` on against off, side by side.

    .venv/bin/python bench/broker_group_events.py [--quick] [--windows 10] [--seconds 2]
        [--members 100] [--connections 16] [--window 64] [--rebalance-members 1000] [--rounds 3]

Two `kgroup serve` processes from this tree (fsync=never, initial_rebalance_delay_ms=0), one
with `group_events = true`, one with `false`, each with a Stable classic group of --members
(raw JoinGroup/SyncGroup, bench/broker_common.py). Heartbeats are pipelined as in
bench/broker_heartbeats.py, in short windows that alternate between the two brokers, so
load from other processes on a shared machine falls on both alike; printed: the medians
over the windows of heartbeats/s and of heartbeats per broker CPU-second.

Then, --rounds times on each broker in turn: a fresh group of --rebalance-members members
is built (every join, the leader's assignment, every sync: a rebalance of that size, each
join written as events when on); printed: the median broker CPU seconds it took.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import peers
from broker_common import HB_V, HEARTBEAT, HbReq, build_group, pipeline
from broker_heartbeats import HEARTBEAT_ERROR_AT
from kgroup.wire import encode_request
from kgroup.wire.kio_build import build

SIDES = ("events on", "events off")


async def heartbeat_windows(brokers: dict[str, peers.Broker], members_n: int, conns: int, window: int,
                            seconds: float, windows: int) -> dict[str, tuple[list[float], list[float]]]:
    frames: dict[str, list[bytes]] = {}
    for side, b in brokers.items():
        group = f"events-bench-{time.time_ns()}"
        print(f"  {side}: building a Stable group of {members_n} members ...", flush=True)
        members = await build_group(b.host, b.port, group, members_n)
        frames[side] = [encode_request(HEARTBEAT, HB_V, i, "kgroup-bench", build(
            HbReq, group_id=group, generation_id=m.generation, member_id=m.member_id, group_instance_id=None))
            for i, m in enumerate(members)]
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
    out: dict[str, tuple[list[float], list[float]]] = {side: ([], []) for side in brokers}
    for w in range(windows):
        order = list(brokers) if w % 2 == 0 else list(reversed(list(brokers)))
        for side in order:
            b = brokers[side]
            counts = {"ok": 0, "bad": 0}
            start = asyncio.Event()
            tasks = [asyncio.create_task(pipeline(b.host, b.port, frames[side][c::conns] or frames[side], window,
                                                  seconds, counts, start, HEARTBEAT_ERROR_AT))
                     for c in range(conns)]
            await asyncio.sleep(0.2)
            cpu0, t0 = b.cpu_seconds(), time.perf_counter()
            start.set()
            await asyncio.gather(*tasks)
            dt, cpu = time.perf_counter() - t0, b.cpu_seconds() - cpu0
            if counts["bad"]:
                raise RuntimeError(f"{side}: {counts['bad']} heartbeat errors")
            out[side][0].append(counts["ok"] / dt)
            out[side][1].append(counts["ok"] / cpu if cpu > 0 else float("nan"))
            print(f"  window {w + 1} {side}: {counts['ok'] / dt:,.0f} heartbeats/s, "
                  f"{out[side][1][-1]:,.0f} per broker CPU-second", flush=True)
    return out


async def rebalance_rounds(brokers: dict[str, peers.Broker], members_n: int, rounds: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {side: [] for side in brokers}
    for r in range(rounds):
        for side, b in brokers.items():
            cpu0 = b.cpu_seconds()
            members = await build_group(b.host, b.port, f"events-rebalance-{time.time_ns()}", members_n)
            out[side].append(b.cpu_seconds() - cpu0)
            await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
            print(f"  round {r + 1} {side}: a group of {members_n} built with {out[side][-1]:.2f} broker CPU s",
                  flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--windows", type=int, default=None, help="per broker (default 10, 4 with --quick)")
    p.add_argument("--seconds", type=float, default=2.0, help="per window")
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64, help="heartbeats in flight per connection")
    p.add_argument("--rebalance-members", type=int, default=None, help="default 1000, 200 with --quick")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    windows = args.windows or (4 if args.quick else 10)
    big = args.rebalance_members or (200 if args.quick else 1000)
    brokers = {
        "events on": peers.start_kgroup(peers.toml_config(fsync="never", extra="group_events = true")),
        "events off": peers.start_kgroup(peers.toml_config(fsync="never", extra="group_events = false")),
    }
    try:
        hb = asyncio.run(heartbeat_windows(brokers, args.members, args.connections, args.window,
                                           args.seconds, windows))
        rb = asyncio.run(rebalance_rounds(brokers, big, args.rounds))
    finally:
        for b in brokers.values():
            b.stop()

    def med(values: list[float], fmt: str) -> str:
        return format(statistics.median(values), fmt)

    print(f"\nGroup events on vs off: {args.members} members, {args.connections} connections x {args.window} in "
          f"flight, {windows} alternating windows of {args.seconds:g}s each (medians); a group of {big} built "
          f"{args.rounds} times")
    print("| measure | events on | events off |")
    print("|---|---:|---:|")
    print(f"| heartbeats/s (wall clock) | {med(hb['events on'][0], ',.0f')} | {med(hb['events off'][0], ',.0f')} |")
    print(f"| heartbeats per broker CPU-second | {med(hb['events on'][1], ',.0f')} | "
          f"{med(hb['events off'][1], ',.0f')} |")
    print(f"| broker CPU s to build a group of {big} | {med(rb['events on'], '.2f')} | {med(rb['events off'], '.2f')} |")


if __name__ == "__main__":
    main()
