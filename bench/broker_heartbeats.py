"""Heartbeats/s over TCP: a Stable classic group of N members, Heartbeat pipelined on C connections.

    .venv/bin/python bench/broker_heartbeats.py [--quick] [--runs N] [--members 100]
        [--connections 16] [--window 64] [--seconds 5] [--bootstrap HOST:PORT] [--peer tansu|kafka]
    .venv/bin/python bench/broker_heartbeats.py --console-ab [--members 1000] [--runs N]
        [--console-pages 1] [--scrape-ms 5000]
    .venv/bin/python bench/broker_heartbeats.py --control-ab [--members 100] [--runs N]

The group is built with raw JoinGroup/SyncGroup (bench/broker_common.py, one connection
per member). Then C further connections each keep `window` Heartbeat v3 requests in flight
for T seconds, cycling over the members (pre-encoded frames: the client only counts
response frames and checks their error code, so it stays cheap). Prints the median of
heartbeats/s over the runs; any non-zero error code is counted and shown. With --peer both
brokers run at once and the runs alternate between them.
Without --bootstrap it starts `kgroup serve` (fsync=never, initial_rebalance_delay_ms=0).

--console-ab measures what the web console costs: two brokers side by side, A plain and B
with `http_listen` set, a page's live stream open on the bench group (`--console-pages`,
each a separate process reading /api/stream?group=...) and /metrics scraped every
`--scrape-ms`; with --control a second plain broker A' too. Each gets the same group; every
round measures each broker once in a rotating order, so the machine's moods fall on all,
and the medians and the median of the per-round ratios B/A (and A'/A) are printed.

--control-ab measures the same way what the control API costs while no fault is armed: B
has `control_listen` set (the request edge then checks for armed faults), A and A' are
plain.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import urllib.request

import peers
from broker_common import HB_V, HEARTBEAT, HbReq, build_group, pipeline
from kgroup.wire.kio_build import build
from kgroup.wire import encode_request

CONTROL = "A'"

# v3 Heartbeat response: size (4), correlation id (4), throttle_time_ms (4), then the error.
HEARTBEAT_ERROR_AT = 12


async def prepare(b: peers.Broker, group: str, members_n: int, **kw) -> tuple[list, list[bytes]]:
    """A Stable group of `members_n` on broker `b`, and a pre-encoded heartbeat per member."""
    print(f"  building a Stable group of {members_n} members on {b.host}:{b.port} ...", flush=True)
    members = await build_group(b.host, b.port, group, members_n, **kw)
    frames = []
    for i, m in enumerate(members):
        req = build(HbReq, group_id=group, generation_id=m.generation, member_id=m.member_id,
                    group_instance_id=None)
        frames.append(encode_request(HEARTBEAT, HB_V, i, "kgroup-bench", req))
    return members, frames


async def one_run(b: peers.Broker, frames: list[bytes], conns: int, window: int,
                  seconds: float) -> tuple[float, float | None, int]:
    """(heartbeats/s, heartbeats per broker CPU-second, error responses) of one timed run."""
    counts = {"ok": 0, "bad": 0}
    start = asyncio.Event()
    tasks = [asyncio.create_task(pipeline(b.host, b.port, frames[c::conns] or frames, window,
                                          seconds, counts, start, HEARTBEAT_ERROR_AT)) for c in range(conns)]
    await asyncio.sleep(0.3)  # connections open
    cpu0 = b.cpu_seconds()
    t0 = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    dt = time.perf_counter() - t0
    cpu1 = b.cpu_seconds()
    cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
    rate = counts["ok"] / dt
    print(f"  {b.name}: {rate:,.0f} heartbeats/s ({counts['ok']:,} ok, {counts['bad']:,} errors, {dt:.2f}s, "
          f"broker CPU {cpu if cpu is not None else float('nan'):.2f}s)", flush=True)
    return rate, (counts["ok"] / cpu if cpu else None), counts["bad"]


async def measure(b: peers.Broker, members_n: int, conns: int, window: int,
                  seconds: float, runs: int) -> tuple[list[float], list[float], int]:
    """(heartbeats/s per run, per broker CPU-second per run, error responses) on `b`."""
    return (await measure_all({b.name: b}, members_n, conns, window, seconds, runs))[b.name]


async def measure_all(brokers: dict, members_n: int, conns: int, window: int,
                      seconds: float, runs: int) -> dict[str, tuple[list[float], list[float], int]]:
    """{side: (heartbeats/s per run, per broker CPU-second per run, error responses)}: a
    group prepared on every broker, then the runs alternate between them."""
    prepared = {}
    out = {side: ([], [], 0) for side in brokers}
    try:
        for side, b in brokers.items():
            prepared[side] = await prepare(b, f"hb-bench-{time.time_ns()}", members_n)
        for _ in range(runs):
            for side, b in brokers.items():
                rate, cpu, bad = await one_run(b, prepared[side][1], conns, window, seconds)
                rates, per_cpu, errors = out[side]
                rates.append(rate)
                if cpu:
                    per_cpu.append(cpu)
                out[side] = (rates, per_cpu, errors + bad)
    finally:
        await asyncio.gather(*(m.close() for members, _ in prepared.values() for m in members),
                             return_exceptions=True)
    return out


# ---- the console's cost ------------------------------------------------------------------

def console_page(url: str, group: str, scrape_ms: int) -> None:
    """What an open console page does (read its live stream), plus a /metrics scraper."""
    import threading

    def scrape() -> None:
        while True:
            urllib.request.urlopen(url + "metrics", timeout=30).read()
            time.sleep(scrape_ms / 1000)

    if scrape_ms > 0:
        threading.Thread(target=scrape, daemon=True).start()
    with urllib.request.urlopen(f"{url}api/stream?group={group}", timeout=600) as stream:
        while stream.read(4096):
            pass


async def console_ab(args, seconds: float, runs: int) -> None:
    http_port = peers.free_port()
    url = f"http://127.0.0.1:{http_port}/"

    def open_pages(group: str) -> list[subprocess.Popen]:
        return [subprocess.Popen([sys.executable, __file__, "--console-client", url, group,
                                  "--scrape-ms", str(args.scrape_ms if i == 0 else 0)])
                for i in range(args.console_pages)]

    await ab(args, seconds, runs, f'http_listen = "127.0.0.1:{http_port}"', "B: console + page + /metrics",
             "no console", open_pages, floor=args.control)


async def control_ab(args, seconds: float, runs: int) -> None:
    await ab(args, seconds, runs, f'control_listen = "127.0.0.1:{peers.free_port()}"',
             "B: --control-listen, no fault armed", "plain", lambda group: [], floor=True)


async def ab(args, seconds: float, runs: int, b_setting: str, b_head: str, a_head: str,
             open_b, floor: bool) -> None:
    """A plain against B with `b_setting` (and A', plain again, with `floor`), interleaved;
    `open_b(group)` starts what keeps B busy meanwhile (processes, stopped at the end)."""
    plain = peers.start_kgroup(peers.toml_config(fsync="never", initial_rebalance_delay_ms=0))
    with_b = peers.start_kgroup(peers.toml_config(fsync="never", initial_rebalance_delay_ms=0, extra=b_setting))
    plain.name, with_b.name = "A", "B"
    brokers = [plain, with_b]
    if floor:
        # A second plain broker, measured the same way: how far apart two identical brokers
        # come out here is the noise floor the figure of B is read against.
        control = peers.start_kgroup(peers.toml_config(fsync="never", initial_rebalance_delay_ms=0))
        control.name = CONTROL
        brokers.append(control)
    pages: list[subprocess.Popen] = []
    built: list = []
    try:
        group = f"hb-bench-{time.time_ns()}"
        frames = {}
        for b in brokers:
            # A long session: the broker not being measured gets no heartbeats meanwhile.
            members, frames[b.name] = await prepare(b, group, args.members, session_ms=600_000,
                                                    rebalance_ms=600_000)
            built += members
        pages = open_b(group)
        if pages:
            await asyncio.sleep(3)             # the pages open and have had a lag sample
        rates: dict[str, list[float]] = {b.name: [] for b in brokers}
        cpu: dict[str, list[float | None]] = {b.name: [] for b in brokers}
        for r in range(runs):
            # Each round measures every broker once, in a rotating order.
            for b in brokers[r % len(brokers):] + brokers[:r % len(brokers)]:
                rate, per_cpu, _ = await one_run(b, frames[b.name], args.connections, args.window, seconds)
                rates[b.name].append(rate)
                cpu[b.name].append(per_cpu)
        assert all(p.poll() is None for p in pages), "a process keeping B busy ended early"

        def paired(values: dict[str, list], name: str) -> float | None:
            """Median over rounds of (name's figure / A's figure in the same round)."""
            return peers.median([x / a for x, a in zip(values[name], values["A"]) if x and a])

        print(f"\nHeartbeats/s, {args.members} members, {args.connections} connections x {args.window} in flight, "
              f"{seconds:g}s x {runs} rounds, brokers interleaved (medians)")
        names = [b.name for b in brokers]
        head = {"A": f"A: {a_head}", "B": b_head, CONTROL: f"A': {a_head} (control)"}
        print("| measure | " + " | ".join(head[n] for n in names) + " | B/A | " + ("A'/A |" if floor else ""))
        print("|---|" + "---:|" * (len(names) + 1 + floor))
        for label, values in (("heartbeats/s (wall clock)", rates), ("heartbeats per broker CPU-second", cpu)):
            cells = [peers.fmt(peers.median(values[n])) for n in names]
            cells.append(f"{paired(values, 'B'):.3f}")
            if floor:
                cells.append(f"{paired(values, CONTROL):.3f}")
            print(f"| {label} | " + " | ".join(cells) + " |")
        for n in names:
            print(f"runs {n}: " + ", ".join(f"{x:,.0f}" for x in rates[n]) + " heartbeats/s; per CPU-s: "
                  + ", ".join(f"{x:,.0f}" for x in cpu[n] if x))
        print("(B/A and A'/A: the median over rounds of the ratio within a round)")
    finally:
        for p in pages:
            p.terminate()
            p.wait()
        await asyncio.gather(*(m.close() for m in built), return_exceptions=True)
        for b in brokers:
            b.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64, help="heartbeats in flight per connection")
    p.add_argument("--seconds", type=float, default=None, help="per run (default 10, 3 with --quick)")
    p.add_argument("--console-ab", action="store_true",
                   help="measure a broker without and one with the web console open (A/B, interleaved)")
    p.add_argument("--console-pages", type=int, default=1, help="console pages open on B (default 1)")
    p.add_argument("--scrape-ms", type=int, default=5000, help="/metrics scrape interval on B (default 5000)")
    p.add_argument("--control", action="store_true",
                   help="with --console-ab: also a second plain broker, to show the noise floor")
    p.add_argument("--control-ab", action="store_true",
                   help="measure plain brokers against one with the control API on (no fault armed)")
    p.add_argument("--console-client", nargs=2, metavar=("URL", "GROUP"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.console_client:
        console_page(*args.console_client, args.scrape_ms)
        return
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    n = peers.runs(args)
    if args.console_ab:
        asyncio.run(console_ab(args, seconds, n))
        return
    if args.control_ab:
        asyncio.run(control_ab(args, seconds, n))
        return
    results: dict[str, object] = {}
    errs: dict[str, object] = {}
    cpu: dict[str, object] = {}
    cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)
    with peers.brokers(args, cfg) as brokers:
        measured = asyncio.run(measure_all(brokers, args.members, args.connections, args.window, seconds, n))
    for side, (rates, per_cpu, errors) in measured.items():
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
