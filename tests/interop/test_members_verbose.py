"""`kgroup groups describe --members [--verbose]` prints what Kafka 4.4's tools print for the
same groups: `kafka-consumer-groups --describe --members --verbose` for a consumer-protocol
group (KIP-848: CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH, TARGET-ASSIGNMENT; the
GROUP-INSTANCE-ID column because one member is static) and a classic group (epochs and
target `-`), and `kafka-share-groups --describe --members --verbose` for a share group
(MEMBER-EPOCH, ASSIGNMENT). The same scenario runs on both brokers; kgroup's CLI on kgroup
is compared with Kafka's tool (run_java) on Kafka 4.4, after these named normalizations:
member ids (random on both) become <id>, runs of spaces count as one (column widths follow
the ids), and member rows are sorted (Kafka prints them in its own order)."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from confluent_kafka import Consumer, Producer

from kgroup.testing import Broker
from kgroup.testing.reference import classpath, java_command, run_java

from tests.integration.cli_inprocess import kgroup_inprocess
from tests.interop.helpers import eventually

pytestmark = pytest.mark.integration
CG = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
SG = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
TOPICS = {"mv-a": 2, "mv-b": 1, "mv-s": 3}
# (group, kind, Kafka's tool): members of the consumer and classic groups read different
# topics, so who gets which partitions is the same on both brokers.
GROUPS = (("mv-consumer", "consumer", CG), ("mv-classic", "classic", CG), ("mv-share", "share", SG))
# Kafka's 22-character member ids (librdkafka's in standard base64) and a classic member's
# `<client id>-<uuid>`.
_IDS = (re.compile(r"\b([\w.]+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
        re.compile(r"(?<![\w+/-])[A-Za-z0-9_+/-]{22}(?![\w+/-])"))


def normalized(text: str) -> list[str]:
    """The named normalizations: ids, column widths, row order (the header stays first)."""
    text = _IDS[0].sub(r"\1-<id>", text)
    text = _IDS[1].sub("<id>", text)
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines() if line.strip()]
    return lines[:1] + sorted(lines[1:])


class Scenario:
    """On one broker: topics mv-a (2 partitions), mv-b (1), mv-s (3); a consumer-protocol
    group whose static member c1 reads mv-a and dynamic member c2 mv-b, joined one after the
    other; a classic group (range) likewise; a share group of one console share consumer."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.consumers: list[Consumer] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.share: subprocess.Popen | None = None

    def _poll(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                consumers = list(self.consumers)
            for c in consumers:
                c.poll(0.05)

    def describe(self, group: str) -> dict:
        done = kgroup_inprocess(["groups", "describe", group, "--members", "--format", "json",
                                 "--bootstrap-server", self.bootstrap])       # polled: no process start
        assert done.returncode == 0, done.stderr
        (doc,) = json.loads(done.stdout)["groups"]
        return doc

    def _settled(self, group: str, partitions: list[int]) -> bool:
        members = self.describe(group)["members"]
        return (sorted(len(m["partitions"] or ()) for m in members) == partitions
                and all(m["current_epoch"] == m["target_epoch"] for m in members))

    def _join(self, group: str, protocol: str, topic: str, client: str, settled: list[int], **extra) -> None:
        config = {"bootstrap.servers": self.bootstrap, "group.id": group, "group.protocol": protocol,
                  "client.id": client, "auto.offset.reset": "earliest", **extra}
        consumer = Consumer(config)
        consumer.subscribe([topic])
        with self.lock:
            self.consumers.append(consumer)
        eventually(lambda: self._settled(group, settled), timeout=60, what=f"{client} in {group}")

    def __enter__(self) -> "Scenario":
        # Kafka's tools are JVMs that take seconds to start: the three topics are created at
        # once, and the share consumer starts before the other groups form, beside them.
        with ThreadPoolExecutor(len(TOPICS)) as pool:
            made = list(pool.map(lambda tp: run_java("org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
                                                     self.bootstrap, "--create", "--topic", tp[0],
                                                     "--partitions", str(tp[1])), TOPICS.items()))
        for tool in made:
            assert tool.returncode == 0, tool.stderr
        producer = Producer({"bootstrap.servers": self.bootstrap})
        for i in range(12):
            for topic, partitions in TOPICS.items():
                producer.produce(topic, str(i).encode(), partition=i % partitions)
        assert producer.flush(30) == 0
        self.share = subprocess.Popen(
            [java_command(), "-XX:TieredStopAtLevel=1", "-cp", classpath(),
             "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", self.bootstrap,
             "--topic", "mv-s", "--group", "mv-share", "--timeout-ms", "120000"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.poller.start()
        self._join("mv-consumer", "consumer", "mv-a", "c1", [2], **{"group.instance.id": "static-c1"})
        self._join("mv-consumer", "consumer", "mv-b", "c2", [1, 2])
        self._join("mv-classic", "classic", "mv-b", "k1", [1], **{"partition.assignment.strategy": "range"})
        self._join("mv-classic", "classic", "mv-a", "k2", [1, 2], **{"partition.assignment.strategy": "range"})
        eventually(lambda: [len(m["partitions"] or ()) for m in self.describe("mv-share")["members"]] == [3],
                   timeout=90, what="the share consumer's assignment")
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        if self.poller.is_alive():
            self.poller.join(10)
        for c in self.consumers:
            c.close()
        if self.share is not None:
            self.share.kill()
            self.share.wait(10)


def _kafkas(tool: str, bootstrap: str, group: str, *options: str) -> list[str]:
    done = run_java(tool, "--bootstrap-server", bootstrap, "--describe", "--group", group, *options)
    assert done.returncode == 0, done.stderr
    return normalized(done.stdout)


def _kgroups(bootstrap: str, group: str, *options: str) -> list[str]:
    done = kgroup_inprocess(["groups", "describe", group, *options, "--bootstrap-server", bootstrap])
    assert done.returncode == 0, done.stderr
    return normalized(done.stdout)


def _described(bootstrap: str, describe) -> dict[tuple[str, tuple[str, ...]], list[str]]:
    """The scenario on one broker, and each group described with --members, without and with
    --verbose, by `describe(tool, bootstrap, group, *options)`: six at once (Kafka's tool is
    a JVM that takes seconds to start)."""
    asked = [(g, tool, v) for g, _, tool in GROUPS for v in ((), ("--verbose",))]
    with Scenario(bootstrap), ThreadPoolExecutor(len(asked)) as pool:
        return dict(zip(((g, v) for g, _, v in asked),
                        pool.map(lambda a: describe(a[1], bootstrap, a[0], "--members", *a[2]), asked)))


def test_members_verbose_shows_kafkas_columns_and_values(kafka_reference, tmp_path):
    # The scenario on both brokers at once (they share nothing).
    with Broker(tmp_path / "kgroup") as broker, ThreadPoolExecutor(2) as both:
        kafkas = both.submit(_described, kafka_reference.bootstrap, _kafkas)
        ours = both.submit(_described, broker.bootstrap, lambda _tool, *args: _kgroups(*args))
        on_kafka, on_kgroup = kafkas.result(), ours.result()
    # What Kafka 4.4 prints, spelled out (so a change on either side is seen here).
    assert on_kafka["mv-consumer", ("--verbose",)][0].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
        "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert on_kafka["mv-classic", ("--verbose",)][1:] == [
        "mv-classic k1-<id> /127.0.0.1 k1 1 - mv-b:0 - -", "mv-classic k2-<id> /127.0.0.1 k2 2 - mv-a:0,1 - -"]
    assert on_kafka["mv-share", ("--verbose",)][0].split() == [
        "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"]
    for (group, verbose), theirs in on_kafka.items():
        assert on_kgroup[group, verbose] == theirs, (group, verbose)
