"""KIP-320 and KIP-966 in a 3-node kgroup cluster: `kafka-topics --describe` names each
partition's leader; after one moves, its leader epoch goes up (Metadata and
DescribeTopicPartitions say so on every node), and consumers that validate their positions
(OffsetForLeaderEpoch on the new leader) resume where they were,
without an offset reset — a Java 4.4 consumer and a confluent-kafka (librdkafka) one, both
with resets forbidden (auto.offset.reset none / error), so a reset would fail them."""

from __future__ import annotations

import threading
import urllib.request

import pytest

from kgroup.wire.codec import request_class
from kgroup.wire.kio_build import build, item
from tests.integration.broker_process import free_port
from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import ClusterProcess, call
from tests.integration.waits import hold

pytestmark = pytest.mark.integration

TOPIC, PARTITIONS, PER_ROUND = "moves", 3, 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ClusterProcess(tmp_path_factory.mktemp("moves"), extra={"node_timeout_ms": 3000},
                       group={"initial_rebalance_delay_ms": 300})
    for node in c.nodes:        # each node's /metrics, to see which requests it answered
        node.http_port = free_port()
        node.config_path.write_text(f'http_listen = "127.0.0.1:{node.http_port}"\n' + node.config_path.read_text())
    c.start()
    yield c
    c.finish()


def _answered(node, api: str) -> float:
    """How many `api` requests the node answered (its /metrics)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{node.http_port}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("kgroup_requests_total{") and f'api="{api}"' in line)


class LibrdkafkaConsumer:
    """A confluent-kafka consumer polling on a thread: what it read, and every error."""

    def __init__(self, bootstrap: str, group: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "error",
                                  "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})
        self.read: list[tuple[int, int]] = []
        self.errors: list[str] = []
        self.stopping = False
        self.consumer.subscribe([TOPIC])
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stopping:
            msg = self.consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                # Transient transport errors while a node stops are not resets.
                if not msg.error().retriable() and "Broker: Not leader" not in str(msg.error()):
                    self.errors.append(str(msg.error()))
                continue
            self.read.append((msg.partition(), msg.offset()))
            self.consumer.commit(msg, asynchronous=True)

    def close(self) -> None:
        self.stopping = True
        self.thread.join(10)
        self.consumer.close()


def _records(start: int) -> list[dict]:
    return [{"topic": TOPIC, "partition": i % PARTITIONS, "key": f"k{i}", "value": f"v{i}"}
            for i in range(start, start + PER_ROUND)]


def _leaders(java, bootstrap: str) -> dict[int, int]:
    """Each partition's leader as Kafka 4.4's `kafka-topics --describe` prints it (it asks
    DescribeTopicPartitions)."""
    out = java.tool("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--describe",
                    "--topic", TOPIC)
    assert out["exit"] == 0, out
    rows = [line.split() for line in out["stdout"].splitlines() if "Partition:" in line and "Leader:" in line]
    return {int(r[r.index("Partition:") + 1]): int(r[r.index("Leader:") + 1]) for r in rows}


def _epochs(node) -> dict[str, dict[int, int]]:
    """Each partition's leader epoch as `node` answers Metadata (v12) and
    DescribeTopicPartitions (v0)."""
    mcls, dcls = request_class(3, 12), request_class(75, 0)
    metadata = call(node.port, 3, 12, topics=(build(item(mcls, "topics"), name=TOPIC),),
                    allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    described = call(node.port, 75, 0, topics=(build(item(dcls, "topics"), name=TOPIC),),
                     response_partition_limit=100, cursor=None)
    return {"metadata": {int(p.partition_index): int(p.leader_epoch) for p in metadata.topics[0].partitions},
            "describe": {int(p.partition_index): int(p.leader_epoch) for p in described.topics[0].partitions}}


def _each_once(read: list[tuple[int, int]], per_partition: int) -> bool:
    return all(sorted(o for p, o in read if p == part) == list(range(per_partition)) for part in range(PARTITIONS))


def test_java_and_librdkafka_consumers_resume_without_a_reset_after_a_leader_move(cluster, java) -> None:
    create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
    java.call("admin.new", name="moves-admin", config={"bootstrap.servers": cluster.bootstrap})
    java.call("producer.new", name="moves-producer", config={"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    java.call("producer.send", name="moves-producer", records=_records(0))
    # Committed offsets to start from: with resets forbidden, a consumer needs one.
    for group in ("moves-java", "moves-rdkafka"):
        java.call("admin.alterConsumerGroupOffsets", name="moves-admin", group=group,
                  offsets=[[TOPIC, p, 0] for p in range(PARTITIONS)])
    java.consumer("moves-java", {"bootstrap.servers": cluster.bootstrap, "group.id": "moves-java",
                                 "auto.offset.reset": "none", "enable.auto.commit": "false",
                                 "metadata.max.age.ms": "1000"}, topics=[TOPIC], commit="sync")
    rdkafka = LibrdkafkaConsumer(cluster.bootstrap, "moves-rdkafka")
    try:
        java.wait_records("moves-java", PER_ROUND)
        wait_for(lambda: len(rdkafka.read) >= PER_ROUND, 60, what="librdkafka reading the first round")
        assert _leaders(java, cluster.bootstrap) == {0: 0, 1: 1, 2: 2}
        before = _epochs(cluster.nodes[0])
        assert before["metadata"] == before["describe"]
        asked_before = sum(_answered(n, "OffsetForLeaderEpoch") for n in cluster.nodes)

        # Node 2 leads partition 2; stopped, it hands the partition over to another node.
        moved = cluster.nodes[2]
        assert moved.stop() == 0
        live = [n for n in cluster.nodes if n is not moved]
        wait_for(lambda: _leaders(java, ",".join(n.bootstrap for n in live)).get(2) in (0, 1), 30,
                 what="kafka-topics naming partition 2's new leader")
        # The moved partition's leader epoch went up by one, the others' did not: every live
        # node answers so in Metadata and DescribeTopicPartitions alike.
        expected = {**before["metadata"], 2: before["metadata"][2] + 1}
        for n in live:
            assert _epochs(n) == {"metadata": expected, "describe": expected}
        java.call("producer.send", name="moves-producer", records=_records(PER_ROUND))
        java.wait_records("moves-java", 2 * PER_ROUND, timeout=90)
        wait_for(lambda: len(rdkafka.read) >= 2 * PER_ROUND, 90, what="librdkafka reading the second round")
        hold(1, "anything read twice would show now")

        per_partition = 2 * PER_ROUND // PARTITIONS
        java_read = [(p, o) for _, p, o, *_ in java.records("moves-java")]
        assert _each_once(java_read, per_partition), sorted(java_read)
        assert _each_once(rdkafka.read, per_partition), sorted(rdkafka.read)
        assert not java.of("moves-java", "failed"), java.of("moves-java", "failed")
        assert not rdkafka.errors, rdkafka.errors
        # The Java consumer validated its position on the new leader (KIP-320).
        assert sum(_answered(n, "OffsetForLeaderEpoch") for n in live) > asked_before
    finally:
        rdkafka.close()
        java.call("consumer.close", name="moves-java")
        cluster.nodes[2].start()
