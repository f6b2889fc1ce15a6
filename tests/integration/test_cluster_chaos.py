"""Twenty random kill -9 / restart cycles over a 3-node cluster under load.

A producer at acks=all and two groups of two members each (confluent-kafka cooperative-
sticky, kafka-python) run while a seeded random schedule kills a node and restarts it,
sometimes before the previous restart has settled (so a node can die while it takes units
over or hands them back, and two can be down at once). Checked afterwards: nothing
acknowledged is lost (records at their offsets, commits), no node ever answered that it led
a partition another node owned from before the question to after the answer (by the epoch
table), and no group ever had a partition owned by both its members at once (by the
members' own callbacks).
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import threading
import time

import pytest

from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import ClusterProcess, coordinator_of
from tests.integration.cluster_workload import AckedProducer, MemberProcess, missing_acknowledged, read_topic
from tests.integration.test_cluster_failover import _committed
from tests.integration.waits import pace

pytestmark = pytest.mark.integration

TOPIC = "chaos"
PARTITIONS = 6
CYCLES = 20
GROUPS = {"chaos-coop": "confluent-cooperative", "chaos-kp": "kafka-python"}


def _metadata_leaders(port: int) -> dict[int, int] | None:
    """Partition -> leader as one node answers Metadata v1 (None if it does not answer)."""
    from kgroup.wire import decode_response, encode_request, request_class
    from kgroup.wire.kio_build import build, item

    cls = request_class(3, 1)
    request = build(cls, topics=(build(item(cls, "topics"), name=TOPIC),))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(encode_request(3, 1, 7, "sampler", request))
            size = struct.unpack(">i", _recv(s, 4))[0]
            _, response = decode_response(3, 1, _recv(s, size))
    except (OSError, ValueError):
        return None
    return {int(p.partition_index): int(p.leader_id) for t in response.topics for p in t.partitions}


def _recv(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


class LeaderSampler(threading.Thread):
    """Asks every node, again and again, which partitions it leads, and reads the cluster's
    epoch table (the truth of who owns what) just before and just after each answer. A node
    that says it leads a partition that another node owned both before it was asked and
    after it answered has answered for a partition it did not own: two owners at once."""

    def __init__(self, cluster: ClusterProcess) -> None:
        super().__init__(daemon=True, name="leader-sampler")
        self.cluster = cluster
        self.answers = 0
        self.double: list[tuple[int, int, int]] = []       # (partition, claimed by, owned by)
        self._stop_event = threading.Event()

    def run(self) -> None:
        from kgroup.storage.epoch_table import EpochTable

        table = EpochTable(self.cluster.data_dir / "cluster" / "epochs", 3)
        slots = json.loads((self.cluster.data_dir / "topics.json").read_text())["topics"][TOPIC]["slots"]

        def owners() -> dict[int, int]:
            return {p: table.current(slot)[1] for p, slot in enumerate(slots)}   # node index = id here

        try:
            while not self._stop_event.is_set():
                for node in self.cluster.nodes:
                    if not node.alive():
                        continue
                    before = owners()
                    leaders = _metadata_leaders(node.port)
                    after = owners()
                    for p, leader in (leaders or {}).items():
                        if leader == node.node_id and before[p] != leader and after[p] != leader:
                            self.double.append((p, leader, after[p]))
                    self.answers += leaders is not None
                pace(0.05)
        finally:
            table.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


def _owned_twice(members: list[MemberProcess]) -> list:
    """Moments at which two members of one group both owned a partition, by their callbacks."""
    timeline = sorted(((e["t"], m.name, e["e"], set(e["p"])) for m in members
                       for e in m.of("assigned", "revoked", "lost")), key=lambda x: x[0])
    owned: dict[str, set[int]] = {m.name: set() for m in members}
    found = []
    for t, name, kind, parts in timeline:
        owned[name] = owned[name] | parts if kind == "assigned" else owned[name] - parts
        names = list(owned)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if owned[a] & owned[b]:
                    found.append((t, a, b, owned[a] & owned[b]))
    return found


def _converged(cluster: ClusterProcess, groups) -> bool:
    """Every node up, every partition led by its preferred node, every group's coordinator
    its preferred node."""
    if not all(n.alive() for n in cluster.nodes):
        return False
    leaders = _metadata_leaders(cluster.nodes[0].port) or {}
    if leaders != {p: p % 3 for p in range(PARTITIONS)}:
        return False
    return all(coordinator_of(cluster.bootstrap, g) is not None for g in groups)


def test_twenty_random_kill_9_restart_cycles_lose_nothing_and_never_double_own(tmp_path) -> None:
    fsync = os.environ.get("KGROUP_TEST_FSYNC", "always")
    seed = int(os.environ.get("KGROUP_CHAOS_SEED", time.time()))
    print(f"chaos seed {seed} (KGROUP_CHAOS_SEED={seed} repeats this schedule), fsync {fsync}")
    rng = random.Random(seed)
    cluster = ClusterProcess(tmp_path, extra={"node_timeout_ms": 2000, "fsync": fsync},
                             group={"initial_rebalance_delay_ms": 300}).start()
    producer = AckedProducer(cluster.bootstrap, TOPIC, PARTITIONS, per_second=150)
    sampler = LeaderSampler(cluster)
    members: list[MemberProcess] = []
    try:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        producer.start()
        for group, kind in GROUPS.items():
            members += [MemberProcess(kind, cluster.bootstrap, group, TOPIC, f"{group}-{i}") for i in (0, 1)]
        for group in GROUPS:
            mine = [m for m in members if m.group == group]
            wait_for(lambda mine=mine: set().union(*(m.owned() for m in mine)) == set(range(PARTITIONS)), 60,
                     what=f"{group} owning every partition")
        sampler.start()

        for cycle in range(CYCLES):
            victim = cluster.nodes[rng.randrange(3)]
            if victim.alive():
                victim.kill9()
            pace(rng.uniform(0.3, 2.0))
            victim.start()
            pace(rng.uniform(0.2, 2.5))
        wait_for(lambda: _converged(cluster, GROUPS), 60, what="the cluster settling after the last cycle")
        settled = time.time()
        for m in members:
            try:
                wait_for(lambda m=m: m.of("committed", after=settled), 60, what=f"{m.name} committing after the chaos")
            except AssertionError as exc:
                # What the member last did and printed: the client's side of the story.
                raise AssertionError(f"{exc}; {m.describe()}") from None
    finally:
        sampler.stop()
        producer.stop()
        for m in members:
            m.close()
        healthy = all(n.alive() for n in cluster.nodes)
        kept = read_topic(cluster.bootstrap, TOPIC, PARTITIONS) if healthy else {}
        committed = {g: _committed(cluster.bootstrap, g) for g in GROUPS} if healthy else {}
        cluster.finish()

    assert sampler.answers > 300 and not sampler.double, sampler.double[:5]
    assert not missing_acknowledged(producer, kept), missing_acknowledged(producer, kept)[:5]
    for p, records in kept.items():
        assert sorted(records) == list(range(len(records))), f"partition {p} has gaps or repeats"
    for group in GROUPS:
        mine = [m for m in members if m.group == group]
        assert not _owned_twice(mine), _owned_twice(mine)[:3]
        for m in mine:
            assert not m.errors(), m.describe()
            # Every commit a member saw acknowledged is still there (or overtaken).
            acked = m.last_commit(float("inf"))
            assert all(committed[group].get(p, -1) >= o for p, o in acked.items()), (m.name, acked, committed)
