"""Admin of a 3-node cluster through Kafka clients: replication factors up to the number of
nodes (replicas reported, the live ones in sync), and dynamic broker configs changed on one
node, seen on every node and kept across restarts."""

from __future__ import annotations

import pytest

from tests.integration.clients import wait_for
from tests.integration.cluster_process import ClusterProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ClusterProcess(tmp_path_factory.mktemp("cluster-admin"), extra={"node_timeout_ms": 3000}).start()
    yield c
    c.finish()


def _replicas(bootstrap: str, topic: str) -> dict[int, tuple[list[int], list[int]]]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p.id: (sorted(p.replicas), sorted(p.isrs)) for p in md.topics[topic].partitions.values()}


def test_replication_factor_up_to_the_cluster_size_is_created_and_reported(cluster):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    created = admin.create_topics([NewTopic("rf-three", 3, 3), NewTopic("rf-default", 2, -1)],
                                  operation_timeout=30)
    for future in created.values():
        future.result(30)
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic("rf-four", 1, 4)])["rf-four"].result(30)
    assert refused.value.args[0].name() == "INVALID_REPLICATION_FACTOR"
    assert "only 3 broker(s) are registered" in refused.value.args[0].str()
    for node in cluster.nodes:
        assert _replicas(node.bootstrap, "rf-three") == {p: ([0, 1, 2], [0, 1, 2]) for p in range(3)}
        assert _replicas(node.bootstrap, "rf-default") == {0: ([0], [0]), 1: ([1], [1])}
    # New partitions keep the topic's factor; an assignment of another factor is refused.
    admin.create_partitions([NewPartitions("rf-three", 4, [[2, 0, 1]])])["rf-three"].result(30)
    with pytest.raises(KafkaException) as uneven:
        admin.create_partitions([NewPartitions("rf-three", 5, [[0]])])["rf-three"].result(30)
    assert uneven.value.args[0].name() == "INVALID_REPLICA_ASSIGNMENT"
    assert _replicas(cluster.bootstrap, "rf-three")[3] == ([0, 1, 2], [0, 1, 2])
    # A node that is down stays a replica, out of sync, until it is back.
    node = cluster.nodes[2]
    node.kill9()
    try:
        live = cluster.nodes[0].bootstrap
        wait_for(lambda: all(isr == [0, 1] for _, isr in _replicas(live, "rf-three").values()), 30,
                 what="node 2 out of the in-sync replicas")
        assert all(replicas == [0, 1, 2] for replicas, _ in _replicas(live, "rf-three").values())
    finally:
        node.start()
    wait_for(lambda: all(isr == [0, 1, 2] for _, isr in _replicas(cluster.bootstrap, "rf-three").values()), 30,
             what="node 2 back in sync")
