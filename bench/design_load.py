"""The seeds' design load (issue 35): N live group members heartbeating every 3 s across G
groups, for a while, and how far a broker goes before the first member expires.

    .venv/bin/python bench/design_load.py [--members 10000] [--group-size 100]
        [--protocol consumer|classic] [--duration 600] [--interval 3]
        [--target single|cluster] [--peer kafka [--peer-only]] [--bootstrap HOST:PORT[,...]]
    .venv/bin/python bench/design_load.py --ramp [--members 10000] [--step 10000]
        [--step-seconds 60] [--max-members 1000000] ...

Members are simulated, not run as clients: every member is a few fields in this process and
its requests are raw protocol frames, many members pipelined on each connection (up to
`--per-connection`, 1,000 by default), so one generator process keeps tens of thousands of
members alive. Steady heartbeats are encoded once per member and epoch and their responses
read at fixed offsets; only a response that carries an assignment or an error is decoded
with kio. The generator's own CPU is measured and printed: above ~80% of a core the client,
not the broker, is the limit, and the figure is not the broker's.

Protocols. `consumer` (default, KIP-848): ConsumerGroupHeartbeat v1, a client-made member
id, epoch 0 to join with a subscription to one topic of `--partitions` partitions (default
the group size), the assignment acknowledged on the next tick as a client does, then a
heartbeat every `--interval` s carrying only group, member and epoch. Both brokers are set
to ask for that interval (heartbeat interval 3 s, session timeout 45 s). Expiry = an answer
UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: the member was dropped by the broker (it rejoins
with epoch 0 and is counted). `classic`: each group is built with JoinGroup/SyncGroup
(bench/broker_common.py, one connection per member slot, groups built one after another on
`--join-lanes` sets of connections), then Heartbeat v3 every `--interval` s (session timeout
45 s); expiry = UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS (a rebalance
starts only when someone was dropped); an expired classic member is counted and not rejoined.

A measurement starts once every member has joined and no assignment has changed for 1.5
intervals (the groups reconciled; at most 20 intervals, then it starts anyway).
Heartbeats are spread evenly over the interval (a timer wheel of 50 ms slots); a member
whose previous heartbeat is still unanswered when its slot comes again skips it and counts
as "late". Joins are paced at `--join-rate` members/s.

Targets: `single` (one `kgroup serve`, fsync never), `cluster` (three `kgroup serve` nodes
sharing a data dir, as bench/failover.py; each member talks to its group's coordinator);
`--peer kafka` also measures Apache Kafka 4.4, single node (kgroup.testing.reference, heap
`--kafka-heap`), the same way after kgroup, or with `--target cluster` a Kafka cluster of
three brokers and a KRaft controller (kgroup.testing.reference_cluster: `__consumer_offsets`
replicated 3 ways, min.insync.replicas 2; each broker's heap `--kafka-heap`); `--bootstrap` measures a running broker instead
(no RSS/CPU then unless its processes are on this machine).

Reported per measurement: members and groups live; expiries; other error answers by code;
late heartbeats; heartbeat latency p50/p99/max; heartbeats/s answered; broker CPU per
heartbeat (µs, all broker processes over the measured window); broker RSS growth per member
and per group (RSS at the end minus RSS before the first member, divided by N and by G: one
growth, two divisions) and peak RSS; the generator's CPU (share of one core).
`--ramp`: starts with `--members`, adds `--step` members (whole groups) every
`--step-seconds`, and stops at the first expiry (or `--max-members`); the answer is the
largest N of a step with no expiry. Confirm it with a `--duration 600` run at that N.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import resource
import signal
import struct
import sys
import time
import uuid
from collections import deque
from pathlib import Path

import peers
from peers import ROOT, median, print_table  # noqa: F401  (ROOT puts src/ on sys.path)

from kgroup.client.errors import RequestTimeout
from kgroup.core.config import GroupConfig
from kgroup.wire import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build, item

CGH, CGH_V = 68, 1
HEARTBEAT, HEARTBEAT_V = 12, 3
CGHReq = request_class(CGH, CGH_V)
CGHTopic = item(CGHReq, "topic_partitions")
CLIENT_ID = "kgroup-design-load"
TICK = 0.05
TOPIC = "load"

UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS = 25, 110, 22, 27
CONSUMER_EXPIRY = {UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH}
CLASSIC_EXPIRY = {UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS}
RETRIABLE = {14, 15, 16}    # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR

SESSION_MS = 45_000

_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")


def group_config(interval_ms: int) -> GroupConfig:
    """What both brokers run with: members asked to heartbeat every `interval_ms`, sessions of
    45 s (Kafka's default), joins not delayed."""
    return GroupConfig(initial_rebalance_delay_ms=0, consumer_heartbeat_interval_ms=interval_ms,
                       consumer_min_heartbeat_interval_ms=min(interval_ms, 1_000),
                       consumer_session_timeout_ms=SESSION_MS, consumer_min_session_timeout_ms=SESSION_MS)


def kgroup_group_toml(interval_ms: int) -> str:
    g = group_config(interval_ms)
    return (f"initial_rebalance_delay_ms = {g.initial_rebalance_delay_ms}\n"
            f"consumer_heartbeat_interval_ms = {g.consumer_heartbeat_interval_ms}\n"
            f"consumer_min_heartbeat_interval_ms = {g.consumer_min_heartbeat_interval_ms}\n"
            f"consumer_session_timeout_ms = {g.consumer_session_timeout_ms}\n"
            f"consumer_min_session_timeout_ms = {g.consumer_min_session_timeout_ms}\n")


# ---- simulated members ----------------------------------------------------------------------


class Member:
    __slots__ = ("group", "member_id", "epoch", "conn", "slot", "in_flight", "sent_at", "frame",
                 "ack", "alive", "joined")

    def __init__(self, group: str, conn: "Lane", slot: int) -> None:
        self.group = group
        self.member_id = uuid.uuid4().hex[:22]
        self.epoch = 0
        self.conn = conn
        self.slot = slot
        self.in_flight = False
        self.sent_at = 0.0
        self.frame: bytes | None = None     # the steady heartbeat, correlation id 0
        self.ack: tuple | None = None       # an assignment to acknowledge on the next heartbeat
        self.alive = True
        self.joined = False


def consumer_frame(m: Member, partitions: int) -> bytes:
    if m.epoch == 0:                        # join: the whole subscription, nothing owned
        req = build(CGHReq, group_id=m.group, member_id=m.member_id, member_epoch=0, instance_id=None,
                    rack_id=None, rebalance_timeout=60_000, subscribed_topic_names=(TOPIC,),
                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=())
    else:
        req = build(CGHReq, group_id=m.group, member_id=m.member_id, member_epoch=m.epoch, instance_id=None,
                    rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=m.ack)
    return encode_request(CGH, CGH_V, 0, CLIENT_ID, req)


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def parse_cgh(frame: bytes) -> tuple[int, int, bool]:
    """(error code, member epoch, carries an assignment) of a ConsumerGroupHeartbeat v1
    response frame (size prefix included) without decoding it all."""
    pos = 8
    tags, pos = _uvarint(frame, pos)
    if tags:
        raise ValueError("tagged header fields")
    pos += 4                                            # throttle_time_ms
    error = _I16.unpack_from(frame, pos)[0]
    pos += 2
    for _ in range(2):                                  # error_message, member_id
        n, pos = _uvarint(frame, pos)
        pos += max(0, n - 1)
    epoch = _I32.unpack_from(frame, pos)[0]
    pos += 8                                            # member_epoch, heartbeat_interval_ms
    return error, epoch, frame[pos] == 1


class Lane:
    """One pipelined connection: frames out in order, answers back in order."""

    def __init__(self, load: "Load", host: str, port: int) -> None:
        self.load, self.host, self.port = load, host, port
        self.pending: deque[Member] = deque()
        self.out: list[bytes] = []
        self.corr = 0
        self.count = 0          # members placed on it

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.task = asyncio.create_task(self._read())

    def send(self, m: Member, frame: bytes, now: float) -> None:
        self.corr = (self.corr + 1) & 0x7FFFFFFF
        self.out.append(frame[:8] + _I32.pack(self.corr) + frame[12:])
        m.in_flight, m.sent_at = True, now
        self.pending.append(m)

    def flush(self) -> None:
        if self.out:
            self.writer.write(b"".join(self.out))
            self.out.clear()

    async def _read(self) -> None:
        buf = b""
        load = self.load
        while True:
            data = await self.reader.read(1 << 18)
            if not data:
                if not load.stopping:
                    load.fatal = f"{self.host}:{self.port} closed a connection"
                return
            buf = buf + data if buf else data
            pos, n = 0, len(buf)
            now = time.monotonic()
            while n - pos >= 4:
                size = _I32.unpack_from(buf, pos)[0]
                if n - pos - 4 < size:
                    break
                frame = buf[pos:pos + 4 + size]
                pos += 4 + size
                load.answer(self.pending.popleft(), frame, now)
            buf = buf[pos:]

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()
        self.task.cancel()


class Stats:
    """Counts of one measured window; latencies in a 1 ms histogram."""

    def __init__(self) -> None:
        self.answered = 0
        self.expiries = 0
        self.late = 0
        self.errors: dict[int, int] = {}
        self.hist = [0] * 60_001

    def latency(self, seconds: float) -> None:
        self.hist[min(60_000, int(seconds * 1000))] += 1

    def quantile(self, q: float) -> float | None:
        total = sum(self.hist)
        if not total:
            return None
        want, seen = q * total, 0
        for ms, k in enumerate(self.hist):
            seen += k
            if seen >= want:
                return ms + 0.5
        return None

    def max_ms(self) -> float | None:
        top = max((ms for ms, k in enumerate(self.hist) if k), default=None)
        return None if top is None else top + 1


class Load:
    """The members, the timer wheel and the counters of one broker side."""

    def __init__(self, protocol: str, interval: float, partitions: int, per_connection: int) -> None:
        self.protocol, self.interval, self.partitions = protocol, interval, partitions
        self.per_connection = per_connection
        self.slots = max(1, round(interval / TICK))
        self.wheel: list[list[Member]] = [[] for _ in range(self.slots)]
        self.urgent: list[Member] = []
        self.members: list[Member] = []
        self.groups: list[str] = []
        self.lanes: dict[tuple[str, int], list[Lane]] = {}
        self.stats = Stats()
        self.total_expiries = 0
        self.stopping = False
        self.fatal: str | None = None
        self.placed = 0
        self.assignments = 0    # answers that carried an assignment (joins and reassignments)
        self.assigned_at = 0.0  # when the latest of them came

    # -- connections ------------------------------------------------------------------------

    async def lane_for(self, host: str, port: int) -> Lane:
        """The connection to host:port with room for one more member."""
        lanes = self.lanes.setdefault((host, port), [])
        if not lanes or lanes[-1].count >= self.per_connection:
            lane = Lane(self, host, port)
            await lane.open()
            lanes.append(lane)
        return lanes[-1]

    def add(self, m: Member, urgent: bool = True) -> None:
        m.conn.count += 1
        self.members.append(m)
        self.wheel[m.slot].append(m)
        if urgent:
            self.urgent.append(m)

    def next_slot(self) -> int:
        self.placed += 1
        return (self.placed * 7919) % self.slots      # spread evenly, not in join order

    # -- the wheel --------------------------------------------------------------------------

    async def run_wheel(self) -> None:
        tick = 0
        loop_start = time.monotonic()
        while not self.stopping:
            now = time.monotonic()
            due = self.wheel[tick % self.slots]
            urgent, self.urgent = self.urgent, []
            touched = set()
            for m in urgent:
                if m.alive and not m.in_flight:
                    self._send(m, now)
                    touched.add(m.conn)
            for m in due:
                if not m.alive or not m.joined:
                    continue
                if m.in_flight:
                    self.stats.late += 1
                    continue
                self._send(m, now)
                touched.add(m.conn)
            for lane in touched:
                lane.flush()
            tick += 1
            delay = loop_start + tick * TICK - time.monotonic()
            await asyncio.sleep(max(0.0, delay))

    def _send(self, m: Member, now: float) -> None:
        if m.frame is None:
            m.frame = consumer_frame(m, self.partitions) if self.protocol == "consumer" else m.frame
        m.conn.send(m, m.frame, now)

    # -- answers ----------------------------------------------------------------------------

    def answer(self, m: Member, frame: bytes, now: float) -> None:
        m.in_flight = False
        st = self.stats
        st.answered += 1
        st.latency(now - m.sent_at)
        if self.protocol == "classic":
            error = _I16.unpack_from(frame, 12)[0]
            if error:
                self._error(m, error, CLASSIC_EXPIRY)
                if error in CLASSIC_EXPIRY:
                    m.alive = False
            return
        error, epoch, assigned = parse_cgh(frame)
        if error:
            if self._error(m, error, CONSUMER_EXPIRY):
                m.epoch, m.ack, m.frame, m.joined = 0, (), None, False
                self.urgent.append(m)
            elif error in RETRIABLE:
                self.urgent.append(m)
            return
        if assigned:
            self.assignments += 1
            self.assigned_at = now
            _, resp = decode_response(CGH, CGH_V, frame[4:])
            m.ack = tuple(build(CGHTopic, topic_id=t.topic_id, partitions=tuple(t.partitions))
                          for t in resp.assignment.topic_partitions)
            m.epoch = epoch
            m.frame = None
            self.urgent.append(m)       # acknowledge at once, as a client does
            return
        if epoch != m.epoch or m.ack is not None:
            m.epoch = epoch
            m.ack = None
            m.frame = None
        m.joined = True

    def _error(self, m: Member, error: int, expiry: set[int]) -> bool:
        st = self.stats
        st.errors[error] = st.errors.get(error, 0) + 1
        if error in expiry and (m.joined or self.protocol == "classic"):
            st.expiries += 1
            self.total_expiries += 1
            return True
        return error in expiry

    def live(self) -> int:
        return sum(1 for m in self.members if m.alive and m.joined)

    async def close(self) -> None:
        self.stopping = True
        for lanes in self.lanes.values():
            for lane in lanes:
                await lane.close()


# ---- the brokers ----------------------------------------------------------------------------


class Side:
    """A broker (or cluster) under load: where a group's members connect, and its processes."""

    def __init__(self, name: str, pids: list[int], nodes: dict[int, tuple[str, int]], bootstrap: str,
                 close) -> None:
        self.name, self.pids, self.nodes, self.bootstrap, self._close = name, pids, nodes, bootstrap, close

    def cpu(self) -> float | None:
        values = [peers.process_cpu_seconds(p) for p in self.pids]
        return None if not values or None in values else sum(values)

    def rss(self, field: str = "VmRSS") -> int | None:
        total = 0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/status") as f:
                    total += next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))
            except (OSError, StopIteration):
                return None
        return total if self.pids else None

    def close(self) -> None:
        self._close()


@contextlib.contextmanager
def start_side(which: str, args):
    interval_ms = int(args.interval * 1000)
    if which == "external":
        b = peers.external(args.bootstrap)
        pids = [p for p in (peers.pid_listening_on(port) for _, port in b.nodes.values()) if p is not None]
        yield Side("ours", pids if len(pids) == len(b.nodes) else [], b.nodes, b.bootstrap, lambda: None)
    elif which == "single":
        b = peers.start_kgroup(f'fsync = "never"\n[group]\n{kgroup_group_toml(interval_ms)}')
        try:
            yield Side("kgroup", [b.proc.pid], {0: (b.host, b.port)}, b.bootstrap, lambda: None)
        finally:
            b.stop()
    elif which == "cluster":
        from failover import Cluster

        cluster = Cluster("never", group_toml=kgroup_group_toml(interval_ms))
        try:
            yield Side("kgroup cluster", [n.proc.pid for n in cluster.nodes],
                       {n.node_id: ("127.0.0.1", n.port) for n in cluster.nodes}, cluster.bootstrap, lambda: None)
        finally:
            cluster.close()
    elif which == "kafka":
        from kgroup.testing.reference import ReferenceKafka

        # Kafka's own coordinator defaults where the differential settings change them.
        settings = {"group.consumer.assignment.interval.ms": 1_000, "group.consumer.assignor.offload.enable": True}
        jvm = ("-Xms512m", f"-Xmx{args.kafka_heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true")
        with ReferenceKafka(settings, jvm_options=jvm, group=group_config(interval_ms)) as kafka:
            host, _, port = kafka.bootstrap.rpartition(":")
            yield Side("kafka", [kafka.proc.pid], {1: (host, int(port))}, kafka.bootstrap, lambda: None)
    elif which == "kafka-cluster":
        from kgroup.testing.reference_cluster import ReferenceKafkaCluster

        settings = {"group.consumer.assignment.interval.ms": 1_000, "group.consumer.assignor.offload.enable": True}
        jvm = ("-Xms512m", f"-Xmx{args.kafka_heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true")
        cluster = ReferenceKafkaCluster(settings=settings, jvm_options=jvm, group=group_config(interval_ms))
        try:
            cluster.start(timeout=240)      # four JVMs starting at once
            yield Side("kafka cluster", [n.proc.pid for n in cluster.nodes.values()],
                       {i: (cluster.host, n.port) for i, n in cluster.brokers.items()}, cluster.bootstrap,
                       lambda: None)
        finally:
            cluster.stop()
    else:
        raise ValueError(which)


def create_topic(bootstrap: str, partitions: int) -> None:
    from failover import create_topic as create

    create(bootstrap, TOPIC, partitions)


async def coordinators(bootstrap: str, groups: list[str]) -> dict[str, tuple[str, int]]:
    """Each group's coordinator (host, port)."""
    from kgroup.client.admin import AdminClient

    found = {}
    async with AdminClient(bootstrap) as admin:
        for k in range(0, len(groups), 200):
            chunk = groups[k:k + 200]
            infos = await asyncio.gather(*(admin.find_coordinator(g) for g in chunk))
            for g, info in zip(chunk, infos):
                found[g] = (info.host, info.port)
    return found


# ---- adding members -------------------------------------------------------------------------


async def add_consumer_groups(load: Load, side: Side, groups: list[str], size: int, join_rate: float) -> None:
    where = await coordinators(side.bootstrap, groups)
    started, added = time.monotonic(), 0
    for g in groups:
        load.groups.append(g)
        lane = None
        for _ in range(size):
            lane = await load.lane_for(*where[g])
            load.add(Member(g, lane, load.next_slot()))
            added += 1
        ahead = added / join_rate - (time.monotonic() - started)
        if ahead > 0:
            await asyncio.sleep(ahead)


async def add_classic_groups(load: Load, side: Side, groups: list[str], size: int, lanes: int) -> None:
    """Each group built with JoinGroup/SyncGroup on `size` connections of one of `lanes`
    sets (requests on one connection are handled in order and a JoinGroup waits for the
    rebalance, so one group at a time per set), then handed to the wheel."""
    from broker_common import HB_V, HbReq, Member as ClassicMember, build_group
    from kgroup.client.connection import Connection

    where = await coordinators(side.bootstrap, groups)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for g in groups:
        queue.put_nowait(g)

    async def builder() -> None:
        conns: dict[tuple[str, int], list] = {}
        try:
            while not queue.empty():
                g = queue.get_nowait()
                host, port = where[g]
                if (host, port) not in conns:
                    conns[(host, port)] = list(await asyncio.gather(
                        *(Connection.open(host, port, client_id=CLIENT_ID, timeout=120) for _ in range(size))))
                built = await build_group(host, port, g, size, conns=conns[(host, port)],
                                          session_ms=SESSION_MS, interval=0.5)
                load.groups.append(g)
                for i, cm in enumerate(built):
                    lane = await load.lane_for(host, port)
                    m = Member(g, lane, load.next_slot())
                    m.member_id, m.epoch, m.joined = cm.member_id, cm.generation, True
                    req = build(HbReq, group_id=g, generation_id=cm.generation, member_id=cm.member_id,
                                group_instance_id=None)
                    m.frame = encode_request(HEARTBEAT, HB_V, 0, CLIENT_ID, req)
                    load.add(m, urgent=False)
        finally:
            for cs in conns.values():
                for c in cs:
                    await c.close()

    await asyncio.gather(*(builder() for _ in range(lanes)))


async def settle(load: Load, timeout: float) -> None:
    """Until every member has joined and no assignment has changed for one interval and a
    half (the groups' reconciliation over), or `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and load.fatal is None:
        quiet = time.monotonic() - load.assigned_at > 1.5 * load.interval
        if quiet and all(m.joined and m.ack is None for m in load.members if m.alive):
            return
        await asyncio.sleep(0.2)


# ---- one measurement ------------------------------------------------------------------------


def gen_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def measure(load: Load, side: Side, seconds: float, baseline_rss: int | None) -> dict[str, object]:
    load.stats = Stats()
    cpu0, gen0, t0 = side.cpu(), gen_cpu(), time.monotonic()
    end = t0 + seconds
    while time.monotonic() < end and load.fatal is None:
        await asyncio.sleep(min(1.0, end - time.monotonic()))
    dt = time.monotonic() - t0
    cpu1, gen1 = side.cpu(), gen_cpu()
    st = load.stats
    rss = side.rss()
    n, g = len(load.members), len(load.groups)
    broker_cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else None
    grown = rss - baseline_rss if rss is not None and baseline_rss is not None else None
    return {
        "members": n, "groups": g, "live": load.live(), "assignments": load.assignments, "expiries": st.expiries, "late": st.late,
        "errors": dict(sorted(st.errors.items())),
        "heartbeats/s": st.answered / dt if dt else None,
        "p50 ms": st.quantile(0.5), "p99 ms": st.quantile(0.99), "max ms": st.max_ms(),
        "broker CPU µs/heartbeat": broker_cpu / st.answered * 1e6 if broker_cpu is not None and st.answered else None,
        "broker CPU share": broker_cpu / dt if broker_cpu is not None and dt else None,
        "RSS bytes/member": grown / n if grown is not None and n else None,
        "RSS KiB/group": grown / g / 1024 if grown is not None and g else None,
        "RSS MiB": rss / 2**20 if rss is not None else None,
        "peak RSS MiB": (side.rss("VmHWM") or 0) / 2**20 or None,
        "generator CPU share": (gen1 - gen0) / dt if dt else None,
        "generator CPU µs/heartbeat": (gen1 - gen0) / st.answered * 1e6 if st.answered else None,
        "seconds": dt,
    }


def report(name: str, r: dict[str, object]) -> None:
    print(f"  {name}: {r['members']:,} members in {r['groups']:,} groups ({r['live']:,} live), "
          f"expiries {r['expiries']}, late {r['late']}, assignments received {r['assignments']:,}, errors {r['errors'] or '-'}; "
          f"{peers.fmt(r['heartbeats/s'])} heartbeats/s, latency p50 {peers.fmt(r['p50 ms'])} ms "
          f"p99 {peers.fmt(r['p99 ms'])} ms max {peers.fmt(r['max ms'])} ms; broker CPU "
          f"{peers.fmt(r['broker CPU µs/heartbeat'])} µs/heartbeat ({peers.fmt(r['broker CPU share'])} cores), "
          f"RSS {peers.fmt(r['RSS MiB'])} MiB ({peers.fmt(r['RSS bytes/member'])} B/member, "
          f"{peers.fmt(r['RSS KiB/group'])} KiB/group); generator CPU {peers.fmt(r['generator CPU share'])} of a core "
          f"({peers.fmt(r['generator CPU µs/heartbeat'])} µs/heartbeat)",
          flush=True)
    if (r["generator CPU share"] or 0) > 0.8:
        print("  WARNING: the generator used over 80% of a core: it may be the bottleneck", flush=True)


async def drive(which: str, args) -> list[dict[str, object]]:
    """Start the side, add members (step by step with --ramp), measure; one result per step."""
    results = []
    with start_side(which, args) as side:
        partitions = args.partitions or args.group_size
        create_topic(side.bootstrap, partitions)
        await asyncio.sleep(1.0)
        baseline = side.rss()
        load = Load(args.protocol, args.interval, partitions, args.per_connection)
        wheel = asyncio.create_task(load.run_wheel())
        try:
            target = args.members
            made = 0
            while True:
                new_groups = [f"load-{which}-{i}" for i in range(made, math.ceil(target / args.group_size))]
                made += len(new_groups)
                t = time.monotonic()
                try:
                    if args.protocol == "consumer":
                        await add_consumer_groups(load, side, new_groups, args.group_size, args.join_rate)
                    else:
                        await add_classic_groups(load, side, new_groups, args.group_size, args.join_lanes)
                except (RequestTimeout, TimeoutError) as exc:
                    if not results:
                        raise
                    # A ramp goes until the broker cannot keep up: past that, a new
                    # connection's first request may wait longer than the client's timeout.
                    print(f"  stopped: adding members up to {target:,} failed, the broker did not answer "
                          f"in time ({exc}); the last step above is the most it served", flush=True)
                    break
                await settle(load, max(120.0, 20 * args.interval))
                print(f"  {side.name}: {len(load.members):,} members joined and settled in "
                      f"{time.monotonic() - t:.1f} s; measuring {args.step_seconds if args.ramp else args.duration:.0f} s",
                      flush=True)
                r = await measure(load, side, args.step_seconds if args.ramp else args.duration, baseline)
                r["expiries"] = load.total_expiries if args.ramp else r["expiries"]
                report(side.name, r)
                results.append(r)
                if load.fatal:
                    print(f"  stopped: {load.fatal}", flush=True)
                    break
                if not args.ramp or load.total_expiries or target + args.step > args.max_members:
                    break
                target += args.step
        finally:
            wheel.cancel()
            await load.close()
    return results


def main() -> None:
    # SIGTERM (`timeout`, a CI job's end) unwinds like Ctrl-C, so the finally blocks stop
    # the brokers and JVMs this run started (Kafka's run in sessions of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--members", type=int, default=10_000, help="live members (the first step with --ramp)")
    p.add_argument("--group-size", type=int, default=100, help="members per group")
    p.add_argument("--partitions", type=int, default=0, help="partitions of the subscribed topic (default: group size)")
    p.add_argument("--protocol", choices=["consumer", "classic"], default="consumer")
    p.add_argument("--interval", type=float, default=3.0, help="heartbeat interval, seconds")
    p.add_argument("--duration", type=float, default=600.0, help="measured seconds (without --ramp)")
    p.add_argument("--ramp", action="store_true", help="add --step members every --step-seconds until an expiry")
    p.add_argument("--step", type=int, default=0, help="members added per ramp step (default: --members)")
    p.add_argument("--step-seconds", type=float, default=60.0)
    p.add_argument("--max-members", type=int, default=5_000_000)
    p.add_argument("--target", choices=["single", "cluster"], default="single",
                   help="one kgroup node, or three sharing a data dir")
    p.add_argument("--bootstrap", help="a running broker or cluster instead (HOST:PORT[,...])")
    p.add_argument("--peer", choices=["kafka"],
                   help="then Apache Kafka 4.4 the same way: one node, or with --target cluster three brokers")
    p.add_argument("--kafka-heap", default="4g", help="Kafka's -Xmx")
    p.add_argument("--peer-only", action="store_true", help="with --peer: measure only the peer")
    p.add_argument("--per-connection", type=int, default=1_000, help="members pipelined on one connection")
    p.add_argument("--join-rate", type=float, default=2_000.0, help="consumer-protocol joins per second")
    p.add_argument("--join-lanes", type=int, default=4, help="classic groups built at once")
    args = p.parse_args()
    args.step = args.step or args.members
    # --peer kafka beside --target cluster: a Kafka cluster (three brokers and a controller).
    peer = "kafka-cluster" if args.peer == "kafka" and args.target == "cluster" and not args.bootstrap else args.peer
    which = ["external" if args.bootstrap else args.target] + ([peer] if peer else [])
    if args.peer_only:
        which = which[1:]
    results = {w: asyncio.run(drive(w, args)) for w in which}
    labels = {"external": "ours", "single": "ours", "cluster": "ours", "kafka": "kafka", "kafka-cluster": "kafka"}
    if args.ramp:
        for w, rs in results.items():
            ok = [r["members"] for r in rs if not r["expiries"]]
            print(f"{labels[w]} ({w}): largest N without expiry: {max(ok) if ok else 'none'} "
                  f"(steps of {args.step_seconds:.0f} s; confirm with --duration 600)")
    rows = []
    keys = ["members", "groups", "expiries", "late", "heartbeats/s", "p99 ms", "max ms", "broker CPU µs/heartbeat",
            "RSS bytes/member", "RSS KiB/group", "peak RSS MiB", "generator CPU share",
            "generator CPU µs/heartbeat"]
    last = {labels[w]: rs[-1] for w, rs in results.items() if rs}
    for k in keys:
        rows.append((k, {side: r.get(k) for side, r in last.items()}))
    print_table(f"Design load ({args.protocol} protocol, heartbeat every {args.interval:g} s, groups of "
                f"{args.group_size}; target {which[0]}; load average {peers.load_average()})",
                rows, list(last), higher_is_better=False)


if __name__ == "__main__":
    main()
