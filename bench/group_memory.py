"""Memory per idle group with committed offsets and per live member, on kgroup and (with
--peer kafka) Apache Kafka 4.4 (issue 35).

    .venv/bin/python bench/group_memory.py [--peer kafka] [--groups 10000] [--offsets 10]
        [--members 10000] [--group-size 100] [--runs N] [--quick]

Per run, on a freshly started broker of each side (the runs alternate: ours, Kafka, ...;
fsync never; the same [group] settings on both: long consumer sessions, assignment
interval 0):
1. baseline: coordinator found, a topic of --offsets partitions and one of --group-size
   partitions created, one group committed (every code path touched once);
2. --groups idle groups each commit --offsets offsets (OffsetCommit v8, generation -1, as
   an admin tool or a consumer that has left commits), then nothing: per idle group =
   (RSS after - RSS at baseline) / groups;
3. --members consumer-protocol members (ConsumerGroupHeartbeat v1, simulated as in
   bench/consumer_protocol.py, pipelined on 16 connections) join groups of --group-size on
   the second topic and settle (every member holds its target): per live member =
   (RSS after - RSS after 2) / members.
RSS is the process's resident set (/proc VmRSS), read after 2 s of quiet. A JVM's RSS
grows with the heap it has touched and G1 rarely returns it, so for Kafka the live heap
after a full GC (`jcmd PID GC.run`, then `GC.heap_info`'s "used") is printed beside it:
the memory the state itself holds. kgroup's RSS is CPython's, allocator arenas included.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import time

import peers
from broker_common import coordinator_ready
from consumer_protocol import TCP_GROUP, tcp_setup
from group_log_load import send_commit
from kgroup.client.connection import Connection
from kgroup.core.config import GroupConfig

HEAP_USED = re.compile(r"used (\d+)K")


def heap_used_mb(b: peers.Broker) -> float | None:
    """A JVM broker's live heap after a full GC, MiB (None for another broker)."""
    if b.kind != "kafka" or b.proc is None:
        return None
    try:
        subprocess.run(["jcmd", str(b.proc.pid), "GC.run"], capture_output=True, timeout=60, check=True)
        out = subprocess.run(["jcmd", str(b.proc.pid), "GC.heap_info"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = HEAP_USED.search(out)
    return int(m.group(1)) / 1024 if m else None


def settle_memory(b: peers.Broker) -> tuple[float | None, float | None]:
    """(RSS MiB, live heap MiB or None) after 2 s of quiet."""
    time.sleep(2)
    heap = heap_used_mb(b)
    return b.rss_mb(), heap


async def commit_groups(b: peers.Broker, prefix: str, groups: int, topic: str, offsets: int) -> None:
    conn = await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=300)
    sem = asyncio.Semaphore(16)
    errors: list[str] = []

    try:
        await coordinator_ready(conn, f"{prefix}-0")
        tasks = []
        for g in range(groups):
            await sem.acquire()
            tasks.append(asyncio.create_task(send_commit(conn, f"{prefix}-{g}", topic,
                                                         {p: 1000 + p for p in range(offsets)}, errors, sem)))
        await asyncio.gather(*tasks)
    finally:
        await conn.close()
    if errors:
        raise RuntimeError(f"OffsetCommit failed: {errors[0]}")


def create_topics(b: peers.Broker, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for fut in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        fut.result(120)


async def live_members(b: peers.Broker, members: int, group_size: int, partitions: int) -> list:
    """Members joined and settled (their connections are returned, to be closed later)."""
    groups = max(1, members // group_size)
    _sims, pool, join_s, settle_s = await tcp_setup(b, members, groups, partitions, 16,
                                                    f"mem-members-{time.time_ns()}")
    return pool


def one_run(b: peers.Broker, args) -> dict:
    tag = time.time_ns()
    offsets_topic = f"mem-offsets-{tag}"
    create_topics(b, {offsets_topic: args.offsets})
    asyncio.run(commit_groups(b, f"mem-base-{tag}", 1, offsets_topic, args.offsets))
    rss0, heap0 = settle_memory(b)
    t = time.perf_counter()
    asyncio.run(commit_groups(b, f"mem-idle-{tag}", args.groups, offsets_topic, args.offsets))
    print(f"  {b.name}: {args.groups:,} groups committed {args.offsets} offsets each in "
          f"{time.perf_counter() - t:.1f}s", flush=True)
    rss1, heap1 = settle_memory(b)

    async def members_then_memory():
        pool = await live_members(b, args.members, args.group_size, args.group_size)
        try:
            return await asyncio.get_running_loop().run_in_executor(None, settle_memory, b)
        finally:
            await asyncio.gather(*(c.close() for c in pool), return_exceptions=True)
    rss2, heap2 = asyncio.run(members_then_memory())

    def per(a, b_, n, unit=1024):  # KiB per item
        return None if a is None or b_ is None else (b_ - a) * unit / n
    return {"rss0": rss0, "group_kib": per(rss0, rss1, args.groups), "member_kib": per(rss1, rss2, args.members),
            "heap_group_kib": per(heap0, heap1, args.groups), "heap_member_kib": per(heap1, heap2, args.members),
            "rss2": rss2}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--groups", type=int, default=None, help="idle groups (default 10,000; 300 with --quick)")
    p.add_argument("--offsets", type=int, default=10, help="offsets each idle group commits (default 10)")
    p.add_argument("--members", type=int, default=None, help="live members (default 10,000; 300 with --quick)")
    p.add_argument("--group-size", type=int, default=100, help="members per group (default 100)")
    args = p.parse_args()
    if args.bootstrap:
        p.error("--bootstrap: the brokers must be ours (their memory is read from /proc)")
    if args.peer not in (None, "kafka"):
        p.error("--peer: only kafka is measured here")
    args.groups = args.groups or (300 if args.quick else 10_000)
    args.members = args.members or (300 if args.quick else 10_000)
    runs = peers.runs(args)
    figures = {side: [] for side in peers.sides(args)}
    print(f"load average before: {peers.load_average()}", flush=True)
    for r in range(runs):
        # a fresh broker per run and side: what a run leaves behind is not measured again
        for side in peers.sides(args):
            cfg = 'fsync = "never"\n[group]\n' + peers.group_toml(TCP_GROUP)
            with peers.broker(args, side, cfg, group=GroupConfig(**TCP_GROUP)) as b:
                x = one_run(b, args)
            figures[side].append(x)
            print(f"  run {r + 1} {side}: baseline RSS {peers.fmt(x['rss0'])} MiB, per idle group "
                  f"{peers.fmt(x['group_kib'])} KiB, per live member {peers.fmt(x['member_kib'])} KiB"
                  + (f" (live heap: {peers.fmt(x['heap_group_kib'])} / {peers.fmt(x['heap_member_kib'])} KiB)"
                     if x["heap_group_kib"] is not None else "") + f"; load {peers.load_average()}", flush=True)

    def med(key):
        return {side: peers.median([x[key] for x in xs]) for side, xs in figures.items()}
    rows = [("RSS at baseline, MiB", med("rss0")),
            (f"per idle group with {args.offsets} committed offsets, KiB of RSS", med("group_kib")),
            (f"per live member (groups of {args.group_size}), KiB of RSS", med("member_kib")),
            (f"RSS with {args.groups:,} idle groups and {args.members:,} live members, MiB", med("rss2"))]
    if any(x["heap_group_kib"] is not None for xs in figures.values() for x in xs):
        rows += [("per idle group, KiB of live heap after a full GC (JVM)", med("heap_group_kib")),
                 ("per live member, KiB of live heap after a full GC (JVM)", med("heap_member_kib"))]
    peers.print_table(f"Memory per idle group and per live member, {args.groups:,} groups, {args.members:,} members, "
                      f"{runs} runs (median, lower is better)", rows, peers.sides(args), higher_is_better=False)
    print(f"load average after: {peers.load_average()}")


if __name__ == "__main__":
    main()
