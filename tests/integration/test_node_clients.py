"""The Node.js Kafka clients web UIs and tools are built on, against `kgroup serve`.

kafkajs 2.2.4: fetchTopicMetadata() with no topics, describeConfigs, alterConfigs,
deleteTopicRecords, fetchTopicOffsets, describeCluster. @platformatic/kafka 1.35.0:
listTopics, describeConfigs (TOPIC and GROUP), incrementalAlterConfigs (GROUP),
deleteRecords, describeLogDirs. The clients are pinned in package.json/package-lock.json
and installed by `make test` (`npm ci`) wherever Node is; this test is skipped only where
Node itself is absent.

Idempotent producers of @platformatic/kafka, both majors (1.35.0, and 2.12.1 as the npm
alias `@platformatic/kafka-2`): two producers, one after the other and then at once, into
one partition; every acknowledged record is stored exactly once -- on kgroup and on Apache
Kafka 4.4 alike. Both majors ask InitProducerId with producer id 0 and epoch 0 rather than
-1/-1; a broker that bumped "producer 0" for each would give them one (id, epoch) and drop
the second producer's records as duplicates while acknowledging them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here"),
]
ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("node")
PLATFORMATIC = ("@platformatic/kafka", "@platformatic/kafka-2")
NODE_PACKAGES = ("kafkajs", *PLATFORMATIC)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    for package in NODE_PACKAGES:
        assert (ROOT / "node_modules" / package).is_dir(), (
            f"{package} is not installed: run `npm ci` in the checkout (make test does)")
    proc = BrokerProcess(tmp_path_factory.mktemp("node") / "data").start()
    yield proc
    proc.finish()


def node(script: str, *args: str) -> dict:
    done = subprocess.run(["node", str(SCRIPTS / script), *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_kafkajs_admin(broker):
    got = node("kafkajs_admin.mjs", broker.bootstrap, "njs-topic")
    assert {"name": "njs-topic", "partitions": 2} in got["metadata"]
    # One partition per group-metadata partition (README "Group events").
    assert {"name": "__kgroup_events", "partitions": 50} in got["metadata"]
    assert dict(got["configs"]) == {"retention.ms": "604800000", "cleanup.policy": "delete"}
    assert got["altered"] == [["retention.ms", "3600000"]]
    assert got["offsets"] == [[0, "4", "6"], [1, "0", "0"]]          # deleteTopicRecords moved the low mark
    assert got["cluster"] == {"clusterId": "kgroup", "controller": 1, "brokers": 1}


def test_platformatic_kafka_admin(broker):
    got = node("platformatic_admin.mjs", broker.bootstrap, "npf-topic", "npf-group")
    assert got["topics"] == ["npf-topic"]
    assert got["configs"] == [["retention.ms", "604800000"]]
    assert got["groupConfigs"] == [["consumer.heartbeat.interval.ms", "6000"]]
    assert got["deleted"] == [["npf-topic", [[0, 3]]]]
    assert got["logDirs"] == 1


def stored_values(bootstrap: str, topic: str) -> Counter:
    """Every value in partition 0 of ``topic``, counted, read by a client that is not Node's."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: Counter = Counter()
        read = 0
        for _ in range(200):
            if read >= end:
                break
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            values[message.value().decode()] += 1
            read = message.offset() + 1
        return values
    finally:
        consumer.close()


# Records per producer: within the 5 batches a partition remembers per producer, so a
# second producer handed the first one's (id, epoch) sends what looks like its retries.
PER_PRODUCER = 5


def two_producers(package: str, bootstrap: str) -> None:
    topic = f"two-{package.rsplit('/', 1)[-1]}-{uuid.uuid4().hex[:6]}"
    got = node("platformatic_two_producers.mjs", package, bootstrap, topic, str(PER_PRODUCER))
    stored = stored_values(bootstrap, topic)
    lost = [v for v in got["acked"] if stored[v] == 0]
    twice = {v: n for v, n in stored.items() if n > 1}
    assert not lost, f"{len(lost)} of {len(got['acked'])} acknowledged records were never stored: {lost}"
    assert not twice, f"stored more than once: {twice}"
    assert got["failed"] == []
    assert len(got["acked"]) == 4 * PER_PRODUCER


@pytest.mark.parametrize("package", PLATFORMATIC)
def test_platformatic_idempotent_producers_store_every_acknowledged_record_once(broker, package):
    two_producers(package, broker.bootstrap)


@pytest.mark.parametrize("package", PLATFORMATIC)
def test_platformatic_idempotent_producers_on_the_reference_kafka(kafka_reference, package):
    """The same scenario on Apache Kafka 4.4: the oracle stores each acknowledged record once."""
    two_producers(package, kafka_reference.bootstrap)
