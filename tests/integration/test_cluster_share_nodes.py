"""A share group (KIP-932) whose partitions are led by other nodes than its coordinator
(issue 32 item 3): each leader serves ShareFetch/ShareAcknowledge and keeps its share
partitions in memory, their state persisted at the group's share coordinator on node 0 with
Read/Initialize/WriteShareGroupState sent node to node. A leader killed with `kill -9`
hands its partition to a node that reads that state: what was accepted is never delivered
again, what was only acquired is delivered again."""

from __future__ import annotations

import pytest

from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import ClusterProcess, coordinator_of, group_coordinated_by
from tests.integration.share_clients import SHARE_SETTINGS, KgroupCluster, ShareProc, delivered_after_accept, produce

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
