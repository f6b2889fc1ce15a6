"""Transactions across the nodes of a kgroup cluster, with the Java 4.4 producer (issue 32).

One 3-node cluster for the module. The transactional ids hash to group-metadata partitions
node 0 prefers, so node 0 is their transaction coordinator; the topics' partitions are led
by nodes 0, 1 and 2 (partition p by node p mod 3); the consumer group's coordinator is
node 1. So every transaction needs WriteTxnMarkers from node 0 to nodes 1 and 2 (and to
node 1 for the group's offsets), and the Java producer's Produce v12 (transaction.version
2) on nodes 1 and 2 adds its partitions at node 0 with AddPartitionsToTxn v5; its
TxnOffsetCommit v5 on node 1 asks node 0 too. The last test (issue 32's acceptance) runs
two EOS apps while kill -9 hits each node in turn.
"""

from __future__ import annotations

import asyncio

import pytest

from kgroup.testing import Cluster
from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item
from tests.integration.cluster_process import call, group_coordinated_by, metadata
from tests.interop.helpers import abort_transaction, eventually, spread, values

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
    abort_transaction(java, cluster.bootstrap, group_coordinated_by(0, "xn-abort"),
                      spread(sink, 6, 3, prefix="aborted-"))
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


# ---- issue 32's acceptance: two EOS apps while kill -9 hits each node in turn ----------------


def find_coordinator(cluster, key: str, key_type: int) -> int:
    """FindCoordinator v4 (key type 0: a group, 1: a transactional id), asked of node 2."""
    resp = call(cluster.nodes[2].port, 10, 4, key_type=key_type, coordinator_keys=(key,))
    assert resp.coordinators[0].error_code == 0, resp
    return resp.coordinators[0].node_id


def leaders(cluster, topic: str) -> list[int]:
    (t,) = metadata(cluster.nodes[1].port, topic).topics
    return [p.leader_id for p in sorted(t.partitions, key=lambda p: p.partition_index)]


def group_view(cluster, group: str) -> dict:
    """What a stalled consumer of `group` would be waiting on: the group's state and members
    (DescribeGroups v5) and the stable offsets a read_committed consumer asks for (OffsetFetch
    v8, require_stable: UNSTABLE_OFFSET_COMMIT while transactional offsets are pending)."""
    port = cluster.nodes[find_coordinator(cluster, group, 0)].port
    (described,) = call(port, 15, 5, groups=(group,), include_authorized_operations=False).groups
    cls = request_class(9, 8)
    fetched = call(port, 9, 8, groups=(build(item(cls, "groups"), group_id=group, topics=None),),
                   require_stable=True).groups[0]
    return {"state": described.group_state, "members": [(m.member_id, m.group_instance_id) for m in described.members],
            "stable offsets": (fetched.error_code, [(t.name, p.partition_index, p.committed_offset, p.error_code)
                                                    for t in fetched.topics for p in t.partitions])}


def test_eos_apps_survive_kill_9_of_each_node_in_turn(java, cluster, admin, tmp_path):
    """Issue 32's acceptance: the transaction coordinators on node 0, the input partitions and
    the groups' coordinator on node 1, the output partitions on node 2 (four roles on three
    nodes: every marker and every offset commit crosses nodes). Two consume-transform-produce
    apps read the same input at once -- confluent-kafka (eos_app_process.py, TV1) and the Java
    4.4 client (TV2) -- into their own outputs while input keeps arriving and node 0, 1, 2 are
    killed with SIGKILL in turn, each started again before the next. Each output, read with
    read_committed through every node, holds every input exactly once: nothing lost, nothing
    aborted or torn visible, and all three readers agree."""
    import collections
    import threading

    from confluent_kafka import Producer

    from kgroup.client import AdminClient as Ours
    from tests.integration.test_exactly_once_crashes import read_committed as read_all, start
    from tests.integration.waits import pace

    for n, node in enumerate(cluster.nodes):              # the test before killed node 0
        if not node.alive():
            cluster.start_node(n)
    source, sinks = "xc-in", {"py": "xc-out-py", "java": "xc-out-java"}
    py_txn = group_coordinated_by(0, "eos")                        # eos_app_process's id: eos-SLOT
    py_group, java_group = group_coordinated_by(1, "xc-py"), group_coordinated_by(1, "xc-java")
    java_txn = group_coordinated_by(0, "xc-txn")
    for topic in (source, *sinks.values()):
        assert java.call("admin.createTopics", name="admin", topics=[{"name": topic, "partitions": 2}]) == {topic: None}

    async def move() -> None:
        async with Ours(cluster.bootstrap) as ours:
            targets = {(source, 0): [1], **{(s, p): [2] for s in sinks.values() for p in range(2)}}
            assert all(r.error == 0 for r in (await ours.alter_partition_reassignments(targets)).values())

    asyncio.run(move())
    wanted = {"in": [1, 1], "out": [2, 2, 2, 2], "txn": [0, 0], "groups": [1, 1]}

    def placement() -> dict:
        return {"in": leaders(cluster, source), "out": leaders(cluster, sinks["py"]) + leaders(cluster, sinks["java"]),
                "txn": [find_coordinator(cluster, t, 1) for t in (py_txn, java_txn)],
                "groups": [find_coordinator(cluster, g, 0) for g in (py_group, java_group)]}

    eventually(lambda: placement() == wanted, what=f"the placement {wanted}")

    feeding, fed, failures = threading.Event(), collections.Counter(), []

    def feed() -> None:
        p = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 5})

        def done(err, msg) -> None:
            if err is None:
                fed["acked"] += 1
            else:
                failures.append(err)
        while feeding.is_set():                         # about 40 records/s, below what the apps do
            for _ in range(4):
                p.produce(source, f"in-{fed['sent']}".encode(), partition=fed["sent"] % 2, on_delivery=done)
                fed["sent"] += 1
            p.poll(0)
            pace(0.1)
        assert p.flush(60) == 0

    def committed() -> int:
        return sum(v[0] for g in (py_group, java_group)
                   for tp, v in java.call("admin.listConsumerGroupOffsets", name="admin", group=g).items()
                   if tp.startswith(f"{source}:"))

    def progress(what: str, records: int = 40) -> None:
        before = committed()
        eventually(lambda: committed() >= before + records, what=f"both apps commit more {what}")

    feeding.set()
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    app = start("tests.integration.eos_app_process", cluster.bootstrap, py_group, py_txn.split("-")[1], source,
                sinks["py"], log=tmp_path / "py-app.log")
    java.consumer("xc-java", {"bootstrap.servers": cluster.bootstrap, "group.id": java_group,
                              "group.protocol": "classic", "auto.offset.reset": "earliest",
                              "enable.auto.commit": "false", "isolation.level": "read_committed",
                              "session.timeout.ms": "6000", "heartbeat.interval.ms": "500"},
                  topics=[source], transform={"output": sinks["java"], "config": {
                      "bootstrap.servers": cluster.bootstrap, "transactional.id": java_txn,
                      "transaction.timeout.ms": "10000"}})
    try:
        progress("before the kills")
        for node in (0, 1, 2):
            cluster.kill_node(node)
            progress(f"while node {node} is down")
            cluster.start_node(node)
            eventually(lambda: placement() == wanted, what=f"node {node} back in its place")
            assert app.poll() is None, (tmp_path / "py-app.log").read_text()
        feeding.clear()
        feeder.join(60)
        assert failures == [] and fed["acked"] == fed["sent"], (failures, fed)
        try:
            eventually(lambda: committed() == 2 * fed["sent"], timeout=60, what="both apps consumed every input")
        except AssertionError:
            state = {g: java.call("admin.listConsumerGroupOffsets", name="admin", group=g)
                     for g in (py_group, java_group)}
            lines = [line for text in cluster.logs().values() for line in text.splitlines()]
            logs = [line for line in lines if "ERROR" in line or "WARN" in line or "Traceback" in line]
            mentions = [line for line in lines if py_group in line or py_txn in line]
            raise AssertionError((fed, state, java.of("xc-java", "aborted")[-3:], java.of("xc-java", "failed"),
                                  (tmp_path / "py-app.log").read_text()[-1500:], logs[-40:],
                                  group_view(cluster, py_group), mentions[-30:]))
        assert app.poll() is None, (tmp_path / "py-app.log").read_text()
        assert java.of("xc-java", "failed") == []
        for g in (py_group, java_group):                # offsets of the input only, by its name
            assert sorted(java.call("admin.listConsumerGroupOffsets", name="admin", group=g)) \
                == [f"{source}:0", f"{source}:1"], g
    finally:
        feeding.clear()
        app.kill()
        app.wait()
        java.call("consumer.close", name="xc-java", leave=True)
    expected = collections.Counter(f"IN-{i}" for i in range(fed["sent"]))
    for app_name, sink in sinks.items():
        per_node = [collections.Counter(m.value().decode() for m in read_all(cluster.node_bootstrap(n), sink, 2))
                    for n in range(3)]
        assert per_node[0] == expected, (app_name, len(expected), sum(per_node[0].values()),
                                         list((expected - per_node[0]).items())[:5],
                                         list((per_node[0] - expected).items())[:5])
        assert per_node[1] == per_node[0] and per_node[2] == per_node[0], app_name
