"""Streams groups (KIP-1071) over TCP beside consumer groups of the same size, on `kgroup
serve` and (--peer kafka) on Apache Kafka 4.4 in the same run: issue 31's benchmark.

    nice -n 10 .venv/bin/python bench/streams_groups_tcp.py --peer kafka [--quick] [--runs N]
        [--members 100] [--subtopologies 10] [--tasks 1000] [--seconds 5]
        [--connections 16] [--window 64]

Raw members, one pool of --connections connections per broker (bench/broker_common.py's
pipelining for the steady state):

- a streams group of --members members speaking StreamsGroupHeartbeat v1, its topology
  --subtopologies stateless subtopologies each reading a source topic of
  --tasks/--subtopologies partitions, so --tasks tasks in all (no internal topics: the
  timing is the coordinator's, not topic creation's);
- a consumer group of --members members speaking ConsumerGroupHeartbeat v1, subscribed to
  one topic of --tasks partitions (the default server assignor, uniform).

Every topic is created once per broker before the first run, and a probe member waits until
the coordinator sees them all (Kafka's coordinator learns new topics from its metadata image
a little later). Each run then uses fresh group ids and measures, for each group kind:

- assignment time: from the first join until every task (partition) is assigned to exactly
  one member as active and every member holds what it was given at the group's epoch. All
  members join at once; then rounds in which every member heartbeats what it holds (as a
  client does once it has revoked and taken what it was told) until a round changes nothing;
- heartbeats/s: steady state, pre-encoded heartbeats at each member's epoch with everything
  unchanged left null (as Kafka Streams and the Java consumer send them), --window in
  flight on each of --connections connections for --seconds; and heartbeats per broker
  CPU-second (the broker process's user+system time from /proc, all its threads);

then every member leaves (epoch -1). Runs interleave the brokers (the order rotates each
run) and the two kinds, after --warmup runs that are not counted (the JVM's JIT); the
figures are medians over the runs. Both brokers run the
differential suite's comparable group settings (no initial rebalance delay, assignments at
once); Kafka with a 1 GB G1 heap.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import peers
from broker_common import pipeline
from kgroup.client.connection import Connection
from kgroup.testing.reference import COMPARABLE_GROUP_SETTINGS
from kgroup.wire import encode_request, request_class
from kgroup.wire.kio_build import build, item

FIND_COORDINATOR, CG_HEARTBEAT, SG_HEARTBEAT = 10, 68, 88
CG_V = SG_V = 1
# Both v1 responses: size (4), correlation id (4), header tags (1), throttle (4), then the error.
ERROR_AT = 13
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
RETRIABLE = {14, 15, 16}
MISSING_SOURCE_TOPICS = 1


def kgroup_config() -> str:
    """The [group] settings of the differential suite (the reference runs with the same)."""
    rows = [f"{k} = {v}" for k, v in COMPARABLE_GROUP_SETTINGS.items()]
    return 'fsync = "never"\n[group]\n' + "\n".join(rows) + "\n"


# ---- requests -----------------------------------------------------------------------------


SG = request_class(SG_HEARTBEAT, SG_V)
SG_TASKS = item(SG, "active_tasks")
SG_TOPOLOGY = item(SG, "topology")
SG_SUB = item(SG_TOPOLOGY, "subtopologies")
CG = request_class(CG_HEARTBEAT, CG_V)
CG_TP = item(CG, "topic_partitions")


def topology(sources: list[str]):
    """One stateless subtopology per source topic (ids "0", "1", ...)."""
    return build(SG_TOPOLOGY, epoch=0, subtopologies=tuple(
        build(SG_SUB, subtopology_id=str(i), source_topics=(t,), source_topic_regex=(), state_changelog_topics=(),
              repartition_sink_topics=(), repartition_source_topics=(), copartition_groups=())
        for i, t in enumerate(sources)))


def _tasks(held: dict[str, tuple[int, ...]]) -> tuple:
    return tuple(build(SG_TASKS, subtopology_id=s, partitions=ps) for s, ps in sorted(held.items()))


class StreamsMember:
    def __init__(self, group: str, conn: Connection, i: int) -> None:
        self.group, self.conn = group, conn
        self.member_id = str(uuid.uuid4())
        self.process_id = f"p{i}"
        self.epoch = 0
        self.endpoints = -1
        self.active: dict[str, tuple[int, ...]] = {}

    def request(self, topo=None, leave: bool = False):
        joining = self.epoch == 0 and not leave
        empty = () if joining else None
        return build(SG, group_id=self.group, member_id=self.member_id, member_epoch=-1 if leave else self.epoch,
                     endpoint_information_epoch=self.endpoints, instance_id=None, rack_id=None,
                     rebalance_timeout=60_000 if joining else -1, topology=topo if joining else None,
                     active_tasks=None if leave else _tasks(self.active), standby_tasks=None if leave else (),
                     warmup_tasks=None if leave else (), process_id=self.process_id if joining else None,
                     user_endpoint=None, client_tags=empty, task_offsets=empty, task_end_offsets=empty,
                     shutdown_application=False)

    async def heartbeat(self, topo) -> bool:
        """One heartbeat reporting what it holds; True if its epoch or tasks changed."""
        r = await _call(self.conn, SG_HEARTBEAT, self.request(topo))
        if int(r.error_code):
            raise RuntimeError(f"StreamsGroupHeartbeat {self.group}: {int(r.error_code)} {r.error_message}")
        self.endpoints = int(r.endpoint_information_epoch)
        changed = int(r.member_epoch) != self.epoch
        self.epoch = int(r.member_epoch)
        if r.active_tasks is not None:
            new = {t.subtopology_id: tuple(sorted(t.partitions)) for t in r.active_tasks if t.partitions}
            changed = changed or new != self.active
            self.active = new
        return changed

    def held(self) -> list[tuple[str, int]]:
        return [(s, p) for s, ps in self.active.items() for p in ps]

    def steady_frame(self, corr: int) -> bytes:
        req = build(SG, group_id=self.group, member_id=self.member_id, member_epoch=self.epoch,
                    endpoint_information_epoch=self.endpoints, instance_id=None, rack_id=None, rebalance_timeout=-1,
                    topology=None, active_tasks=None, standby_tasks=None, warmup_tasks=None, process_id=None,
                    user_endpoint=None, client_tags=None, task_offsets=None, task_end_offsets=None,
                    shutdown_application=False)
        return encode_request(SG_HEARTBEAT, SG_V, corr, "kgroup-bench", req)

    async def leave(self) -> None:
        await _call(self.conn, SG_HEARTBEAT, self.request(leave=True))


class ConsumerMember:
    def __init__(self, group: str, conn: Connection, i: int) -> None:
        self.group, self.conn = group, conn
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.owned: tuple = ()

    def request(self, topic: str | None, leave: bool = False):
        joining = self.epoch == 0 and not leave
        return build(CG, group_id=self.group, member_id=self.member_id, member_epoch=-1 if leave else self.epoch,
                     instance_id=None, rack_id=None, rebalance_timeout=60_000 if joining else -1,
                     subscribed_topic_names=(topic,) if joining else None, subscribed_topic_regex=None,
                     server_assignor=None, topic_partitions=None if leave else tuple(
                         build(CG_TP, topic_id=t, partitions=ps) for t, ps in self.owned))

    async def heartbeat(self, topic: str) -> bool:
        r = await _call(self.conn, CG_HEARTBEAT, self.request(topic))
        if int(r.error_code):
            raise RuntimeError(f"ConsumerGroupHeartbeat {self.group}: {int(r.error_code)} {r.error_message}")
        changed = int(r.member_epoch) != self.epoch
        self.epoch = int(r.member_epoch)
        if r.assignment is not None:
            new = tuple((tp.topic_id, tuple(sorted(tp.partitions))) for tp in r.assignment.topic_partitions
                        if tp.partitions)
            changed = changed or new != self.owned
            self.owned = new
        return changed

    def held(self) -> list[tuple[object, int]]:
        return [(t, p) for t, ps in self.owned for p in ps]

    def steady_frame(self, corr: int) -> bytes:
        req = build(CG, group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, instance_id=None,
                    rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
                    server_assignor=None, topic_partitions=None)
        return encode_request(CG_HEARTBEAT, CG_V, corr, "kgroup-bench", req)

    async def leave(self) -> None:
        await _call(self.conn, CG_HEARTBEAT, self.request(None, leave=True))


async def _call(conn: Connection, api: int, req):
    """A request to the (only) broker, retried while its coordinator loads or moves."""
    deadline = time.monotonic() + 60
    while True:
        r = await conn.request(api, req, timeout=120)
        if int(r.error_code) not in RETRIABLE or time.monotonic() > deadline:
            return r
        await asyncio.sleep(0.05)


# ---- one broker ---------------------------------------------------------------------------


class Side:
    """One broker with its topics and its pool of connections."""

    def __init__(self, b: peers.Broker, args) -> None:
        self.b, self.args = b, args
        tag = time.time_ns()
        per = args.tasks // args.subtopologies
        self.sources = {f"sg-src-{tag}-{i}": per for i in range(args.subtopologies)}
        self.topic = f"cg-in-{tag}"
        self.tasks = per * args.subtopologies
        self.pool: list[Connection] = []

    async def setup(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": self.b.bootstrap})
        topics = dict(self.sources, **{self.topic: self.args.tasks})
        futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])
        for f in futures.values():
            f.result(120)
        del admin, futures                                   # no reconnect attempts later
        self.pool = [await Connection.open(self.b.host, self.b.port, client_id="kgroup-bench", timeout=120)
                     for _ in range(self.args.connections)]
        # The coordinator must exist (Kafka creates __consumer_offsets on the first
        # FindCoordinator) and see every topic: a probe streams member until none is missing.
        probe = StreamsMember(f"probe-{time.time_ns()}", self.pool[0], 0)
        deadline = time.monotonic() + 60
        while True:
            found = await self.pool[0].request(FIND_COORDINATOR, {"key_type": 0, "coordinator_keys": (probe.group,)},
                                               version=4)
            if int(found.coordinators[0].error_code) == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no coordinator on {self.b.name}: {found}")
            await asyncio.sleep(0.1)
        topo = topology(sorted(topics))
        while True:
            r = await _call(probe.conn, SG_HEARTBEAT, probe.request(topo))
            if int(r.error_code) == 0 and not any(int(s.status_code) == MISSING_SOURCE_TOPICS for s in r.status or ()):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the coordinator of {self.b.name} does not see the topics: {r}")
            probe.epoch = int(r.member_epoch) if int(r.error_code) == 0 else 0
            await asyncio.sleep(0.1)
        probe.epoch = int(r.member_epoch)
        await probe.leave()

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.pool), return_exceptions=True)

    async def run(self, kind: str) -> dict:
        """One group of `kind` ("streams" or "consumer"): join to settled, then steady state."""
        a = self.args
        group = f"{kind}-bench-{time.time_ns()}"
        cls = StreamsMember if kind == "streams" else ConsumerMember
        members = [cls(group, self.pool[i % len(self.pool)], i) for i in range(a.members)]
        arg = topology(sorted(self.sources)) if kind == "streams" else self.topic
        t0 = time.perf_counter()
        rounds = 0
        try:
            while True:
                rounds += 1
                changed = any(await asyncio.gather(*(m.heartbeat(arg) for m in members)))
                held = [x for m in members for x in m.held()]
                if not changed and len(held) == self.tasks and len(set(held)) == self.tasks \
                        and len({m.epoch for m in members}) == 1:
                    break
                if rounds > 200:
                    raise RuntimeError(f"{kind} group on {self.b.name} not settled after 200 rounds "
                                       f"({len(set(held))} of {self.tasks} held)")
            # The last round only confirmed: the group was settled when it began.
            assign_s = time.perf_counter() - t0
            frames = [m.steady_frame(i) for i, m in enumerate(members)]
            counts: dict = {"ok": 0, "bad": 0, "codes": {}}
            start = asyncio.Event()
            conns = a.connections
            tasks = [asyncio.create_task(pipeline(self.b.host, self.b.port, frames[c::conns] or frames, a.window,
                                                  a.seconds, counts, start, ERROR_AT)) for c in range(conns)]
            await asyncio.sleep(0.3)                         # connections open
            cpu0 = self.b.cpu_seconds()
            t1 = time.perf_counter()
            start.set()
            await asyncio.gather(*tasks)
            dt = time.perf_counter() - t1
            cpu1 = self.b.cpu_seconds()
        finally:
            await asyncio.gather(*(m.leave() for m in members), return_exceptions=True)
        cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
        out = {"assign_s": assign_s, "rounds": rounds, "rate": counts["ok"] / dt,
               "per_cpu": counts["ok"] / cpu if cpu else None, "errors": counts["bad"], "codes": counts["codes"]}
        print(f"  {self.b.name} {kind}: settled in {assign_s * 1000:,.0f} ms ({rounds} rounds), "
              f"{out['rate']:,.0f} heartbeats/s, {peers.fmt(out['per_cpu'])} per CPU-s, "
              f"{counts['bad']} errors {counts['codes'] or ''}", flush=True)
        return out


async def main_async(args) -> None:
    n = peers.runs(args)
    sides = peers.sides(args)
    results: dict[tuple[str, str], list[dict]] = {}
    loads = []
    async with _brokers(args) as started:
        for _ in range(args.warmup):
            print("warm-up run (not counted)", flush=True)
            for side in sides:
                for kind in ("streams", "consumer"):
                    await started[side].run(kind)
        for r in range(n):
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            kinds = ("streams", "consumer") if r % 2 == 0 else ("consumer", "streams")
            loads.append(peers.load_average())
            print(f"run {r + 1}/{n} (load {loads[-1]})", flush=True)
            for side in order:
                for kind in kinds:
                    results.setdefault((side, kind), []).append(await started[side].run(kind))
    title = (f"streams group of {args.members} members, {args.subtopologies} subtopologies, {args.tasks} tasks; "
             f"consumer group of {args.members} members, {args.tasks} partitions; medians of {n} interleaved runs "
             f"(load averages at each run's start: {'; '.join(loads)})")

    def row(kind: str, label: str, key: str, scale: float = 1) -> tuple[str, dict]:
        return (f"{kind}: {label}", {s: peers.median([x[key] * scale for x in results[(s, kind)]
                                                     if x[key] is not None]) for s in sides})

    peers.print_table("Assignment time, ms, from the first join until all is assigned and reconciled; " + title,
                      [row(k, "assignment time, ms", "assign_s", 1000) for k in ("streams", "consumer")]
                      + [row(k, "rounds of heartbeats", "rounds") for k in ("streams", "consumer")],
                      sides, higher_is_better=False)
    peers.print_table(f"Steady heartbeats, {args.connections} connections x {args.window} in flight, "
                      f"{args.seconds:g}s per run; " + title,
                      [row(k, label, key) for k in ("streams", "consumer")
                       for label, key in (("heartbeats/s", "rate"), ("heartbeats per broker CPU-second", "per_cpu"))]
                      + [(f"{k}: error responses (all runs)", {s: str(sum(x["errors"] for x in results[(s, k)]))
                                                               for s in sides}) for k in ("streams", "consumer")],
                      sides)


class _brokers:
    """Every side's broker started (kgroup serve; Kafka 4.4 with --peer kafka), set up."""

    def __init__(self, args) -> None:
        self.args = args

    async def __aenter__(self) -> dict[str, Side]:
        import contextlib
        self.stack = contextlib.ExitStack()
        self.sides: dict[str, Side] = {}
        try:
            for side in peers.sides(self.args):
                b = self.stack.enter_context(peers.broker(self.args, side, kgroup_config()))
                print(f"{side}: {b.bootstrap}; creating topics", flush=True)
                self.sides[side] = Side(b, self.args)
                await self.sides[side].setup()
        except BaseException:
            await self.__aexit__()
            raise
        return self.sides

    async def __aexit__(self, *exc) -> None:
        for s in self.sides.values():
            await s.close()
        self.stack.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--members", type=int, default=100)
    p.add_argument("--subtopologies", type=int, default=10)
    p.add_argument("--tasks", type=int, default=1000, help="tasks of the streams group = partitions of the consumer topic")
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--window", type=int, default=64, help="heartbeats in flight per connection")
    p.add_argument("--seconds", type=float, default=None, help="of steady heartbeats per run (default 5, 2 with --quick)")
    p.add_argument("--warmup", type=int, default=None, help="runs not counted first (default 1, 0 with --quick)")
    args = p.parse_args()
    if args.warmup is None:
        args.warmup = 0 if args.quick else 1
    if args.tasks % args.subtopologies:
        p.error("--tasks must be a multiple of --subtopologies")
    args.seconds = args.seconds or (2.0 if args.quick else 5.0)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
