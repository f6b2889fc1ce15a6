"""The Node.js Kafka clients web UIs and tools are built on, against `kgroup serve`.

kafkajs 2.2.4: fetchTopicMetadata() with no topics, describeConfigs, alterConfigs,
deleteTopicRecords, fetchTopicOffsets, describeCluster. @platformatic/kafka 1.35.0:
listTopics, describeConfigs (TOPIC and GROUP), incrementalAlterConfigs (GROUP),
deleteRecords, describeLogDirs. The clients are pinned in package.json/package-lock.json
and installed by `make test` (`npm ci`) wherever Node is; this test is skipped only where
Node itself is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed here"),
]
ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).with_name("node")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    for package in ("kafkajs", "@platformatic/kafka"):
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
