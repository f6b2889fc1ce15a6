"""A share group (KIP-932) whose partitions are led by other nodes than its coordinator
(issue 32 item 3): each leader serves ShareFetch/ShareAcknowledge and keeps its share
partitions in memory, their state persisted at the group's share coordinator on node 0 with
Read/Initialize/WriteShareGroupState sent node to node. A leader killed with `kill -9`
hands its partition to a node that reads that state: what was accepted is never delivered
again, what was only acquired is delivered again."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import ClusterProcess, coordinator_of, group_coordinated_by
from tests.integration.share_clients import (SHARE_SETTINGS, KgroupCluster, ShareProc, delivered_after_accept, produce,
                                             settle)

pytestmark = pytest.mark.integration

PER_PARTITION = 100


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p: m.leader for p, m in meta.topics[topic].partitions.items()}


def _produce_to(bootstrap: str, topic: str, partition: int, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(count):
        producer.produce(topic, value=f"late-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0


def test_kip932_share_partitions_led_by_other_nodes_persist_at_the_coordinator(tmp_path) -> None:
    cluster = ClusterProcess(tmp_path, extra={"node_timeout_ms": 3000},
                             group={**SHARE_SETTINGS, "initial_rebalance_delay_ms": 300}).start()
    group = group_coordinated_by(0, "spread")
    procs: list[ShareProc] = []
    try:
        create_topic(cluster.bootstrap, "spread", 3)
        assert coordinator_of(cluster.bootstrap, group) == 0
        assert set(_leaders(cluster.bootstrap, "spread").values()) == {0, 1, 2}
        produce(cluster.bootstrap, "spread", 3 * PER_PARTITION, 3)
        first = ShareProc("confluent", cluster.bootstrap, group, "spread", "explicit", "accept").wait_ready()
        procs.append(first)
        everything = {(p, o) for p in range(3) for o in range(PER_PARTITION)}
        wait_for(lambda: first.done() >= everything, 60, what="every record accepted, from all three leaders")
        # The state the leaders wrote at node 0 answers DescribeShareGroupOffsets, asked
        # through any node (lag 0; the start offset trails one change, as in Kafka 4.4).
        starts = []
        for node in cluster.nodes:
            view = KgroupCluster(node)
            wait_for(lambda: view.lags(group) == {("spread", p): 0 for p in range(3)}, 15,
                     what=f"lag 0 on every partition through node {node.node_id}")
            starts.append(view.start_offsets(group))
        assert starts[0] == starts[1] == starts[2] and set(starts[0]) == {("spread", p) for p in range(3)}
        first.stop()
        # Node 1's partition: records acquired by a member that never acknowledges them ...
        leader = _leaders(cluster.bootstrap, "spread")[1]
        assert leader == 1
        _produce_to(cluster.bootstrap, "spread", 1, 10)
        holder = ShareProc("confluent", cluster.bootstrap, group, "spread", "explicit", "hold").wait_ready()
        procs.append(holder)
        wait_for(lambda: holder.of("holding"), 60, what="records acquired and held")
        held = set(holder.offsets())
        assert held and all(p == 1 and o >= PER_PARTITION for p, o in held), held
        # ... and the leader is killed: another node takes partition 1 over, reads its state
        # from node 0, and hands the held records out again; the accepted ones never.
        cluster.nodes[1].kill9()
        holder.kill()
        live = cluster.live_bootstrap()
        wait_for(lambda: _leaders(live, "spread")[1] in (0, 2), 30, what="partition 1 taken over")
        second = ShareProc("confluent", live, group, "spread", "explicit", "accept").wait_ready()
        procs.append(second)
        late = {(1, PER_PARTITION + i) for i in range(10)}
        wait_for(lambda: second.done() >= late, 60, what="the held records delivered again and accepted")
        assert set(second.offsets()) == late, "an accepted record was delivered again"
    finally:
        for proc in procs:
            proc.kill()
        cluster.finish()
    assert not delivered_after_accept(first)
    for node in cluster.nodes:
        assert "Traceback" not in node.log()


def _set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)


def _missing(missing: set[tuple[int, int]], procs: list[ShareProc]) -> str:
    """What a failure needs to say of the records never accepted: per partition how many,
    their offsets, and what the consumers saw of them (deliveries with their counts,
    acknowledgements sent but not confirmed)."""
    by_partition: dict[int, list[int]] = {}
    for p, o in sorted(missing):
        by_partition.setdefault(p, []).append(o)
    seen = {}
    for i, proc in enumerate(procs):
        for e in proc.records():
            if (e["p"], e["o"]) in missing:
                seen.setdefault((e["p"], e["o"]), []).append((i, e["count"], round(e["t"], 2)))
    unconfirmed = set().union(*(p.unconfirmed() for p in procs)) & missing
    return (f"{len(missing)} never accepted: "
            + "; ".join(f"partition {p}: {len(os)} from {os[0]} to {os[-1]}" for p, os in by_partition.items())
            + f"; delivered: {dict(list(seen.items())[:10])}; {len(seen)} of them delivered at all"
            + f"; acknowledged without confirmation: {sorted(unconfirmed)[:10]}")


class _Feed:
    """A producer thread spreading records over the topic's partitions until stopped, so the
    share consumers are mid-consumption when a node is killed; what it got acknowledged is
    `sent` ((partition, offset) pairs)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        import threading

        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.sent: set[tuple[int, int]] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.sent.add((msg.partition(), msg.offset()))
        else:
            self.errors.append(str(err))

    def _run(self) -> None:
        from confluent_kafka import Producer

        from tests.integration.waits import pace

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                             "linger.ms": 5})
        i = 0
        while not self._stop.is_set():
            for _ in range(self.partitions * 5):
                producer.produce(self.topic, value=f"feed-{i}".encode(), partition=i % self.partitions,
                                 on_delivery=self._on_delivery)
                i += 1
            producer.poll(0)
            pace(0.1)
        assert producer.flush(60) == 0

    def start(self) -> "_Feed":
        self._thread.start()
        return self

    def stop(self) -> set[tuple[int, int]]:
        self._stop.set()
        self._thread.join(90)
        return self.sent


def test_kip932_three_share_consumers_over_six_partitions_survive_kill_9_of_a_leader_and_the_coordinator(
        tmp_path) -> None:
    """Issue 32's acceptance: 3 ShareConsumers over 6 partitions led by the 3 nodes, the group
    coordinated by node 0. kill -9 of node 1 (a leader, not the coordinator) and, once it is
    back, of node 0 (the share coordinator, which leads two partitions too), both while the
    consumers consume a steady feed. Every record is accepted exactly once (lag 0 at the
    end), a record whose acknowledgement the broker confirmed is never delivered again, and
    the records in flight are delivered again with their delivery counts kept."""
    # The group's own lock (a dynamic group config at its coordinator, node 0), shorter than
    # the brokers' (SHARE_SETTINGS): the leaders on nodes 1 and 2 ask node 0 for it.
    lock_ms = 2000
    assert SHARE_SETTINGS["share_record_lock_duration_ms"] > lock_ms + 2000
    cluster = ClusterProcess(tmp_path, extra={"node_timeout_ms": 3000},
                             group={**SHARE_SETTINGS, "share_delivery_count_limit": 10,
                                    "initial_rebalance_delay_ms": 300}).start()
    topic, partitions = "chaos", 6
    group = group_coordinated_by(0, "chaos")
    procs: list[ShareProc] = []
    feed = None
    try:
        create_topic(cluster.bootstrap, topic, partitions)
        assert coordinator_of(cluster.bootstrap, group) == 0
        _set_group_config(cluster.bootstrap, group, "share.record.lock.duration.ms", str(lock_ms))
        leaders = _leaders(cluster.bootstrap, topic)
        assert sorted(leaders.values()) == [0, 0, 1, 1, 2, 2], leaders
        feed = _Feed(cluster.bootstrap, topic, partitions).start()
        procs.extend(ShareProc("confluent", cluster.bootstrap, group, topic, "explicit", "slow").wait_ready()
                     for _ in range(3))

        def accepted() -> set[tuple[int, int]]:
            return set().union(*(p.done() for p in procs))

        def settled() -> set[tuple[int, int]]:
            # An ACCEPT the broker made durable just before a kill -9 is never confirmed (the
            # answer died with the node) and, rightly, never delivered again: it counts as
            # accepted here, and the lag-0 check below holds the broker to having taken it.
            return accepted() | set().union(*(p.unconfirmed() for p in procs))

        def consuming(at_least: int) -> bool:
            return len(accepted()) >= at_least and all(p.done() for p in procs)

        wait_for(lambda: consuming(300), 60, what="all three consumers accepting records")
        # A consumer frozen (SIGSTOP) with records in hand past their lock: the leader hands
        # them out again (their delivery ended, so it counts).
        frozen = procs[0]
        seen = len(frozen.of("holding"))
        wait_for(lambda: len(frozen.of("holding")) > seen, 30, 0.01, what="the consumer holding records")
        frozen.signal(signal.SIGSTOP)
        stuck = {(e["p"], e["o"]) for e in frozen.records() if e["t"] >= frozen.of("holding")[-1]["t"] - 0.2}
        stuck -= frozen.done() | frozen.unconfirmed()
        settle(lock_ms / 1000 + 1)
        frozen.signal(signal.SIGCONT)
        assert stuck
        for victim in (cluster.nodes[1], cluster.nodes[0]):
            led = {p for p, n in _leaders(cluster.bootstrap, topic).items() if n == victim.node_id}
            before = len(accepted())
            victim.kill9()
            live = cluster.live_bootstrap()
            wait_for(lambda: all(_leaders(live, topic)[p] != victim.node_id for p in led), 30,
                     what=f"node {victim.node_id}'s partitions taken over")
            wait_for(lambda: len(accepted()) >= before + 300, 60,
                     what=f"consumption going on after node {victim.node_id} was killed")
            victim.start()
        sent = feed.stop()
        assert not feed.errors, feed.errors[:5]
        try:
            wait_for(lambda: settled() >= sent, 90, what="every record produced accepted")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {_missing(sent - settled(), procs)}") from None
        view = KgroupCluster(cluster.nodes[2])
        wait_for(lambda: view.lags(group) == {(topic, p): 0 for p in range(partitions)}, 30,
                 what="lag 0 on every share partition")
    finally:
        if feed is not None:
            feed._stop.set()
        for proc in procs:
            proc.kill()
        cluster.finish()
    # Exactly once: each record's ACCEPT confirmed by the broker once, across the consumers.
    confirmed = Counter((e["p"], o) for proc in procs for e in proc.of("done") if e["type"] == "accept"
                        for o in e["offsets"])
    assert [r for r, n in confirmed.items() if n > 1] == []
    # Never delivered again once its ACCEPT was confirmed, by any consumer.
    accepted_at = {(e["p"], o): e["t"] for proc in procs for e in proc.of("done") if e["type"] == "accept"
                   for o in e["offsets"]}
    deliveries = sorted((e["t"], (e["p"], e["o"]), e["count"]) for proc in procs for e in proc.records())
    # Every record accepted: confirmed, or its ACCEPT failed at a kill and the broker took it
    # (never delivered again after the failure); one it did not take came back and was
    # confirmed then.
    failed_at = {(e["p"], o): e["t"] for proc in procs for e in proc.of("failed") if e["type"] == "accept"
                 for o in e["offsets"]}
    came_back = {r for t, r, _ in deliveries if r in failed_at and t > failed_at[r]}
    taken_unconfirmed = set(failed_at) - came_back - set(confirmed)
    assert set(confirmed) | taken_unconfirmed == sent, _missing(sent - set(confirmed) - taken_unconfirmed, procs)
    # A record taken unconfirmed has no confirmed ACCEPT: its bound is the failed one's time.
    accepted_at = {**{r: failed_at[r] for r in taken_unconfirmed}, **accepted_at}
    assert [(r, t) for t, r, _ in deliveries if t > accepted_at[r]] == []
    # Records in flight at a kill (their acknowledgement failed, or their leader died with them
    # acquired) came back; a delivery that ended (a lock that ran out, a failed
    # acknowledgement at a live leader) counts, so counts never go down.
    counts: dict[tuple[int, int], list[int]] = {}
    for _, record, count in deliveries:
        counts.setdefault(record, []).append(count)
    again = {r: c for r, c in counts.items() if len(c) > 1}
    assert again, "no record was in flight at either kill"
    # The frozen consumer's records came back after their lock ran out, counted twice.
    assert all(r in again and again[r][-1] >= 2 for r in stuck), {r: counts[r] for r in stuck}
    assert all(c == sorted(c) for c in again.values()), {r: c for r, c in again.items() if c != sorted(c)}
    assert any(c[-1] >= 2 for c in again.values()), again
    for node in cluster.nodes:
        assert "Traceback" not in node.log()
