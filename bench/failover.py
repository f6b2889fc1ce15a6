"""Failover of a kgroup cluster: kill -9 of a group's coordinator until every partition is
consumed again; hand-back after the node returns; load speed with 10,000 groups on it.

    .venv/bin/python bench/failover.py [--quick] [--runs 10] [--members 10,100]
        [--groups 10000] [--fsync never] [--peer mock|kafka]

Set-up per configuration: three `kgroup serve` nodes sharing one data dir (node_timeout_ms
3000, initial_rebalance_delay_ms 0), a topic of max(12, members) partitions, a producer
(confluent-kafka, acks=all) writing to every partition all the time, and one classic group
of N members (kgroup's asyncio Consumer, up to 25 per process) coordinated by node 1, which
also leads a third of the partitions. `--groups G`: before the runs, G other groups
coordinated by node 1 commit 100 offsets each (G x 100 commit records on node 1's
group-metadata partitions), so each takeover loads them.

Per run: kill -9 node 1; takeover = until the last of node 1's partitions is served by
another node (the "took ... from node 1" log lines); failover = until every partition has
given its member a record produced after the kill. Then start node 1 again; hand-back = from that command until the
group's coordinator is node 1 again and every partition has given a record produced after
the restart (node start-up included). Medians over the runs; rebalance callbacks after the
first assignment are counted (there should be none). The load speed is the records and
seconds of the "took group-metadata partition ..." lines the takeovers log.

Peer (`--peer mock`): librdkafka's mock cluster (3 brokers, in process, steered with
ctypes): the broker coordinating the group goes down and its group and partitions move to
the others at once, so the time measured is the clients' own rediscovery alone, with no
server-side takeover: the floor a broker's failover adds to.

Peer (`--peer kafka`): Apache Kafka 4.4 as a cluster (kgroup.testing.reference_cluster: one
KRaft controller and three brokers, each its own JVM, topics and __consumer_offsets RF 3,
min.insync.replicas 2, broker.session.timeout.ms and replica.lag.time.max.ms 3000 as kgroup's
node_timeout_ms), the same
producer and the same group of kgroup consumers. Both clusters run at once and the runs
alternate (kgroup, Kafka, kgroup, ...), the idle side's producer paused; `--sequential` runs
one cluster at a time instead (kgroup's runs, then Kafka's). Per Kafka run: kill
-9 of the broker that coordinates the group then; takeover = until FindCoordinator names
another broker (polled every 100 ms); failover as above; then the broker is started again
and the run ends when every replica is in sync and every partition consumed again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from datetime import datetime
from pathlib import Path

import peers
from peers import ROOT, free_port, median, print_table, wait_port

sys.path.insert(0, str(ROOT))

from kgroup.client.admin import AdminClient  # noqa: E402
from kgroup.storage.group_hash import partition_for_group  # noqa: E402

VICTIM = 1
NODES = 3
PER_PROCESS = 25
TOOK = re.compile(r"took group-metadata partition \d+ .* records=(\d+) groups=\d+ in ([0-9.]+) s")


def coordinated_by(node: int, prefix: str, count: int = 1) -> list[str]:
    """`count` group ids whose group-metadata partition prefers `node` (p mod 3)."""
    found, i = [], 0
    while len(found) < count:
        group = f"{prefix}-{i}"
        if partition_for_group(group, 50) % NODES == node:
            found.append(group)
        i += 1
    return found


class Node:
    def __init__(self, node_id: int, port: int, cluster: str, data: Path, config: Path) -> None:
        self.node_id, self.port, self.cluster, self.data, self.config = node_id, port, cluster, data, config
        self.lines: list[str] = []
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([str(peers.KGROUP), "serve", "--node-id", str(self.node_id), "--cluster",
                                      self.cluster, "--data-dir", str(self.data), "--config", str(self.config)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True).start()

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Cluster:
    def __init__(self, fsync: str, group_toml: str = "initial_rebalance_delay_ms = 0\n") -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="kgroup-failover-"))
        config = self.tmp / "node.toml"
        config.write_text(f'fsync = "{fsync}"\nnode_timeout_ms = 3000\n[group]\n{group_toml}')
        ports = [free_port() for _ in range(NODES)]
        spec = ",".join(f"{i}=127.0.0.1:{p}" for i, p in enumerate(ports))
        self.nodes = [Node(i, p, spec, self.tmp / "data", config) for i, p in enumerate(ports)]
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in ports)
        for node in self.nodes:
            node.start()
        try:
            for node in self.nodes:
                wait_port("127.0.0.1", node.port, timeout=120, proc=node.proc)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for node in self.nodes:
            node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


# Records/s the producer offers by default (--rate); every figure depends on the cluster keeping up.
DEFAULT_RATE = 2_000
# An acknowledgement later than this after its send, in the 2 s before a kill, means the
# cluster (or the machine) is not keeping up: the run then measures a backlog, not a failover.
BACKLOG_WARN_S = 0.5


class Producer(threading.Thread):
    """acks=all to every partition, round robin, at `rate` records/s; remembers when each
    offset was acknowledged and how long each acknowledgement took."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int = DEFAULT_RATE) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.acked: dict[int, list[tuple[float, int]]] = {p: [] for p in range(partitions)}
        self.latencies: deque[tuple[float, float]] = deque(maxlen=100_000)  # (acked at, seconds after the send)
        self.stopped = threading.Event()
        self.paused = threading.Event()    # while another side's run is measured
        self._scans: dict[float, dict[int, tuple[int, int]]] = {}

    def run(self) -> None:
        from confluent_kafka import Producer as Rd

        rd = Rd({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 0,
                 "enable.idempotence": False})

        def done(err, msg) -> None:
            if err is None:   # remembered by when it was produced (written in its value)
                sent = struct.unpack_from(">d", msg.value())[0]
                self.acked[msg.partition()].append((sent, msg.offset()))
                now = time.time()
                self.latencies.append((now, now - sent))

        i = 0
        pad = b"x" * 92
        due = time.monotonic()
        while not self.stopped.is_set():
            if self.paused.is_set():
                rd.poll(0.05)
                due = time.monotonic()
                continue
            try:
                rd.produce(self.topic, struct.pack(">d", time.time()) + pad, partition=i % self.partitions,
                           on_delivery=done)
            except BufferError:      # partitions without a leader for a moment: wait for room
                rd.poll(0.1)
                continue
            i += 1
            rd.poll(0)
            if i % 20 == 0:          # `rate` records/s, whatever the partition count
                due += 20 / self.rate
                ahead = due - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
                elif ahead < -1:     # fell behind (paused by the GIL): do not burst to catch up
                    due = time.monotonic()
        rd.flush(30)

    def caught_up(self, timeout: float = 30.0) -> None:
        """Wait (up to `timeout`) until the last 2 s of acknowledgements were prompt, so a
        run starts from a steady state, not from the tail of the previous run's moves."""
        deadline = time.time() + timeout
        while self.lag_before(time.time()) > BACKLOG_WARN_S and time.time() < deadline:
            time.sleep(0.2)

    def lag_before(self, t: float, window: float = 2.0) -> float:
        """The longest acknowledgement in the `window` seconds before `t` (0 if none)."""
        return max((lat for at, lat in list(self.latencies) if t - window <= at < t), default=0.0)

    def ends_at(self, t: float) -> dict[int, int]:
        """Per partition, the offset after the last acknowledged record produced before `t`
        (brought up to date on every call: an acknowledgement may come in after `t`). Each
        call reads only the acknowledgements that came since the last call for the same `t`:
        the waits call it every 20 ms, and rescanning every acknowledgement of the run each
        time held the GIL long enough to slow the producer thread beside it."""
        scans = self._scans.setdefault(t, {})
        ends = {}
        for p, acks in self.acked.items():
            seen, end = scans.get(p, (0, 0))
            n = len(acks)
            for at, o in acks[seen:n]:
                if at < t and o + 1 > end:
                    end = o + 1
            scans[p] = (n, end)
            ends[p] = end
        return ends


class Members:
    """N group members over ceil(N / 25) processes; the latest position per partition."""

    def __init__(self, bootstrap: str, group: str, topic: str, count: int) -> None:
        self.positions: dict[int, int] = {}
        self.count = count
        self.rebalances: list[float] = []    # times of rebalance callbacks (first assignments too)
        self.members_seen: set[str] = set()
        self.procs = []
        for k in range(0, count, PER_PROCESS):
            proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "failover_members.py"), bootstrap, group,
                                     topic, str(min(PER_PROCESS, count - k)), f"m{k}"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    text=True)
            threading.Thread(target=self._read, args=(proc,), daemon=True).start()
            self.procs.append(proc)

    def _read(self, proc) -> None:
        for line in proc.stdout:
            event = json.loads(line)
            if "rebalance" in event:
                self.rebalances.append(event["t"])
                self.members_seen.add(event["member"])
            else:
                self.positions[event["p"]] = max(self.positions.get(event["p"], 0), event["o"])

    def settle(self) -> float:
        """Wait until every member has had an assignment and 3 s pass without a rebalance
        callback (a large group takes a few rounds as its members come up); returns the
        time from which to count rebalances."""
        while len(self.members_seen) < self.count or self.rebalances[-1] > time.time() - 3:
            time.sleep(0.5)
        return time.time()

    def rebalances_since(self, t: float) -> int:
        return sum(at >= t for at in self.rebalances)

    def past(self, ends: dict[int, int]) -> bool:
        return all(self.positions.get(p, 0) > end for p, end in ends.items())

    def close(self) -> None:
        for proc in self.procs:
            proc.stdin.close()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def backlog_note(producer: Producer, killed: float, lags: list[float]) -> str:
    """Remember the producer's acknowledgement lag before the kill; a warning if it was
    behind (then the run's failover includes draining its backlog)."""
    lag = producer.lag_before(killed)
    lags.append(lag)
    if lag > BACKLOG_WARN_S:
        return f" [producer behind by {lag:.1f} s before the kill: not keeping up at {producer.rate:,} records/s]"
    return ""


def _logged_at(line: str) -> float:
    """The wall-clock time of a broker log line ("2026-11-24 05:04:51,912 INFO ...")."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def wait(condition, timeout: float, what: str, every: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


async def _admin(bootstrap: str, work) -> object:
    async with AdminClient(bootstrap) as admin:
        return await work(admin)


def coordinator(bootstrap: str, group: str) -> int:
    return asyncio.run(_admin(bootstrap, lambda a: a.find_coordinator(group))).node_id


def fill_groups(bootstrap: str, groups: int) -> float:
    """`groups` simple groups on node 1 commit 100 offsets each; returns the seconds taken."""
    started = time.monotonic()
    offsets = {("idle", p): 1000 + p for p in range(100)}

    create_topic(bootstrap, "idle", 100)

    async def work(admin):
        for group in coordinated_by(VICTIM, "idle-group", groups):
            await admin.alter_group_offsets(group, offsets, require_empty=False)

    asyncio.run(_admin(bootstrap, work))
    return time.monotonic() - started


def create_topic(bootstrap: str, topic: str, partitions: int, replication_factor: int = 1) -> None:
    from confluent_kafka.admin import AdminClient as RdAdmin, NewTopic

    admin = RdAdmin({"bootstrap.servers": bootstrap})   # kept alive until the answer
    admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                  replication_factor=replication_factor)])[topic].result(30)


class Side:
    """A cluster under test with the producer and the group of a configuration."""

    cluster = producer = group_members = None
    rate = DEFAULT_RATE

    def _start_group(self, bootstrap: str, group: str, members: int, partitions: int, timeout: float) -> None:
        """The producer and the group on `bootstrap`, until the group consumes every
        partition and has settled."""
        self.producer = Producer(bootstrap, "moving", partitions, self.rate)
        self.producer.start()
        self.group = group
        self.group_members = Members(bootstrap, group, "moving", members)
        begun = time.time() + 1
        wait(lambda: self.group_members.past(self.producer.ends_at(begun)), timeout,
             "the group consuming every partition")
        self.settled = self.group_members.settle()

    def close(self) -> None:
        if self.group_members is not None:
            self.group_members.close()
        if self.producer is not None:
            self.producer.stopped.set()
            self.producer.join(30)
        self.cluster.close()


class KgroupSide(Side):
    """The 3-node kgroup cluster with its producer and group, ready for runs (`run`)."""

    name = "ours"

    def __init__(self, members: int, groups: int, fsync: str, rate: int = DEFAULT_RATE) -> None:
        self.rate = rate
        self.cluster = Cluster(fsync)
        self.takeovers, self.failovers, self.handbacks, self.lags = [], [], [], []
        try:
            partitions = max(12, members)
            create_topic(self.cluster.bootstrap, "moving", partitions)
            if groups:
                print(f"  {groups:,} groups x 100 commits on node {VICTIM}: "
                      f"{fill_groups(self.cluster.bootstrap, groups):.1f} s", flush=True)
            (group,) = coordinated_by(VICTIM, f"moving-{members}")
            self._start_group(self.cluster.bootstrap, group, members, partitions, 120)
        except BaseException:
            self.close()
            raise

    def run(self, run: int) -> None:
        cluster, producer, group_members, group = self.cluster, self.producer, self.group_members, self.group
        victim = cluster.nodes[VICTIM]
        seen = [len(node.lines) for node in cluster.nodes]
        killed = time.time()
        victim.kill9()
        wait(lambda: group_members.past(producer.ends_at(killed)), 120, "every partition consumed after the kill")
        self.failovers.append(time.time() - killed)
        took = [_logged_at(line) for node, n in zip(cluster.nodes, seen) if node is not victim
                for line in node.lines[n:] if "took " in line and f"from node {VICTIM} " in line]
        self.takeovers.append(max(took) - killed if took else None)
        restarted = time.time()
        victim.start()
        wait(lambda: coordinator(cluster.bootstrap, group) == VICTIM, 120, "the group handed back")
        back = time.time()
        wait(lambda: group_members.past(producer.ends_at(back)), 120, "every partition consumed after the hand-back")
        self.handbacks.append(time.time() - restarted)
        note = backlog_note(producer, killed, self.lags)
        print(f"  kgroup run {run + 1}: takeover {self.takeovers[-1] or float('nan'):.2f} s, "
              f"failover {self.failovers[-1]:.2f} s, hand-back {self.handbacks[-1]:.2f} s{note}", flush=True)

    def result(self) -> dict[str, object]:
        runs = len(self.failovers)
        loads = [(int(m.group(1)), float(m.group(2))) for node in self.cluster.nodes for line in node.lines
                 if (m := TOOK.search(line)) and "from node 1 " in line]
        records, seconds = sum(r for r, _ in loads), sum(s for _, s in loads)
        return {"takeover s": median(self.takeovers), "failover s": median(self.failovers),
                "hand-back s": median(self.handbacks),
                "records loaded per takeover": records / runs if runs else None,
                "load records/s": records / seconds if seconds and records else None,
                "rebalances": self.group_members.rebalances_since(self.settled),
                "ack lag s": max(self.lags, default=None)}

# A broker of the Kafka cluster sized for this benchmark (three of them and a controller
# share the machine with the kgroup cluster).
KAFKA_BROKER_JVM = ("-Xms512m", "-Xmx512m", "-XX:+UseG1GC", "-Djava.awt.headless=true")
KAFKA_CONTROLLER_JVM = ("-Xms256m", "-Xmx256m", "-XX:+UseG1GC", "-Djava.awt.headless=true")
NODE_TIMEOUT_MS = 3000      # kgroup's node_timeout_ms in Cluster, Kafka's broker.session.timeout.ms


class KafkaSide(Side):
    """Apache Kafka 4.4: 1 KRaft controller + 3 brokers (RF 3, min ISR 2, __consumer_offsets
    RF 3), the same producer and the same group of kgroup consumers. Per run: kill -9 of the
    broker that coordinates the group (whichever it is then); failover as for kgroup; then
    the broker is started again and the run ends when every replica is back in sync and
    every partition consumed again (Kafka moves no leadership back at once: its preferred
    leader election runs every 300 s, so there is no hand-back to compare)."""

    name = "kafka"

    def __init__(self, members: int, rate: int = DEFAULT_RATE) -> None:
        self.rate = rate
        from kgroup.testing.reference_cluster import ReferenceKafkaCluster

        self.cluster = ReferenceKafkaCluster(jvm_options=KAFKA_BROKER_JVM, controller_jvm_options=KAFKA_CONTROLLER_JVM,
                                             node_timeout_ms=NODE_TIMEOUT_MS)
        self.failovers, self.rejoins, self.coordinator_moves, self.lags = [], [], [], []
        try:
            self.cluster.start(timeout=240)   # four JVMs starting at once on a busy machine
            bootstrap = self.cluster.bootstrap
            self.partitions = max(12, members)
            create_topic(bootstrap, "moving", self.partitions, replication_factor=3)
            self._start_group(bootstrap, f"moving-kafka-{members}", members, self.partitions, 180)
        except BaseException:
            self.close()
            raise

    def run(self, run: int) -> None:
        cluster, producer, group_members = self.cluster, self.producer, self.group_members
        victim = coordinator(cluster.bootstrap, self.group)
        killed = time.time()
        cluster.kill(victim)
        moved = threading.Thread(target=self._coordinator_moved, args=(victim, killed), daemon=True)
        moved.start()
        wait(lambda: group_members.past(producer.ends_at(killed)), 120, "every partition consumed after the kill")
        self.failovers.append(time.time() - killed)
        moved.join(120)
        restarted = time.time()
        cluster.start_node(victim)
        wait(lambda: in_sync(cluster.bootstrap, ["moving", "__consumer_offsets"], 3), 180,
             "every replica back in sync", every=0.5)
        back = time.time()
        wait(lambda: group_members.past(producer.ends_at(back)), 120, "every partition consumed after the restart")
        self.rejoins.append(time.time() - restarted)
        note = backlog_note(producer, killed, self.lags)
        print(f"  kafka run {run + 1} (coordinator was broker {victim}): coordinator moved "
              f"{self.coordinator_moves[-1] if self.coordinator_moves else float('nan'):.2f} s, "
              f"failover {self.failovers[-1]:.2f} s, restart -> in sync and consumed {self.rejoins[-1]:.2f} s{note}",
              flush=True)

    def _coordinator_moved(self, victim: int, killed: float) -> None:
        """Polls FindCoordinator until another broker names itself coordinator of the group."""
        try:
            wait(lambda: coordinator(self.cluster.bootstrap, self.group) != victim, 120, "a new coordinator",
                 every=0.1)
            self.coordinator_moves.append(time.time() - killed)
        except RuntimeError:
            pass

    def result(self) -> dict[str, object]:
        return {"takeover s": median(self.coordinator_moves), "failover s": median(self.failovers),
                "rejoin s": median(self.rejoins), "rebalances": self.group_members.rebalances_since(self.settled),
                "ack lag s": max(self.lags, default=None)}

def in_sync(bootstrap: str, topics: list[str], replicas: int) -> bool:
    """Every partition of `topics` has a leader and `replicas` replicas in sync."""
    from confluent_kafka.admin import AdminClient as RdAdmin

    metadata = RdAdmin({"bootstrap.servers": bootstrap, "log_level": 0}).list_topics(timeout=10)
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return False
        if any(p.leader < 0 or len(p.isrs) < replicas for p in found.partitions.values()):
            return False
    return True


def run_sides(make_sides, runs: int, sequential: bool = False) -> list[dict[str, object]]:
    """Set up every side, then their runs interleaved (A, B, A, B...), the idle side's
    producer paused; each side's medians. `sequential`: one side at a time, set up, run and
    closed before the next is set up (two clusters, four JVMs and two groups of consumers
    at once load 2 cores past what either side alone would see)."""
    if sequential:
        return [run_sides([make], runs)[0] for make in make_sides]
    sides = []
    try:
        for make in make_sides:
            sides.append(make())
        for run in range(runs):
            for side in sides:
                for other in sides:
                    other.producer.paused.set() if other is not side else other.producer.paused.clear()
                time.sleep(1.0)
                side.producer.caught_up()
                side.run(run)
        return [side.result() for side in sides]
    finally:
        for side in sides:
            side.close()


def run_kgroup(members: int, runs: int, groups: int, fsync: str, rate: int) -> dict[str, object]:
    (result,) = run_sides([lambda: KgroupSide(members, groups, fsync, rate)], runs)
    return result


def run_mock(members: int, runs: int, rate: int) -> dict[str, object]:
    from tests.integration.rdkafka_mock import MockCluster

    mock = MockCluster(3)
    partitions = max(12, members)
    mock.create_topic("moving", partitions)
    group = f"moving-mock-{members}"
    producer = Producer(mock.bootstrap, "moving", partitions, rate)
    producer.start()
    group_members = None
    try:
        coordinator_broker = 2
        mock.set_coordinator(group, coordinator_broker)
        for p in range(partitions):
            mock.set_leader("moving", p, 1 + p % 3)
        group_members = Members(mock.bootstrap, group, "moving", members)
        begun = time.time() + 1
        wait(lambda: group_members.past(producer.ends_at(begun)), 120, "the group consuming every partition")
        settled = group_members.settle()
        failovers = []
        for run in range(runs):
            time.sleep(1.0)
            down = coordinator_broker
            up = 1 + down % 3
            killed = time.time()
            mock.broker_down(down)
            mock.set_coordinator(group, up)
            for p in range(partitions):
                if 1 + p % 3 == down:
                    mock.set_leader("moving", p, up)
            wait(lambda: group_members.past(producer.ends_at(killed)), 120, "every partition consumed after the move")
            failovers.append(time.time() - killed)
            mock.broker_up(down)
            for p in range(partitions):
                mock.set_leader("moving", p, 1 + p % 3)
            coordinator_broker = up
            back = time.time()
            wait(lambda: group_members.past(producer.ends_at(back)), 120, "consuming again after the brokers came back")
            print(f"  mock run {run + 1}: failover {failovers[-1]:.2f} s", flush=True)
        return {"failover s": median(failovers), "rebalances": group_members.rebalances_since(settled)}
    finally:
        if group_members is not None:
            group_members.close()
        producer.stopped.set()
        producer.join(30)
        mock.close()


def main() -> None:
    # SIGTERM (`timeout`, a CI job's end) unwinds like Ctrl-C, so the finally blocks stop
    # the brokers and JVMs this run started (Kafka's run in sessions of their own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="3 runs, 10 members, no 10,000 groups")
    p.add_argument("--runs", type=int, default=None, help="runs per configuration (default 10)")
    p.add_argument("--members", default="10,100", help="group sizes, comma-separated")
    p.add_argument("--groups", type=int, default=None, help="also: this many groups on the dead node")
    p.add_argument("--fsync", default="never", help="the nodes' fsync policy")
    p.add_argument("--peer", choices=["mock", "kafka"],
                   help="also measure librdkafka's mock cluster, or a 3-broker Apache Kafka 4.4 cluster")
    p.add_argument("--rate", type=int, default=DEFAULT_RATE,
                   help="records/s the producer offers (default 2,000; lower it where the machine cannot "
                        "keep up with the members: each run says when the producer was behind)")
    p.add_argument("--sequential", action="store_true",
                   help="with --peer kafka: measure one cluster at a time instead of both at once, interleaved")
    args = p.parse_args()
    rate = args.rate
    runs = args.runs or (3 if args.quick else 10)
    sizes = [10] if args.quick and args.members == "10,100" else [int(x) for x in args.members.split(",")]
    groups = args.groups if args.groups is not None else (0 if args.quick else 10_000)
    peer = args.peer
    rows = []
    for n in sizes:
        print(f"one group of {n} members, {runs} runs", flush=True)
        makers = [lambda: KgroupSide(n, 0, args.fsync, rate)]
        if peer == "kafka":
            makers.append(lambda: KafkaSide(n, rate))
        ours, *rest = run_sides(makers, runs, args.sequential)
        other = rest[0] if rest else run_mock(n, runs, rate) if peer == "mock" else {}
        rows += [(f"{n} members: takeover s (kill -9 -> node 1's partitions all served elsewhere"
                  + ("; Kafka: -> FindCoordinator names another broker" if peer == "kafka" else "") + ")",
                  {"ours": ours["takeover s"], peer: other.get("takeover s")}),
                 (f"{n} members: failover s (kill -9 -> every partition consumed)",
                  {"ours": ours["failover s"], peer: other.get("failover s")}),
                 (f"{n} members: hand-back s (restart -> back and consumed)", {"ours": ours["hand-back s"]}),
                 (f"{n} members: rebalance callbacks", {"ours": ours["rebalances"], peer: other.get("rebalances")})]
        rows.append((f"{n} members: the producer's slowest acknowledgement in the 2 s before a kill, s "
                     f"(the worst run; above {BACKLOG_WARN_S} s the machine was not keeping up)",
                     {"ours": ours["ack lag s"], peer: other.get("ack lag s")}))
        if peer == "kafka":
            rows.append((f"{n} members: Kafka restart -> every replica in sync and consumed s",
                         {"kafka": other.get("rejoin s")}))
    if groups:
        print(f"one group of 10 members with {groups:,} other groups on the dead node, {runs} runs", flush=True)
        ours = run_kgroup(10, runs, groups, args.fsync, rate)
        rows += [(f"{groups:,} groups: takeover s", {"ours": ours["takeover s"]}),
                 (f"{groups:,} groups: failover s", {"ours": ours["failover s"]}),
                 (f"{groups:,} groups: hand-back s", {"ours": ours["hand-back s"]}),
                 (f"{groups:,} groups: records loaded per takeover", {"ours": ours["records loaded per takeover"]}),
                 (f"{groups:,} groups: load records/s", {"ours": ours["load records/s"]})]
    print_table(f"Failover of a 3-node kgroup cluster (fsync {args.fsync}, {rate:,} records/s"
                f"{', one cluster at a time' if args.sequential else ''}), medians of {runs} runs"
                f" (load average {peers.load_average()})",
                rows, ["ours", peer] if peer else ["ours"], higher_is_better=False)


if __name__ == "__main__":
    main()
