"""Coordinator core throughput: heartbeats, join-sync rounds, and log replay.

Everything runs in-process against the pure core (no broker, no wire codec); only the core
calls are timed. Figures are medians over 5 runs (3 with --quick, on smaller inputs).

  heartbeat      1,000-member Stable group; `GroupCoordinatorShard.heartbeat` called directly with
                 a dummy reply token, rotating through the members.
  join-sync      1,000-member group; one round = the leader rejoins (starting a rebalance),
                 every other member rejoins, the join phase completes, the leader syncs with
                 assignments for all, every follower syncs. Records are replayed as a broker
                 would. Reported as rounds/s and member-joins/s.
  replay         1M offset-commit records: `replay` of decoded records, `decode` alone, and
                 decode+replay from encoded payloads (record_codec) — the restart path.

Run: .venv/bin/python bench/core.py [--quick] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import statistics
import time

from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from kgroup.core.record_codec import decode, encode
from kgroup.core.records import OffsetCommitRecord, OffsetCommitValue

GROUP = "bench-group"
PROTOCOLS = (("range", b"\x00\x01\x00\x00\x00\x01\x00\x05topic\x00\x00\x00\x00"),)
REPLY = object()  # the dummy reply token


def apply(coord: GroupCoordinatorShard, result) -> None:
    for record in result.records:
        coord.replay(record)


def join_request(member_id: str, instance: str | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP, member_id=member_id, protocol_type="consumer", protocols=PROTOCOLS,
        session_timeout_ms=30_000, rebalance_timeout_ms=60_000, group_instance_id=instance,
        client_id="bench", client_host="/127.0.0.1", api_version=9,
    )


def stable_group(n: int) -> tuple[GroupCoordinatorShard, list[str], int]:
    """A coordinator holding one Stable group of n members (v3 joins: no two-step)."""
    coord = GroupCoordinatorShard(GroupConfig(initial_rebalance_delay_ms=0))
    apply(coord, coord.load_complete(0))
    for _ in range(n):
        req = join_request("")
        apply(coord, coord.join_group(JoinGroupRequest(**{**_fields(req), "api_version": 3}), REPLY, 0))
    now = 0
    while coord.groups[GROUP].generation == 0:
        now = coord.next_deadline()
        while (result := coord.expire(now)) is not None:
            apply(coord, result)
    group = coord.groups[GROUP]
    members = list(group.members)
    generation = group.generation
    sync_all(coord, group.leader, members, generation, now)
    assert group.state.value == "Stable", group.state
    return coord, members, generation


def _fields(req) -> dict:
    return {name: getattr(req, name) for name in req.__slots__}


def sync_all(coord: GroupCoordinatorShard, leader: str, members: list[str], generation: int, now: int) -> None:
    assignments = tuple((m, b"assignment-" + m.encode()) for m in members)
    apply(coord, coord.sync_group(SyncGroupRequest(GROUP, generation, leader, assignments=assignments), REPLY, now))
    for m in members:
        if m != leader:
            apply(coord, coord.sync_group(SyncGroupRequest(GROUP, generation, m), REPLY, now))


# ---- (a) heartbeats --------------------------------------------------------------------------

def bench_heartbeat(n_members: int, n_calls: int) -> float:
    coord, members, generation = stable_group(n_members)
    requests = [HeartbeatRequest(GROUP, generation, m) for m in members]
    heartbeat = coord.heartbeat
    k = len(requests)
    rounds, rest = divmod(n_calls, k)
    now = 1_000
    gc.collect()
    start = time.perf_counter()
    for _ in range(rounds):
        for req in requests:
            heartbeat(req, REPLY, now)
        now += 1
    for req in requests[:rest]:
        heartbeat(req, REPLY, now)
    elapsed = time.perf_counter() - start
    return n_calls / elapsed


def profile_heartbeat(n_members: int, n_calls: int) -> str:
    coord, members, generation = stable_group(n_members)
    requests = [HeartbeatRequest(GROUP, generation, m) for m in members] * (n_calls // n_members)
    heartbeat = coord.heartbeat
    profiler = cProfile.Profile()
    profiler.enable()
    for req in requests:
        heartbeat(req, REPLY, 1_000)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(12)
    return out.getvalue()


# ---- (b) join-sync rounds ---------------------------------------------------------------------

def bench_rounds(n_members: int, n_rounds: int) -> float:
    """Seconds per round, timing only core calls (and the replay of their records)."""
    coord, members, generation = stable_group(n_members)
    group = coord.groups[GROUP]
    now = 10_000
    elapsed = 0.0
    for _ in range(n_rounds):
        leader = group.leader
        order = [leader] + [m for m in members if m != leader]
        joins = [join_request(m) for m in order]
        gc.collect()
        start = time.perf_counter()
        for req in joins:
            apply(coord, coord.join_group(req, REPLY, now))
        assert group.state.value == "CompletingRebalance", group.state
        generation = group.generation
        sync_all(coord, group.leader, order, generation, now)
        elapsed += time.perf_counter() - start
        assert group.state.value == "Stable"
        now += 1_000
    return elapsed / n_rounds


# ---- (c) replay --------------------------------------------------------------------------------

def offset_records(n: int) -> list[OffsetCommitRecord]:
    """n commits over 100 groups x 10 topics x 32 partitions, as a busy shard writes them."""
    return [
        OffsetCommitRecord(f"group-{i % 100}", f"topic-{i % 10}", i % 32,
                           OffsetCommitValue(i, 5, "" if i % 4 else "meta", 1_700_000_000_000 + i))
        for i in range(n)
    ]


def bench_replay(records) -> float:
    coord = GroupCoordinatorShard()
    replay = coord.replay
    gc.collect()
    start = time.perf_counter()
    for r in records:
        replay(r)
    return len(records) / (time.perf_counter() - start)


def bench_decode(payloads) -> float:
    gc.collect()
    gc.disable()  # the decoded list keeps every record alive; GC passes would dominate
    try:
        start = time.perf_counter()
        decoded = [decode(p) for p in payloads]
        rate = len(payloads) / (time.perf_counter() - start)
    finally:
        gc.enable()
    del decoded
    return rate


def bench_decode_replay(payloads) -> float:
    coord = GroupCoordinatorShard()
    replay = coord.replay
    gc.collect()
    start = time.perf_counter()
    for p in payloads:
        replay(decode(p))
    return len(payloads) / (time.perf_counter() - start)


# ---- main ----------------------------------------------------------------------------------

def median_of(runs: int, fn, *args) -> float:
    return statistics.median(fn(*args) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run: 3 repetitions, smaller inputs")
    parser.add_argument("--profile", action="store_true", help="also cProfile the heartbeat path")
    args = parser.parse_args()
    runs = 3 if args.quick else 5
    members = 1_000
    heartbeats = 100_000 if args.quick else 500_000
    rounds = 2 if args.quick else 5
    n_records = 100_000 if args.quick else 1_000_000

    rows = []
    hb = median_of(runs, bench_heartbeat, members, heartbeats)
    rows.append(("heartbeat (1,000-member Stable group)", f"{hb:,.0f} /s", ">= 200,000 /s"))
    per_round = median_of(runs, bench_rounds, members, rounds)
    rows.append(("join-sync round (1,000 members)", f"{1 / per_round:,.2f} rounds/s", ""))
    rows.append(("  member joins in those rounds", f"{members / per_round:,.0f} joins/s", ""))
    records = offset_records(n_records)
    payloads = [encode(r) for r in records]
    decoded = [decode(p) for p in payloads]
    rows.append((f"replay {n_records:,} decoded offset commits",
                 f"{median_of(runs, bench_replay, decoded):,.0f} /s", ">= 1,000,000 /s"))
    rows.append((f"decode {n_records:,} offset-commit payloads",
                 f"{median_of(runs, bench_decode, payloads):,.0f} /s", ""))
    rows.append((f"decode+replay {n_records:,} payloads",
                 f"{median_of(runs, bench_decode_replay, payloads):,.0f} /s", ">= 500,000 /s"))

    width = max(len(r[0]) for r in rows)
    print(f"{'benchmark':<{width}}  {'median of ' + str(runs):>22}  target")
    print("-" * (width + 40))
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>22}  {target}")
    if args.profile:
        print()
        print(profile_heartbeat(members, 200_000))


if __name__ == "__main__":
    main()
