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


# ---- partition moves and preferred leaders (admin/reassignments_api.py) ----------------------

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"


def _ask(port: int, req):
    """One kio request to one node; the decoded response."""
    import socket
    import struct

    from kgroup.wire import decode_response, encode_request

    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(encode_request(int(req.__api_key__), int(req.__version__), 1, "moves", req))
        head = s.recv(4, socket.MSG_WAITALL)
        body = s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
    return decode_response(int(req.__api_key__), int(req.__version__), body)[1]


def _leaders(cluster, topic: str) -> list[dict[int, tuple[int, int, int]]]:
    """Per node: partition -> (Metadata's leader, its epoch, DescribeTopicPartitions' epoch)."""
    from kgroup.conformance.messages import request

    seen = []
    for node in cluster.nodes:
        md = _ask(node.port, request("Metadata", 12, topics=[{"name": topic, "topic_id": None}],
                                     allow_auto_topic_creation=False, include_topic_authorized_operations=False))
        dtp = _ask(node.port, request("DescribeTopicPartitions", 0, topics=[{"name": topic}],
                                      response_partition_limit=100, cursor=None))
        epochs = {int(p.partition_index): int(p.leader_epoch) for t in dtp.topics for p in t.partitions}
        seen.append({int(p.partition_index): (int(p.leader_id), int(p.leader_epoch), epochs[int(p.partition_index)])
                     for t in md.topics for p in t.partitions})
    return seen


def test_kafka_tools_move_a_partition_and_elect_its_preferred_leader_while_a_consumer_reads(cluster, tmp_path):
    """kafka-reassign-partitions (generate, execute, verify) moves moves-0 from node 0 to
    node 1 and kafka-leader-election --election-type preferred moves it back, each a clean
    hand-over (the leader epoch +1, seen on every node); a consumer reading all along gets
    every record produced before, during and after."""
    import itertools
    import threading
    import time

    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from kgroup.testing.reference import require_reference

    require_reference()
    topic = "moves"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    wait_for(lambda: all(len(v) == 3 for v in _leaders(cluster, topic)), 15, what="the topic on every node")
    before = _leaders(cluster, topic)
    assert before[0][0][0] == 0 and all(view == before[0] for view in before)

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    delivered: list[bytes] = []
    received: list[bytes] = []
    stop = threading.Event()
    numbers = itertools.count()

    def produce(n: int) -> None:
        for _ in range(n):
            producer.produce(topic, str(next(numbers)).encode(), partition=0,
                             on_delivery=lambda err, msg: err is None and delivered.append(msg.value()))
            producer.poll(0)
        producer.flush(30)

    def consume() -> None:
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "moves-reader",
                             "auto.offset.reset": "earliest", "enable.partition.eof": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = None
        try:
            # Reads until told to stop and every delivered record is in (30 s at most after).
            while not (stop.is_set() and len(received) >= len(delivered)):
                if stop.is_set():
                    deadline = deadline or time.monotonic() + 30
                    if time.monotonic() > deadline:
                        break
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    received.append(msg.value())
        finally:
            consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    try:
        _move_and_elect_back(cluster, topic, tmp_path, before, produce)
        produce(100)
    finally:
        stop.set()
        reader.join(60)
    assert len(delivered) == 300
    assert sorted(received) == sorted(delivered)


def _move_and_elect_back(cluster, topic: str, tmp_path, before, produce) -> None:
    import json

    from kgroup.testing.reference import run_java

    epoch = before[0][0][1]
    produce(100)

    # kafka-reassign-partitions: generate proposes, execute moves, verify waits until done.
    topics_json = tmp_path / "topics.json"
    topics_json.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generated = run_java(REASSIGN, "--bootstrap-server", cluster.bootstrap, "--generate",
                         "--topics-to-move-json-file", str(topics_json), "--broker-list", "0,1,2")
    assert generated.returncode == 0, generated.stderr
    assert "Current partition replica assignment" in generated.stdout
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [1]}]}))
    executed = run_java(REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute",
                        "--reassignment-json-file", str(plan))
    assert executed.returncode == 0, executed.stdout + executed.stderr
    assert "Successfully started partition reassignment for moves-0" in executed.stdout
    produce(100)

    def verified() -> bool:
        out = run_java(REASSIGN, "--bootstrap-server", cluster.bootstrap, "--verify",
                       "--reassignment-json-file", str(plan))
        assert out.returncode == 0, out.stdout + out.stderr
        return "Reassignment of partition moves-0 is completed." in out.stdout

    wait_for(verified, 30, what="kafka-reassign-partitions --verify to say it is done")
    moved = _leaders(cluster, topic)
    assert all(view[0] == (1, epoch + 1, epoch + 1) for view in moved), moved
    assert all(view[1] == before[0][1] and view[2] == before[0][2] for view in moved)

    # kafka-leader-election: back to the preferred node 0.
    elected = run_java(ELECT, "--bootstrap-server", cluster.bootstrap, "--election-type", "preferred",
                       "--topic", topic, "--partition", "0")
    assert elected.returncode == 0, elected.stdout + elected.stderr
    assert "Successfully completed leader election (PREFERRED) for partitions moves-0" in elected.stdout
    back = _leaders(cluster, topic)
    assert all(view[0] == (0, epoch + 2, epoch + 2) for view in back), back


def test_kgroup_topics_reassign_and_elect_leaders(cluster, tmp_path, capsys):
    """`kgroup topics reassign` (execute, verify, list, and the errors) moves moves-cli-1 from
    its preferred node 1 to node 2; `kgroup topics elect-leaders --all-topic-partitions`
    moves it back."""
    import json

    from confluent_kafka.admin import AdminClient, NewTopic

    from kgroup.cli.main import main

    topic = "moves-cli"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    wait_for(lambda: all(len(v) == 2 for v in _leaders(cluster, topic)), 15, what="the topic on every node")
    epoch = _leaders(cluster, topic)[0][1][1]

    def kgroup(*args: str) -> tuple[int, str, str]:
        status = main([*args, "--bootstrap-server", cluster.bootstrap, "--request-timeout-ms", "10000"])
        out, err = capsys.readouterr()
        return status, out, err

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 1, "replicas": [2]}]}))
    assert kgroup("topics", "reassign", "--execute", "--reassignment-json-file", str(plan)) == (
        0, f"Successfully started partition reassignment for {topic}-1\n", "")

    def done() -> bool:
        status, out, _ = kgroup("topics", "reassign", "--verify", "--reassignment-json-file", str(plan),
                                "--format", "json")
        return status == 0 and json.loads(out)["partitions"][0]["state"] == "completed"

    wait_for(done, 30, what="the move to node 2")
    assert all(view[1][:2] == (2, epoch + 1) for view in _leaders(cluster, topic))
    assert kgroup("topics", "reassign", "--list")[:2] == (0, "No partition reassignments found.\n")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": [7]}]}))
    status, _, err = kgroup("topics", "reassign", "--execute", "--reassignment-json-file", str(bad))
    assert status == 1 and "INVALID_REPLICA_ASSIGNMENT" in err and "broker 7" in err and "\n" == err[-1]
    status, out, _ = kgroup("topics", "elect-leaders", "--election-type", "preferred", "--all-topic-partitions")
    assert status == 0 and f"Successfully completed leader election (PREFERRED) for partitions {topic}-1" in out
    assert all(view[1][:2] == (1, epoch + 2) for view in _leaders(cluster, topic))
    status, out, _ = kgroup("topics", "elect-leaders", "--election-type", "preferred", "--topic", topic,
                            "--partition", "1")
    assert (status, out) == (0, f"Valid replica already elected for partitions {topic}-1\n")
