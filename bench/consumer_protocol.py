"""Consumer-protocol (KIP-848) benchmarks: convergence with librdkafka, heartbeat throughput.

    .venv/bin/python bench/consumer_protocol.py --convergence [--runs N] [--interval-ms 1000]
    .venv/bin/python bench/consumer_protocol.py --heartbeats [--runs N] [--members 10000]
        [--groups 1,100] [--tcp-groups 100] [--connections 16] [--window 64] [--seconds 5]
        [--peer kafka] [--core-only]
    .venv/bin/python bench/consumer_protocol.py --join [--sizes 100,1000] [--join-partitions 1000]
        [--runs N] [--peer kafka]
    (--quick: fewer runs / shorter runs; --echo-broker: copy the broker's stderr)

--convergence  10 confluent-kafka consumers (`group.protocol=consumer`, one thread each,
               on_assign / on_revoke timestamped) on a topic of 100 partitions, against a
               `kgroup serve` whose [group] consumer_heartbeat_interval_ms = --interval-ms
               (min = half of it, session 10 s). Once they own 10 partitions each and no
               callback fired for a second, AdminClient.create_partitions grows the topic to
               1,000. Measured from the moment CreatePartitions is answered to the last
               callback after which every partition has exactly one owner and nothing fires
               for a second ("converged"); also the time to the first callback. Target:
               heartbeat interval + 100 ms. librdkafka runs with
               topic.metadata.refresh.interval.ms = --metadata-refresh-ms (500).

--heartbeats   ConsumerGroupHeartbeat throughput with --members simulated members:
               (a) the pure core in-process (`GroupCoordinatorShard.consumer_group_heartbeat`),
                   members spread over each --groups count in turn; every member joins
                   (epoch 0), all then heartbeat with what they were told until every
                   member is at the group epoch and owns its target; then steady state:
                   round robin over the members, each heartbeating its current epoch with
                   the unchanged fields null (as librdkafka does). Timed: the core calls.
               (b) over TCP against `kgroup serve`: the same join/settle through
                   `kgroup.client.connection.Connection` (v1, members spread over
                   --tcp-groups groups and --connections connections, many requests in
                   flight), then --connections raw sockets each keep --window pre-encoded
                   heartbeat v1 frames in flight for --seconds, cycling over the members
                   (the client only reads the error code). Broker CPU-seconds are printed.
               Target: >= 20,000 heartbeats/s. With --peer kafka the TCP part runs on
               Apache Kafka 4.4 too (both brokers up at once, the runs alternating), with
               the same session settings on both, and heartbeats per broker CPU-second
               are compared.

--join         N simulated members (ConsumerGroupHeartbeat v1 over --connections pipelined
               connections, opened before the clock starts) join one empty group on a
               topic of --join-partitions partitions at the same moment t0, then
               heartbeat in rounds (every member once per round, owning at once what it
               was last given: an instant reconciliation) until a round changes nothing.
               "every partition owned" = t0 -> the end of the first round after which
               every partition is held by exactly one member; "to Stable" = t0 -> the end
               of the first round in which nothing changed (every member acknowledged its
               target at the group epoch: the group is Stable). The same client, settings
               (assignment interval 0, uniform assignor, long sessions) and rounds on
               both brokers; --peer kafka alternates the runs (ours, Kafka, ours, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import random
import statistics
import struct
import threading
import time
import uuid

import peers
from broker_common import pipeline
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.messages import ConsumerGroupHeartbeatRequest

CG_HEARTBEAT = 68


def med(xs):
    return statistics.median(xs) if xs else None


# ==== 1. convergence with librdkafka ======================================================


class Ownership:
    """Assign/revoke callbacks of every consumer, timestamped; overlaps recorded."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owned: dict[str, set[int]] = {}
        self.events: list[tuple[float, str, str, int]] = []
        self.overlaps: list[str] = []

    def assigned(self, name: str, parts) -> None:
        now = time.monotonic()
        with self.lock:
            for p in parts:
                holders = [n for n, s in self.owned.items() if p in s and n != name]
                if holders:
                    self.overlaps.append(f"{name} got {p} while {holders} held it")
            self.owned.setdefault(name, set()).update(parts)
            self.events.append((now, name, "assigned", len(parts)))

    def revoked(self, name: str, parts) -> None:
        now = time.monotonic()
        with self.lock:
            self.owned.setdefault(name, set()).difference_update(parts)
            self.events.append((now, name, "revoked", len(parts)))

    def snapshot(self):
        with self.lock:
            sizes = sorted(len(s) for s in self.owned.values())
            total = sum(sizes)
            union = set().union(*self.owned.values()) if self.owned else set()
            last = self.events[-1][0] if self.events else 0.0
            return sizes, total, union, last, len(self.events)


class ConsumerThread(threading.Thread):
    def __init__(self, bootstrap: str, group: str, topic: str, name: str, own: Ownership, conf: dict) -> None:
        super().__init__(daemon=True, name=name)
        self.bootstrap, self.group, self.topic, self.own, self.conf = bootstrap, group, topic, own, conf
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.errors: list[str] = []

    def run(self) -> None:
        from confluent_kafka import Consumer
        try:
            c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                          "group.protocol": "consumer", "client.id": self.name,
                          "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 4,
                          "error_cb": lambda e: self.errors.append(str(e)), **self.conf})
            name, topic = self.name, self.topic
            c.subscribe([topic],
                        on_assign=lambda _c, ps: self.own.assigned(name, [p.partition for p in ps if p.topic == topic]),
                        on_revoke=lambda _c, ps: self.own.revoked(name, [p.partition for p in ps if p.topic == topic]))
            while not self.stopping.is_set():
                c.poll(0.02)
            c.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the driver
            self.error = exc


def wait_settled(own: Ownership, parts: int, consumers: int, quiet: float, timeout: float,
                 each: int | None = None) -> float | None:
    """Wait until every partition has one owner (and each consumer `each`) and no callback
    fired for `quiet` s; returns the time of the last callback, or None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sizes, total, union, last, _ = own.snapshot()
        ok = total == parts and len(union) == parts and len(sizes) == consumers
        if ok and each is not None:
            ok = all(s == each for s in sizes)
        if ok and time.monotonic() - last >= quiet:
            return last
        time.sleep(0.01)
    return None


def convergence_run(b: peers.Broker, run: int, interval_ms: int, refresh_ms: int, n: int = 10,
                    before: int = 100, after: int = 1000, timeout: float = 90.0) -> dict:
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    topic, group = f"grow-{run}-{time.time_ns()}", f"conv-{run}-{time.time_ns()}"
    admin.create_topics([NewTopic(topic, before, 1)])[topic].result(30)
    own = Ownership()
    conf = {"topic.metadata.refresh.interval.ms": refresh_ms}
    threads = [ConsumerThread(b.bootstrap, group, topic, f"c{i}", own, conf) for i in range(n)]
    for t in threads:
        t.start()
    try:
        t_start = time.monotonic()
        if wait_settled(own, before, n, 1.0, timeout, each=before // n) is None:
            raise RuntimeError(f"10 consumers did not reach {n} x {before // n}: {own.snapshot()[0]}")
        print(f"  run {run}: {n} x {before // n} after {time.monotonic() - t_start:.1f}s; growing to {after}",
              flush=True)
        mark = own.snapshot()[4]
        fut = admin.create_partitions([NewPartitions(topic, after)])[topic]
        fut.result(30)
        t0 = time.monotonic()
        last = wait_settled(own, after, n, 1.0, timeout)
        if last is None:
            sizes, total, union, _, _ = own.snapshot()
            raise RuntimeError(f"no convergence to {after} in {timeout}s: sizes={sizes} union={len(union)}")
        with own.lock:
            events = own.events[mark:]
            overlaps = list(own.overlaps)
        first = events[0][0] if events else last
        sizes = own.snapshot()[0]
        res = {"converged_ms": (last - t0) * 1000, "first_ms": (first - t0) * 1000,
               "callbacks": len(events), "sizes": sizes, "overlaps": len(overlaps)}
        print(f"  run {run}: converged {res['converged_ms']:,.0f} ms after CreatePartitions answered "
              f"(first callback {res['first_ms']:,.0f} ms, {len(events)} callbacks, sizes {min(sizes)}-{max(sizes)}, "
              f"overlaps {len(overlaps)})", flush=True)
        for o in overlaps[:5]:
            print(f"    overlap: {o}")
        return res
    finally:
        for t in threads:
            t.stopping.set()
        for t in threads:
            t.join(30)
        errs = [e for t in threads for e in t.errors]
        if errs:
            print(f"  client errors ({len(errs)}): {errs[:3]}")
        for t in threads:
            if t.error:
                print(f"  consumer {t.name} failed: {t.error!r}")


def convergence(args) -> None:
    interval = args.interval_ms
    cfg = (f'fsync = "never"\n[group]\ninitial_rebalance_delay_ms = 0\n'
           f"consumer_heartbeat_interval_ms = {interval}\n"
           f"consumer_min_heartbeat_interval_ms = {max(1, interval // 2)}\n"
           f"consumer_min_session_timeout_ms = 10000\nconsumer_session_timeout_ms = 10000\n")
    n = peers.runs(args)
    results = []
    with peers.broker(args, "ours", cfg) as b:
        for r in range(n):
            results.append(convergence_run(b, r + 1, interval, args.metadata_refresh_ms))
    conv = med([r["converged_ms"] for r in results])
    first = med([r["first_ms"] for r in results])
    target = interval + 100
    print(f"\nConvergence, 10 consumers, 100 -> 1,000 partitions, heartbeat interval {interval} ms, "
          f"metadata refresh {args.metadata_refresh_ms} ms, {n} runs (median)")
    print("| measure | ms | / heartbeat interval |")
    print("|---|---:|---:|")
    print(f"| CreatePartitions answered -> converged (last callback) | {conv:,.0f} | {conv / interval:.2f} |")
    print(f"| CreatePartitions answered -> first callback | {first:,.0f} | {first / interval:.2f} |")
    runs_ms = ", ".join(f"{r['converged_ms']:,.0f}" for r in results)
    print(f"| runs (converged ms) | {runs_ms} | |")
    print(f"| overlaps (partition with two owners) | {sum(r['overlaps'] for r in results)} | |")
    print(f"target (interval + 100 ms = {target} ms): {'met' if conv <= target else 'NOT met'}")


# ==== 2a. heartbeats through the pure core ================================================


class _Token:
    __slots__ = ()


REPLY = _Token()


def core_heartbeats(members: int, groups: int, partitions: int, seconds: float) -> dict:
    # assignment interval 0: targets computed within the heartbeat (KIP-1263's default
    # interval would leave groups Assigning while the manual clock stands still)
    cfg = GroupConfig(initial_rebalance_delay_ms=0, consumer_assignment_interval_ms=0,
                      consumer_session_timeout_ms=600_000,
                      consumer_max_session_timeout_ms=600_000)
    coord = GroupCoordinatorShard(cfg)
    now = 0

    def apply(result):
        for rec in result.records:
            coord.replay(rec)
        for _to, resp in result.replies:
            return resp
        return None

    apply(coord.load_complete(now))
    apply(coord.update_topics({"t": ("9b2f3c51-41a7-4f8e-9c3c-000000000001", partitions)}, now))
    ids = [str(uuid.uuid4()) for _ in range(members)]
    group_of = [f"g{i % groups}" for i in range(members)]
    epoch = [0] * members
    owned: list = [()] * members
    t0 = time.perf_counter()
    for i in range(members):
        resp = apply(coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            group_id=group_of[i], member_id=ids[i], member_epoch=0, rebalance_timeout_ms=60_000,
            subscribed_topic_names=("t",), owned=(), client_id="bench", client_host="/127.0.0.1"), REPLY, now))
        epoch[i] = resp.member_epoch
        if resp.assignment is not None:
            owned[i] = resp.assignment
    join_s = time.perf_counter() - t0
    # settle: heartbeat with what each was told until nothing changes
    t0 = time.perf_counter()
    rounds = 0
    while True:
        rounds += 1
        changed = 0
        for i in range(members):
            now += 0  # manual clock stands still: no timer fires
            resp = apply(coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
                group_id=group_of[i], member_id=ids[i], member_epoch=epoch[i], owned=owned[i]), REPLY, now))
            if resp.error:
                raise RuntimeError(f"settle heartbeat error {resp.error!r}")
            if resp.member_epoch != epoch[i] or (resp.assignment is not None and resp.assignment != owned[i]):
                changed += 1
            epoch[i] = resp.member_epoch
            if resp.assignment is not None:
                owned[i] = resp.assignment
        if not changed:
            break
        if rounds > 50:
            raise RuntimeError("core group did not settle in 50 rounds")
    settle_s = time.perf_counter() - t0
    for g in {*group_of}:
        st = coord.consumer_groups[g].state()
        assert str(getattr(st, "value", st)).lower() == "stable", (g, st)
    reqs = [ConsumerGroupHeartbeatRequest(group_id=group_of[i], member_id=ids[i], member_epoch=epoch[i])
            for i in range(members)]
    hb = coord.consumer_group_heartbeat
    count = 0
    errors = 0
    gc.collect()
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        for req in reqs:
            result = hb(req, REPLY, now)
            if result.records:
                for rec in result.records:
                    coord.replay(rec)
            if result.replies[0][1].error:
                errors += 1
        count += members
    dt = time.perf_counter() - t0
    return {"rate": count / dt, "join_s": join_s, "settle_s": settle_s, "rounds": rounds, "errors": errors}


# ==== 2b. heartbeats over TCP =============================================================


_LEN = struct.Struct(">i")
_ERR = struct.Struct(">h")
# ConsumerGroupHeartbeat v1 response: size(4) correlation id(4) header tags(1) throttle(4) error(2)
_ERR_AT = 4 + 4 + 1 + 4


class SimMember:
    __slots__ = ("group", "member_id", "epoch", "owned", "conn")

    def __init__(self, group: str, conn) -> None:
        self.group = group
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.owned: tuple = ()
        self.conn = conn


def _hb_fields(m: SimMember, join: bool, topic: str) -> dict:
    return {"group_id": m.group, "member_id": m.member_id, "member_epoch": m.epoch, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 60_000 if join else -1,
            "subscribed_topic_names": (topic,) if join else None, "subscribed_topic_regex": None,
            "server_assignor": None,
            "topic_partitions": tuple({"topic_id": t, "partitions": ps} for t, ps in m.owned)}


async def _one(m: SimMember, join: bool, topic: str) -> bool:
    """One heartbeat with full fields; True if the member's epoch or assignment changed."""
    from kgroup.wire.kio_build import build, item
    from kgroup.wire import request_class
    cls = request_class(CG_HEARTBEAT, 1)
    tp_cls = item(cls, "topic_partitions")
    f = _hb_fields(m, join, topic)
    f["topic_partitions"] = tuple(build(tp_cls, topic_id=t, partitions=ps) for t, ps in m.owned)
    resp = await m.conn.request(CG_HEARTBEAT, build(cls, **f))
    if int(resp.error_code):
        raise RuntimeError(f"heartbeat error {int(resp.error_code)} {resp.error_message} for {m.group}")
    changed = resp.member_epoch != m.epoch
    m.epoch = int(resp.member_epoch)
    if resp.assignment is not None:
        new = tuple((tp.topic_id, tuple(sorted(tp.partitions))) for tp in resp.assignment.topic_partitions)
        changed = changed or new != m.owned
        m.owned = new
    return changed


async def _bounded(coros, limit: int):
    sem = asyncio.Semaphore(limit)

    async def run(c):
        async with sem:
            return await c
    return await asyncio.gather(*(run(c) for c in coros))


def _every_group_owns_all(sims: list[SimMember], partitions: int) -> bool:
    owned: dict[str, list[int]] = {}
    for m in sims:
        owned.setdefault(m.group, []).extend(p for _t, ps in m.owned for p in ps)
    return all(len(ps) == partitions and len(set(ps)) == partitions for ps in owned.values())


async def tcp_setup(b: peers.Broker, members: int, groups: int, partitions: int, conns: int, topic: str):
    from kgroup.client.connection import Connection
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    pool = [await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=300) for _ in range(conns)]
    tag = time.time_ns()
    sims = [SimMember(f"hb-{tag}-{i % groups}", pool[i % conns]) for i in range(members)]
    t0 = time.perf_counter()
    await _bounded((_one(m, True, topic) for m in sims), 1024)
    join_s = time.perf_counter() - t0
    print(f"  joined {members:,} members in {groups} groups over {conns} connections: {join_s:.1f}s", flush=True)
    t0 = time.perf_counter()
    rounds = 0
    # Settled: a round changes nothing AND every group owns every partition. Kafka's group
    # coordinator may not see a topic created a moment before (its metadata image lags the
    # CreateTopics answer): the members then settle owning nothing (metadata hash 0), and
    # at the group's metadata refresh a few seconds later every group's epoch moves, which
    # fenced all the steady frames below. Keep heartbeating until the partitions are owned.
    while True:
        rounds += 1
        changed = sum(await _bounded((_one(m, False, topic) for m in sims), 1024))
        if not changed and _every_group_owns_all(sims, partitions):
            break
        if time.perf_counter() - t0 > 120:
            raise RuntimeError(f"groups did not settle over TCP in 120 s ({rounds} rounds)")
        if not changed:
            await asyncio.sleep(0.5)
    settle_s = time.perf_counter() - t0
    print(f"  settled in {rounds} rounds, {settle_s:.1f}s", flush=True)
    return sims, pool, join_s, settle_s


async def join_run(b: peers.Broker, n: int, topic: str, partitions: int, conns: int) -> tuple[float, float]:
    """(ms to Stable, ms to every partition owned) of n members joining one empty group."""
    from broker_common import coordinator_ready
    from kgroup.client.connection import Connection
    pool = [await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=300) for _ in range(conns)]
    group = f"cg-join-{n}-{time.time_ns()}"
    try:
        await coordinator_ready(pool[0], group)
        sims = [SimMember(group, pool[i % conns]) for i in range(n)]
        cpu0 = b.cpu_seconds()
        t0 = time.perf_counter()
        await _bounded((_one(m, True, topic) for m in sims), 1024)
        owned_at = None
        rounds = 0
        while True:
            rounds += 1
            changed = sum(await _bounded((_one(m, False, topic) for m in sims), 1024))
            now = time.perf_counter()
            if owned_at is None:
                held = [p for m in sims for _t, ps in m.owned for p in ps]
                if len(held) == partitions and len(set(held)) == partitions:
                    owned_at = now
            if not changed:
                break
            if rounds > 100:
                raise RuntimeError(f"{n} members did not settle in 100 rounds")
        epochs = {m.epoch for m in sims}
        if len(epochs) != 1 or owned_at is None:
            raise RuntimeError(f"not settled: epochs {sorted(epochs)[:5]}, every partition owned: {owned_at is not None}")
        cpu1 = b.cpu_seconds()
        cpu = f", broker CPU {cpu1 - cpu0:.2f} s" if cpu0 is not None and cpu1 is not None else ""
        print(f"    {b.name}, {n} members: {rounds} rounds{cpu}", flush=True)
        return (now - t0) * 1000, (owned_at - t0) * 1000
    finally:
        await asyncio.gather(*(c.close() for c in pool), return_exceptions=True)


# The same group settings on both brokers: sessions long enough for 10,000 simulated
# members, target assignments at once (Kafka's group.consumer.assignment.interval.ms = 0).
TCP_GROUP = {"initial_rebalance_delay_ms": 0, "consumer_min_session_timeout_ms": 45_000,
             "consumer_session_timeout_ms": 300_000, "consumer_max_session_timeout_ms": 600_000,
             "consumer_assignment_interval_ms": 0}


@contextlib.contextmanager
def tcp_brokers(args):
    """Every side's broker with TCP_GROUP (kgroup serve; Kafka 4.4 with --peer kafka)."""
    cfg = 'fsync = "never"\n[group]\n' + peers.group_toml(TCP_GROUP)
    with peers.brokers(args, cfg, group=GroupConfig(**TCP_GROUP)) as brokers:
        yield brokers


def join(args) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    sizes = [int(x) for x in (args.sizes or "100,1000").split(",")]
    n_runs = peers.runs(args)
    with tcp_brokers(args) as brokers:
        topics = {}
        for side, b in brokers.items():
            topics[side] = f"cg-join-{time.time_ns()}"
            admin = AdminClient({"bootstrap.servers": b.bootstrap})
            admin.create_topics([NewTopic(topics[side], args.join_partitions, 1)])[topics[side]].result(60)
        rows = peers.join_rows(brokers, n_runs, sizes, lambda side, b, n: asyncio.run(
            join_run(b, n, topics[side], args.join_partitions, min(args.connections, n))))
    peers.print_table(f"Consumer protocol (KIP-848): N members join one empty group at once "
                      f"(ConsumerGroupHeartbeat v1 in rounds, {args.join_partitions} partitions, "
                      f"{min(args.connections, max(sizes))} connections), {n_runs} runs (median, lower is better)",
                      rows, peers.sides(args), higher_is_better=False)


async def tcp_prepare(b: peers.Broker, members: int, groups: int, partitions: int, conns: int):
    """Members joined and settled on `b`; (pre-encoded steady heartbeat frames, the setup
    connections, join s, settle s)."""
    from kgroup.wire.kio_build import build
    from kgroup.wire import encode_request, request_class
    from broker_common import coordinator_ready
    from kgroup.client.connection import Connection
    topic = f"hb-topic-{time.time_ns()}"
    probe = await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=300)
    try:
        await coordinator_ready(probe, f"hb-probe-{time.time_ns()}")
    finally:
        await probe.close()
    sims, pool, join_s, settle_s = await tcp_setup(b, members, groups, partitions, conns, topic)
    cls = request_class(CG_HEARTBEAT, 1)
    frames = []
    for i, m in enumerate(sims):
        req = build(cls, group_id=m.group, member_id=m.member_id, member_epoch=m.epoch, instance_id=None,
                    rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
        frames.append(encode_request(CG_HEARTBEAT, 1, i, "kgroup-bench", req))
    # check the error-code offset: an epoch ahead of the member's must read FENCED_MEMBER_EPOCH (110)
    m = sims[0]
    bad = build(cls, group_id=m.group, member_id=m.member_id, member_epoch=m.epoch + 5, instance_id=None,
                rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
    reader, writer = await asyncio.open_connection(b.host, b.port)
    writer.write(encode_request(CG_HEARTBEAT, 1, 7, "kgroup-bench", bad) + frames[0])
    got = []
    for _ in range(2):
        (size,) = _LEN.unpack(await reader.readexactly(4))
        body = await reader.readexactly(size)
        got.append(_ERR.unpack_from(body, _ERR_AT - 4)[0])
    writer.close()
    if got != [110, 0]:
        raise RuntimeError(f"error-code offset check failed: {got}")
    return frames, pool, join_s, settle_s


async def tcp_run(b: peers.Broker, frames: list[bytes], conns: int, window: int, seconds: float,
                  label: str) -> dict:
    """One timed run: conns raw connections x window heartbeats in flight for `seconds`."""
    counts = {"ok": 0, "bad": 0, "codes": {}}
    start = asyncio.Event()
    order = list(range(len(frames)))
    random.shuffle(order)
    shuffled = [frames[i] for i in order]
    tasks = [asyncio.create_task(pipeline(b.host, b.port, shuffled[c::conns], window, seconds, counts, start, _ERR_AT))
             for c in range(conns)]
    await asyncio.sleep(0.3)
    cpu0 = b.cpu_seconds()
    t0 = time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    dt = time.perf_counter() - t0
    cpu1 = b.cpu_seconds()
    cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
    rate = counts["ok"] / dt
    print(f"  {label}: {rate:,.0f} heartbeats/s ({counts['ok']:,} ok, {counts['bad']:,} errors "
          f"{counts['codes'] or ''}, {dt:.2f}s, broker CPU {cpu if cpu is not None else float('nan'):.2f}s)",
          flush=True)
    return {"rate": rate, "per_cpu": counts["ok"] / cpu if cpu else None, "bad": counts["bad"],
            "codes": counts["codes"]}


async def tcp_heartbeats(brokers: dict, members: int, groups: int, partitions: int, conns: int,
                         window: int, seconds: float, runs: int) -> dict:
    """{side: figures} of steady heartbeats on every broker, the runs alternating."""
    prepared, out = {}, {}
    try:
        for side, b in brokers.items():
            print(f"  {side}:", flush=True)
            prepared[side] = await tcp_prepare(b, members, groups, partitions, conns)
            out[side] = {"rates": [], "per_cpu": [], "errors": 0, "codes": {},
                         "join_s": prepared[side][2], "settle_s": prepared[side][3]}
        for side, b in brokers.items():   # untimed: a JVM's JIT compiles the hot path first
            await tcp_run(b, prepared[side][0], conns, window, seconds, f"warm-up {side}")
        for r in range(runs):
            for side, b in brokers.items():
                x = await tcp_run(b, prepared[side][0], conns, window, seconds, f"tcp run {r + 1} {side}")
                o = out[side]
                o["rates"].append(x["rate"])
                if x["per_cpu"]:
                    o["per_cpu"].append(x["per_cpu"])
                o["errors"] += x["bad"]
                for c, k in x["codes"].items():
                    o["codes"][c] = o["codes"].get(c, 0) + k
    finally:
        await asyncio.gather(*(c.close() for p in prepared.values() for c in p[1]), return_exceptions=True)
    for o in out.values():
        o["rate"], o["per_cpu"] = med(o["rates"]), med(o["per_cpu"])
    return out


def heartbeats(args) -> None:
    n = peers.runs(args)
    seconds = args.seconds or (3.0 if args.quick else 5.0)
    members = args.members
    partitions = args.partitions or members
    rows = []
    for g in [] if args.tcp_only else [int(x) for x in args.groups.split(",")]:
        res = []
        for r in range(n):
            x = core_heartbeats(members, g, partitions, seconds)
            print(f"  core {members:,} members / {g} groups, run {r + 1}: {x['rate']:,.0f} heartbeats/s "
                  f"(join {x['join_s']:.2f}s, settle {x['rounds']} rounds {x['settle_s']:.2f}s, errors {x['errors']})",
                  flush=True)
            res.append(x)
        rows.append((f"pure core, {g} group(s)", med([x["rate"] for x in res]), None,
                     med([x["join_s"] for x in res]), sum(x["errors"] for x in res)))
    tcp = None
    if not args.core_only:
        with tcp_brokers(args) as brokers:
            tcp = asyncio.run(tcp_heartbeats(brokers, members, args.tcp_groups, partitions, args.connections,
                                             args.window, seconds, n))
        for side, x in tcp.items():
            rows.append((f"TCP, {side}, {args.tcp_groups} groups, {args.connections} conns x {args.window} in flight",
                         x["rate"], x["per_cpu"], x["join_s"], x["errors"]))
    print(f"\nConsumerGroupHeartbeat throughput, {members:,} members, topic of {partitions:,} partitions, "
          f"{seconds:g}s x {n} runs (median)")
    print("| path | heartbeats/s | per broker CPU-s | join of all members (s) | errors |")
    print("|---|---:|---:|---:|---:|")
    for label, rate, cpu, join_s, err in rows:
        print(f"| {label} | {peers.fmt(rate)} | {peers.fmt(cpu)} | {peers.fmt(join_s)} | {err} |")
    if tcp is not None:
        for side, x in tcp.items():
            if x["codes"]:
                print(f"error codes ({side}): {x['codes']}")
        if len(tcp) == 2:
            peers.print_table("ConsumerGroupHeartbeat over TCP, medians", [
                ("heartbeats/s", {side: x["rate"] for side, x in tcp.items()}),
                ("heartbeats per broker CPU-second", {side: x["per_cpu"] for side, x in tcp.items()})],
                peers.sides(args))
        ours = tcp["ours"]
        print(f"target >= 20,000/s over TCP: {'met' if ours['rate'] >= 20_000 else 'NOT met'} "
              f"(runs: {', '.join(f'{x:,.0f}' for x in ours['rates'])})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--convergence", action="store_true")
    p.add_argument("--heartbeats", action="store_true")
    p.add_argument("--interval-ms", type=int, default=1000, help="consumer_heartbeat_interval_ms")
    p.add_argument("--metadata-refresh-ms", type=int, default=500, help="topic.metadata.refresh.interval.ms")
    p.add_argument("--members", type=int, default=10_000)
    p.add_argument("--partitions", type=int, default=None, help="of the heartbeat topic (default = members)")
    p.add_argument("--groups", default="10,100", help="group counts for the pure-core run")
    p.add_argument("--tcp-groups", type=int, default=100)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--seconds", type=float, default=None)
    p.add_argument("--core-only", action="store_true", help="--heartbeats: skip the TCP part")
    p.add_argument("--tcp-only", action="store_true", help="--heartbeats: skip the pure-core part")
    p.add_argument("--join", action="store_true", help="N members join one empty group at once")
    p.add_argument("--sizes", default=None, help="--join: group sizes (default 100,1000)")
    p.add_argument("--join-partitions", type=int, default=1000, help="--join: partitions of the topic")
    args = p.parse_args()
    if args.peer and args.peer != "kafka":
        p.error("--peer: only kafka is measured here")
    if args.peer and args.convergence:
        p.error("--convergence measures kgroup alone")
    if not (args.convergence or args.heartbeats or args.join):
        p.error("say --convergence, --heartbeats and/or --join")
    if args.join:
        join(args)
    if args.convergence:
        convergence(args)
    if args.heartbeats:
        heartbeats(args)


if __name__ == "__main__":
    main()
