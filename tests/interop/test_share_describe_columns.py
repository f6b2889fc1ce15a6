"""`kgroup groups describe` of a share group shows what Kafka 4.4's `kafka-share-groups
--describe` shows: GROUP TOPIC PARTITION START-OFFSET LAG, the lag being the broker's
(DescribeShareGroupOffsets), not the backlog. The same scenario on both brokers -- 100
records, Kafka's console share consumer taking 30 -- is described by Kafka's tool (run_java)
on Kafka and on kgroup, and by kgroup's CLI on kgroup: the same table; and again by Kafka's
tool after kgroup restarted, its share partitions not loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kgroup.testing import Broker
from kgroup.testing.reference import run_java

pytestmark = pytest.mark.integration
KGROUP = str(Path(sys.executable).with_name("kgroup"))
TOPIC, GROUP = "share-cols", "share-cols-g"


def _scenario(bootstrap: str) -> None:
    """A topic of one partition with 100 records; a share group that starts at the earliest
    offset and whose console consumer takes (and accepts) 30 of them."""
    tool = run_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bootstrap, "--create",
                    "--topic", TOPIC, "--partitions", "1")
    assert tool.returncode == 0, tool.stderr
    tool = run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", bootstrap, "--alter",
                    "--entity-type", "groups", "--entity-name", GROUP, "--add-config",
                    "share.auto.offset.reset=earliest")
    assert tool.returncode == 0, tool.stderr
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(100):
        producer.produce(TOPIC, str(i).encode())
    assert producer.flush(30) == 0
    tool = run_java("org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
                    "--topic", TOPIC, "--group", GROUP, "--max-messages", "30", "--timeout-ms", "60000", timeout=180)
    assert tool.returncode == 0 and tool.stdout.count("\n") == 30, tool.stderr[-2000:]


def _table(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.strip()]


def _kafkas_describe(bootstrap: str) -> list[list[str]]:
    tool = run_java("org.apache.kafka.tools.consumer.group.ShareGroupCommand", "--bootstrap-server", bootstrap,
                    "--describe", "--group", GROUP)
    assert tool.returncode == 0, tool.stderr
    return _table(tool.stdout)


def test_share_group_describe_shows_kafkas_columns_and_values(kafka_reference, tmp_path):
    _scenario(kafka_reference.bootstrap)
    on_kafka = _kafkas_describe(kafka_reference.bootstrap)
    assert on_kafka == [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"], [GROUP, TOPIC, "0", "30", "70"]]
    with Broker(tmp_path / "kgroup") as broker:
        _scenario(broker.bootstrap)
        done = subprocess.run([KGROUP, "groups", "describe", GROUP, "--bootstrap-server", broker.bootstrap],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert _table(done.stdout) == on_kafka == _kafkas_describe(broker.bootstrap)
        # KIP-1226: the lag comes from the persisted share state, so after a restart (no
        # share partition loaded, nobody fetching) Kafka's tool reads the same lag.
        broker.kill()
        broker.start()
        assert _kafkas_describe(broker.bootstrap) == on_kafka
