"""Transactions across the nodes of a kgroup cluster, with the Java 4.4 producer (issue 32).

One 3-node cluster for the module. The transactional ids hash to group-metadata partitions
node 0 prefers, so node 0 is their transaction coordinator; the topics' partitions are led
by nodes 0, 1 and 2 (partition p by node p mod 3); the consumer group's coordinator is
node 1. So every transaction needs WriteTxnMarkers from node 0 to nodes 1 and 2 (and to
node 1 for the group's offsets), and the Java producer's Produce v12 (transaction.version
2) on nodes 1 and 2 adds its partitions at node 0 with AddPartitionsToTxn v5; its
TxnOffsetCommit v5 on node 1 asks node 0 too.
"""

from __future__ import annotations

import pytest

from kgroup.testing import Cluster
from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item
from tests.integration.cluster_process import call, group_coordinated_by
from tests.interop.helpers import eventually, spread, values

pytestmark = pytest.mark.integration

NOT_LEADER_OR_FOLLOWER, TRANSACTION_COORDINATOR_FENCED = 6, 52


@pytest.fixture(scope="module")
def cluster():
    with Cluster(nodes=3, group={"initial_rebalance_delay_ms": 100}) as c:
        yield c


@pytest.fixture(scope="module")
def admin(java, cluster):
    java.call("admin.new", name="admin", config={"bootstrap.servers": cluster.bootstrap})
    java.call("producer.new", name="plain", config={"bootstrap.servers": cluster.bootstrap})
    return "admin"


def consumed(java, name: str) -> list[str]:
    return sorted(r[4] for r in java.records(name))


def read_committed(java, cluster, topic: str, name: str, count: int) -> list[str]:
    """What a read_committed consumer reads of `topic` (every partition, from each leader),
    once it reached the topic's last stable offsets."""
    java.consumer(name, {"bootstrap.servers": cluster.bootstrap, "group.id": name, "group.protocol": "classic",
                         "auto.offset.reset": "earliest", "enable.auto.commit": "false",
                         "isolation.level": "read_committed"}, topics=[topic])
    try:
        eventually(lambda: len(consumed(java, name)) >= count, what=f"{count} committed records of {topic}")
        ends = java.call("admin.listOffsets", name="admin", partitions=[[topic, p] for p in range(3)],
                         spec="latest", readCommitted=True)
        eventually(lambda: sorted(o for _, _, o in java.call("consumer.call", name=name, method="position") or [])
                   == sorted(v[0] for v in ends.values()), what="the reader is at the end")
        return consumed(java, name)
    finally:
        java.call("consumer.close", name=name, leave=True)


def test_java_eos_app_commits_and_aborts_across_three_nodes(java, cluster, admin):
    source, sink = "xn-source", "xn-sink"
    group, txn = group_coordinated_by(1, "xn-group"), group_coordinated_by(0, "xn-txn")
    for topic in (source, sink):
        assert java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 3}]) == {topic: None}
    java.call("producer.send", name="plain", records=spread(source, 30, 3))
    java.consumer("eos", {"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "classic",
                          "auto.offset.reset": "earliest", "enable.auto.commit": "false",
                          "isolation.level": "read_committed"},
                  topics=[source], transform={"output": sink, "config": {
                      "bootstrap.servers": cluster.bootstrap, "transactional.id": txn}})
    try:
        eventually(lambda: sum(e["count"] for e in java.of("eos", "transformed")) >= 30, what="30 transformed")
        assert java.of("eos", "aborted") == []
        eventually(lambda: {tp: v[0] for tp, v in java.call("admin.listConsumerGroupOffsets", name="admin",
                                                             group=group).items()}
                   == {f"{source}:{p}": 10 for p in range(3)}, what="the offsets committed in the transactions")
        eventually(lambda: java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]["state"]
                   == "CompleteCommit", what="the last transaction completed")
    finally:
        java.call("consumer.close", name="eos", leave=True)
    # An aborted transaction over the three leaders: never seen by read_committed readers.
    java.call("producer.new", name="aborter", config={"bootstrap.servers": cluster.bootstrap,
                                                      "transactional.id": group_coordinated_by(0, "xn-abort")})
    try:
        java.call("producer.initTransactions", name="aborter")
        java.call("producer.beginTransaction", name="aborter")
        java.call("producer.send", name="aborter", records=spread(sink, 6, 3, prefix="aborted-"))
        java.call("producer.abortTransaction", name="aborter")
    finally:
        java.call("producer.close", name="aborter")
    assert read_committed(java, cluster, sink, "xn-reader", 30) == sorted(v.upper() for v in values(30))


def test_tv1_librdkafka_producer_commits_offsets_and_records_across_three_nodes(java, cluster, admin):
    """transaction.version 1 (librdkafka adds its partitions and group itself): the leaders on
    nodes 1 and 2 verify the batches at node 0 (AddPartitionsToTxn v4 verify_only), the
    group's coordinator on node 1 verifies TxnOffsetCommit there too, and node 0's markers
    reach both."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group, txn = "x1-sink", group_coordinated_by(1, "x1-group"), group_coordinated_by(0, "x1-txn")
    assert java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 3}]) == {topic: None}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn})
    try:
        consumer.subscribe([topic])
        eventually(lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == 3, what="the assignment")
        producer.init_transactions(30)
        for commit in (True, False):
            producer.begin_transaction()
            for i in range(6):
                producer.produce(topic, value=f"{'c' if commit else 'a'}{i}".encode(), partition=i % 3)
            producer.send_offsets_to_transaction([TopicPartition(topic, p, 7 if commit else 9) for p in range(3)],
                                                 consumer.consumer_group_metadata(), 30)
            (producer.commit_transaction if commit else producer.abort_transaction)(30)
    finally:
        consumer.close()
    assert {tp: v[0] for tp, v in java.call("admin.listConsumerGroupOffsets", name="admin", group=group).items()} \
        == {f"{topic}:{p}": 7 for p in range(3)}
    assert read_committed(java, cluster, topic, "x1-reader", 6) == sorted(values(6, "c"))


def test_coordinator_killed_between_commit_and_markers_loses_nothing(java, cluster, admin):
    """kill -9 of the transaction coordinator (node 0) with one transaction between its commit
    and its markers and another still open: the node that takes the transactional ids over
    writes the first's commit markers and aborts the second at its timeout."""
    topic, txn, open_txn = "xk-sink", group_coordinated_by(0, "xk-txn"), group_coordinated_by(0, "xk-open")
    assert java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 3}]) == {topic: None}
    java.call("producer.new", name="open", config={"bootstrap.servers": cluster.bootstrap, "transactional.id": open_txn,
                                                   "transaction.timeout.ms": "3000"})
    java.call("producer.initTransactions", name="open")
    java.call("producer.beginTransaction", name="open")
    java.call("producer.send", name="open", records=spread(topic, 6, 3, prefix="open-"))
    java.call("producer.new", name="killed", config={"bootstrap.servers": cluster.bootstrap, "transactional.id": txn})
    try:
        java.call("producer.initTransactions", name="killed")
        java.call("producer.beginTransaction", name="killed")
        java.call("producer.send", name="killed", records=spread(topic, 6, 3, prefix="aborted-"))
        java.call("producer.abortTransaction", name="killed")
        # Nodes 1 and 2 refuse the next markers (a fault on every node): the commit stays
        # PrepareCommit on node 0 until node 0 dies and another node takes the id over.
        cluster.node_control(1).add_fault("WriteTxnMarkers", "NOT_LEADER_OR_FOLLOWER", topic=topic, count=100_000)
        java.call("producer.beginTransaction", name="killed")
        java.call("producer.send", name="killed", records=spread(topic, 6, 3, prefix="committed-"))
        java.call("producer.commitTransaction", name="killed")
        assert java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]["state"] == "PrepareCommit"
    finally:
        java.call("producer.close", name="killed")
    cluster.kill_node(0)
    cluster.node_control(1).clear_faults()
    eventually(lambda: java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]["state"]
               == "CompleteCommit", what="the new coordinator wrote the markers")
    eventually(lambda: java.call("admin.describeTransactions", name="admin", ids=[open_txn])[open_txn]["state"]
               == "CompleteAbort", what="the new coordinator aborted the open transaction at its timeout")
    java.call("producer.close", name="open")
    assert read_committed(java, cluster, topic, "xk-reader", 6) == sorted(values(6, "committed-"))

    # WriteTxnMarkers as a fenced coordinator (node 0's old epoch) sends it: refused by the
    # leader, which took the new coordinator's marker; sent to a node that does not lead the
    # partition: NOT_LEADER_OR_FOLLOWER.
    described = java.call("admin.describeTransactions", name="admin", ids=[txn])[txn]
    cls = request_class(27, 1)
    marker_cls = item(cls, "markers")

    def write_marker(node: int, partition: int) -> int:
        resp = call(cluster.nodes[node].port, 27, 1, markers=(build(
            marker_cls, producer_id=described["producerId"], producer_epoch=described["producerEpoch"],
            transaction_result=True, coordinator_epoch=0,
            topics=(build(item(marker_cls, "topics"), name=topic, partition_indexes=(partition,)),)),))
        return resp.markers[0].topics[0].partitions[0].error_code

    assert write_marker(1, 1) == TRANSACTION_COORDINATOR_FENCED
    assert write_marker(2, 1) == NOT_LEADER_OR_FOLLOWER
