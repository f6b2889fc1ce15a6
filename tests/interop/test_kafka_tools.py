"""Kafka 4.4's own CLI tools against kgroup and against Apache Kafka 4.4: the same scenario on
both brokers, every command of tool_table.py on both, outputs compared after the named
normalizations of tools.py. The tools run inside the module's Java worker (one JVM for all of
them, Tools.java)."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest

from kgroup.testing.reference import COMPARABLE_GROUP_SETTINGS

from tests.interop.helpers import eventually
from tests.interop.tool_table import TABLES
from tests.interop.tools import compare

# kgroup runs with the group settings the reference Kafka is given (its static broker
# configs), so the tools see the same numbers and synonyms on both sides.
KGROUP_GROUP = COMPARABLE_GROUP_SETTINGS

pytestmark = pytest.mark.integration


def _records(topic: str, count: int, partitions: int, t0: int, prefix: str) -> list[dict]:
    return [{"topic": topic, "partition": i % partitions, "key": f"k{i}", "value": f"{prefix}{i}",
             "timestamp": t0 + i * 1000} for i in range(count)]


def _setup(java, side: str, bootstrap: str, n: str, t0: int) -> None:
    """The scenario on one broker (tool_table.py's docstring names its parts)."""
    admin, producer = f"admin-{side}", f"producer-{side}"
    java.call("admin.new", name=admin, config={"bootstrap.servers": bootstrap})
    # Not idempotent, one request in flight: under a heavy load the reference once answered a
    # Java idempotent producer OUT_OF_ORDER_SEQUENCE_NUMBER for ever here; the scenario's
    # records need no sequence numbers (retries stay: a new topic's leader takes a moment).
    java.call("producer.new", name=producer, config={"bootstrap.servers": bootstrap, "enable.idempotence": "false",
                                                      "acks": "all", "max.in.flight.requests.per.connection": "1"})
    topics = {"cg": 3, "cx": 2, "cy": 1, "cs": 2, "csc": 1, "ct": 1, "cd": 1}
    created = java.call("admin.createTopics", name=admin,
                        topics=[{"name": f"{t}-{n}", "partitions": p} for t, p in topics.items()])
    assert all(v is None for v in created.values()), created
    java.call("producer.send", name=producer, records=(
        _records(f"cg-{n}", 30, 3, t0, "v") + _records(f"cx-{n}", 10, 2, t0, "x") + _records(f"cy-{n}", 5, 1, t0, "y")
        + _records(f"cs-{n}", 10, 2, t0, "s") + _records(f"csc-{n}", 3, 1, t0, "c") + _records(f"cd-{n}", 5, 1, t0, "d")))
    java.call("admin.alterConsumerGroupOffsets", name=admin, group=f"ga-{n}",
              offsets=[[f"cg-{n}", 0, 5], [f"cg-{n}", 1, 10], [f"cg-{n}", 2, 0]])
    java.call("admin.incrementalAlterConfigs", name=admin, resources=[
        ["GROUP", f"{g}-{n}", [["SET", "share.auto.offset.reset", "earliest"]]] for g in ("gs", "gse", "gsc")])
    base = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", "enable.auto.commit": "false"}
    for member in ("b1", "b2"):
        java.consumer(f"{side}-{member}", {**base, "group.id": f"gb-{n}", "client.id": member, "group.protocol": "classic",
                                           "partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"},
                      topics=[f"cg-{n}"], commit="sync")
    for member, topic in (("c1", "cx"), ("c2", "cy")):
        java.consumer(f"{side}-{member}", {**base, "group.id": f"gc-{n}", "client.id": member, "group.protocol": "consumer"},
                      topics=[f"{topic}-{n}"], commit="sync")
    java.share_consumer(f"{side}-s1", {"bootstrap.servers": bootstrap, "group.id": f"gs-{n}", "client.id": "s1"},
                        [f"cs-{n}"])
    java.share_consumer(f"{side}-se", {"bootstrap.servers": bootstrap, "group.id": f"gse-{n}", "client.id": "se"},
                        [f"cs-{n}"])
    for txn, commit in (("tx1", True), ("tx2", False)):
        name = f"{side}-{txn}"
        java.call("producer.new", name=name, config={"bootstrap.servers": bootstrap, "transactional.id": f"{txn}-{n}",
                                                      "transaction.timeout.ms": "600000"})
        java.call("producer.initTransactions", name=name)
        java.call("producer.beginTransaction", name=name)
        java.call("producer.send", name=name, records=[{"topic": f"ct-{n}", "partition": 0, "value": txn}])
        if commit:
            java.call("producer.commitTransaction", name=name)


def _settled(java, side: str, n: str) -> bool:
    """Both consumer groups consumed and committed everything and are Stable; both share
    consumers took all 10 records."""
    admin = f"admin-{side}"
    offsets = {g: {tp: v[0] for tp, v in java.call("admin.listConsumerGroupOffsets", name=admin, group=f"{g}-{n}").items()}
               for g in ("gb", "gc")}
    groups = java.call("admin.describeConsumerGroups", name=admin, groups=[f"gb-{n}", f"gc-{n}"])
    stable = all(groups[f"{g}-{n}"].get("state") == "Stable" and len(groups[f"{g}-{n}"]["members"]) == 2
                 for g in ("gb", "gc"))
    converged = all(m["memberEpoch"] == groups[f"gc-{n}"]["targetAssignmentEpoch"] for m in groups[f"gc-{n}"]["members"])
    share = all(len(java.records(f"{side}-{s}")) >= 10 for s in ("s1", "se"))
    return (stable and converged and share
            and offsets["gb"] == {f"cg-{n}:{p}": 10 for p in range(3)}
            and offsets["gc"] == {f"cx-{n}:0": 5, f"cx-{n}:1": 5, f"cy-{n}:0": 5})


@pytest.fixture(scope="module")
def scenario(java, kgroup, kafka_reference, tmp_path_factory):
    n = uuid.uuid4().hex[:6]
    # Records an hour or two old: inside every retention, and a time in the middle of them.
    t0 = (int(time.time()) // 3600 - 1) * 3600 * 1000
    sides = {"kgroup": kgroup.bootstrap, "kafka": kafka_reference.bootstrap}
    for side, bootstrap in sides.items():
        _setup(java, side, bootstrap, n, t0)
    for side in sides:
        eventually(lambda: _settled(java, side, n), timeout=90, what=f"the {side} scenario to settle")
        java.call("share.close", name=f"{side}-se")         # gse: an empty share group with state
    folder = tmp_path_factory.mktemp("tools")
    (folder / "client.properties").write_text("client.id=kgroup-interop-tool\nrequest.timeout.ms=20000\n")
    (folder / "plan.csv").write_text(f"cg-{n},0,7\ncg-{n},1,8\ncg-{n},2,9\n")
    (folder / "delete.json").write_text(f'{{"partitions":[{{"topic":"cd-{n}","partition":0,"offset":2}}],"version":1}}')
    at13 = datetime.datetime.fromtimestamp((t0 + 13_000) / 1000, datetime.timezone.utc)
    values = {"dir": str(folder), "at13": at13.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "ms13": str(t0 + 13_000)}
    yield sides, n, values
    for side in sides:
        for client in ("b1", "b2", "c1", "c2"):
            java.call("consumer.close", name=f"{side}-{client}")
        java.call("share.close", name=f"{side}-s1")
        for txn in ("tx1", "tx2"):
            java.call("producer.close", name=f"{side}-{txn}", timeoutS=5)


def _check(java, scenario, table: str) -> None:
    sides, n, values = scenario
    problems = compare(java, TABLES[table], sides, n, values)
    assert not problems, "\n\n".join(problems)


def test_kafka_consumer_groups(java, scenario):
    """Every option of kafka-consumer-groups.sh, --describe --members --verbose and
    --reset-offsets --to-datetime --execute among them (#33's acceptance)."""
    _check(java, scenario, "kafka-consumer-groups")


def test_kafka_share_groups(java, scenario):
    _check(java, scenario, "kafka-share-groups")


def test_kafka_transactions(java, scenario):
    _check(java, scenario, "kafka-transactions")


def test_kafka_configs(java, scenario):
    _check(java, scenario, "kafka-configs")


def test_kafka_topics(java, scenario):
    _check(java, scenario, "kafka-topics")


def test_kafka_get_offsets(java, scenario):
    _check(java, scenario, "kafka-get-offsets")


def test_kafka_console_producer_and_consumers(java, scenario):
    _check(java, scenario, "console tools")


def test_other_kafka_tools(java, scenario):
    _check(java, scenario, "other tools")
