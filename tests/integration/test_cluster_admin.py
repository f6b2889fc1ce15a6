"""Admin of a 3-node cluster through Kafka clients: replication factors up to the number of
nodes (replicas reported, the live ones in sync), and dynamic broker configs changed on one
node, seen on every node and kept across restarts."""

from __future__ import annotations

import asyncio

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


def _describe(bootstrap: str, resource: str) -> dict:
    """DescribeConfigs of a BROKER resource by kgroup's admin client (sent to that node, or
    anywhere for the cluster default ""): name -> (value, source, read-only)."""
    from kgroup.client.admin import BROKER_RESOURCE, AdminClient

    async def go() -> dict:
        async with AdminClient(bootstrap) as admin:
            return {e.name: (e.value, e.source, e.read_only)
                    for e in await admin.describe_configs(BROKER_RESOURCE, resource)}

    return asyncio.run(go())


def _alter(bootstrap: str, resource: str, changes: list) -> None:
    from kgroup.client.admin import BROKER_RESOURCE, AdminClient

    async def go() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.alter_configs(BROKER_RESOURCE, resource, changes)

    asyncio.run(go())


def test_dynamic_broker_config_changed_on_one_node_is_seen_on_every_node_and_survives_a_restart(cluster):
    from confluent_kafka import Producer
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewTopic,
        ResourceType,
    )

    from kgroup.client.admin import CONFIG_DELETE, CONFIG_SET

    first = cluster.nodes[0].bootstrap
    # Through node 0: the cluster-wide default, and node 0's own value (confluent-kafka).
    _alter(first, "", [("message.max.bytes", CONFIG_SET, "20000"), ("log.retention.ms", CONFIG_SET, "3600000")])
    admin = AdminClient({"bootstrap.servers": first})
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
            ConfigEntry("log.retention.bytes", "1000000", incremental_operation=AlterConfigOpType.SET)])]).values():
        future.result(15)
    try:
        def seen() -> dict:
            return {n.node_id: {k: v for k, v in _describe(n.bootstrap, str(n.node_id)).items()
                                if k in ("message.max.bytes", "log.retention.ms", "log.retention.bytes")}
                    for n in cluster.nodes}

        expected = {i: {"message.max.bytes": ("20000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False),
                        "log.retention.ms": ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG", False),
                        "log.retention.bytes": ("-1", "DEFAULT_CONFIG", False)} for i in range(3)}
        expected[0]["log.retention.bytes"] = ("1000000", "DYNAMIC_BROKER_CONFIG", False)
        wait_for(lambda: seen() == expected, 10, what="every node to describe the new configs")
        for node in cluster.nodes:
            assert set(_describe(node.bootstrap, "")) == {"message.max.bytes", "log.retention.ms"}
        # In force on another node without a restart: node 2 refuses a batch over the new limit.
        admin.create_topics([NewTopic("dyn-limit", 3, 1)])["dyn-limit"].result(30)
        errors = []
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        producer.produce("dyn-limit", b"x" * 30_000, partition=2, on_delivery=lambda err, msg: errors.append(err))
        producer.flush(15)
        assert [e.name() for e in errors] == ["MSG_SIZE_TOO_LARGE"]
        # Kept in the data dir: node 0 (its own value and the default) and node 1 after a kill -9.
        for node in cluster.nodes[:2]:
            node.kill9()
            node.start()
        assert seen() == expected
    finally:
        _alter(first, "", [("message.max.bytes", CONFIG_DELETE, None), ("log.retention.ms", CONFIG_DELETE, None)])
        _alter(first, "0", [("log.retention.bytes", CONFIG_DELETE, None)])
