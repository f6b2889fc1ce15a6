"""Heartbeats/s over TCP: a Stable classic group of N members, Heartbeat pipelined on C connections.

    .venv/bin/python bench/broker_heartbeats.py [--quick] [--runs N] [--members 100]
        [--connections 16] [--window 64] [--seconds 5] [--bootstrap HOST:PORT] [--peer tansu]

The group is built with raw JoinGroup/SyncGroup (bench/broker_common.py, one connection
per member). Then C further connections each keep `window` Heartbeat v3 requests in flight
for T seconds, cycling over the members (pre-encoded frames: the client only counts
response frames and checks their error code, so it stays cheap). Prints the median of
heartbeats/s over the runs; any non-zero error code is counted and shown.
Without --bootstrap it starts `kgroup serve` (fsync=never, initial_rebalance_delay_ms=0).
"""

from __future__ import annotations

import argparse
import asyncio
import time

import peers
from broker_common import HB_V, HEARTBEAT, HbReq, build_group, pipeline
from kgroup.wire.kio_build import build
from kgroup.wire import encode_request

# v3 Heartbeat response: size (4), correlation id (4), throttle_time_ms (4), then the error.
HEARTBEAT_ERROR_AT = 12


async def measure(b: peers.Broker, members_n: int, conns: int, window: int,
                  seconds: float, runs: int) -> tuple[list[float], list[float], int]:
    host, port = b.host, b.port
    group = f"hb-bench-{time.time_ns()}"
    print(f"  building a Stable group of {members_n} members on {host}:{port} ...", flush=True)
    members = await build_group(host, port, group, members_n)
    frames = []
    for i, m in enumerate(members):
        req = build(HbReq, group_id=group, generation_id=m.generation, member_id=m.member_id,
                    group_instance_id=None)
        frames.append(encode_request(HEARTBEAT, HB_V, i, "kgroup-bench", req))
    rates = []
    per_cpu = []
    errors = 0
    try:
        for r in range(runs):
            counts = {"ok": 0, "bad": 0}
            start = asyncio.Event()
            tasks = [asyncio.create_task(pipeline(host, port, frames[c::conns] or frames, window,
                                               seconds, counts, start, HEARTBEAT_ERROR_AT)) for c in range(conns)]
            await asyncio.sleep(0.3)  # connections open
            cpu0 = b.cpu_seconds()
            t0 = time.perf_counter()
            start.set()
            await asyncio.gather(*tasks)
            dt = time.perf_counter() - t0
            cpu1 = b.cpu_seconds()
            cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
            if cpu:
                per_cpu.append(counts["ok"] / cpu)
            rate = counts["ok"] / dt
            errors += counts["bad"]
            rates.append(rate)
            print(f"  run {r + 1}: {rate:,.0f} heartbeats/s ({counts['ok']:,} ok, {counts['bad']:,} errors, {dt:.2f}s, broker CPU {cpu if cpu is not None else float('nan'):.2f}s)",
                  flush=True)
    finally:
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)
    return rates, per_cpu, errors


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64, help="heartbeats in flight per connection")
    p.add_argument("--seconds", type=float, default=None, help="per run (default 10, 3 with --quick)")
    args = p.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    n = peers.runs(args)
    results: dict[str, object] = {}
    errs: dict[str, object] = {}
    cpu: dict[str, object] = {}
    cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)
    for side in peers.sides(args):
        print(f"{side}:", flush=True)
        with peers.broker(args, side, cfg) as b:
            rates, per_cpu, errors = asyncio.run(measure(b, args.members, args.connections,
                                                args.window, seconds, n))
        results[side] = peers.median(rates)
        errs[side] = str(errors)
        cpu[side] = peers.median(per_cpu)
    peers.print_table(
        f"Heartbeats/s, {args.members} members, {args.connections} connections x {args.window} in flight, "
        f"{seconds:g}s x {n} runs (median)",
        [("heartbeats/s (wall clock)", results), ("heartbeats per broker CPU-second", cpu),
         ("error responses (all runs)", errs)], peers.sides(args))


if __name__ == "__main__":
    main()
