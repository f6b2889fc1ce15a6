"""Load for cluster tests: group members in their own processes, a producer at acks=all,
and the checks (what every member saw, what was acknowledged, what the cluster kept)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from tests.integration.waits import pace

REPO = Path(__file__).resolve().parents[2]


class MemberProcess:
    """One member (group_member_process.py) and everything it printed."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.kind, self.group, self.name = kind, group, name
        self.events: list[dict] = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.group_member_process", kind, bootstrap, group, topic, name],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                self._stderr.append(line)

    def of(self, *kinds: str, after: float = 0.0) -> list[dict]:
        return [e for e in list(self.events) if e["e"] in kinds and e["t"] >= after]

    def owned(self) -> set[int]:
        """The partitions it owns now, by its own callbacks."""
        owned: set[int] = set()
        for e in self.of("assigned", "revoked", "lost"):
            owned = owned | set(e["p"]) if e["e"] == "assigned" else owned - set(e["p"])
        return owned

    def rebalances_after(self, t: float) -> list[dict]:
        """Rebalance callbacks (assigned, revoked, lost) it ran after `t`."""
        return self.of("assigned", "revoked", "lost", after=t)

    def position(self, partition: int) -> int:
        """Its highest reported position in `partition` (0 if none)."""
        best = 0
        for e in self.of("progress"):
            best = max(best, e["pos"].get(str(partition), 0))
        return best

    def reached(self, partition: int, offset: int) -> float | None:
        """When it first reported a position past `offset` in `partition`."""
        for e in self.of("progress"):
            if e["pos"].get(str(partition), 0) > offset:
                return e["t"]
        return None

    def last_commit(self, before: float) -> dict[int, int]:
        """The offsets of its last commit acknowledged before `before`, merged per partition."""
        merged: dict[int, int] = {}
        for e in self.of("committed"):
            if e["t"] < before:
                merged.update({int(p): o for p, o in e["offsets"].items()})
        return merged

    def errors(self) -> list[dict]:
        return self.of("error")

    def close(self, timeout: float = 30) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()

    def describe(self) -> str:
        return (f"{self.name} ({self.kind}, group {self.group}): "
                + json.dumps(self.events[-12:]) + " stderr: " + "".join(self._stderr[-60:]))


class AckedProducer(threading.Thread):
    """confluent-kafka at acks=all, a steady stream over every partition; remembers each
    acknowledged record (partition, offset, value) and when it was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_second: int = 200) -> None:
        super().__init__(daemon=True, name="acked-producer")
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.interval = 1.0 / per_second
        self.acked: list[tuple[float, int, int, bytes]] = []
        self.failed = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5,
                             "message.timeout.ms": 60000, "enable.idempotence": False,
                             "log_level": 2})

        def delivered(err, msg) -> None:
            if err is None:
                self.acked.append((time.time(), msg.partition(), msg.offset(), msg.value()))
            else:
                self.failed += 1

        i = 0
        while not self._stop_event.is_set():
            producer.produce(self.topic, value=b"v-%d" % i, partition=i % self.partitions, on_delivery=delivered)
            i += 1
            producer.poll(0)
            pace(self.interval)
        assert producer.flush(60) == 0

    def stop(self) -> None:
        self._stop_event.set()
        self.join(90)

    def ends_at(self, t: float) -> dict[int, int]:
        """Per partition, the offset after the last record acknowledged before `t`."""
        ends: dict[int, int] = defaultdict(int)
        for at, p, offset, _ in list(self.acked):
            if at < t:
                ends[p] = max(ends[p], offset + 1)
        return ends


def _high_watermark(consumer, tp) -> int:
    """The partition's end, asked of its leader. NOT_LEADER_FOR_PARTITION is retriable (the
    leader moved, e.g. a hand-back in progress), and so is librdkafka's local _UNKNOWN_PARTITION:
    while a partition is being handed over, Metadata answers it LEADER_NOT_AVAILABLE with leader
    -1 (as Kafka does for a leaderless partition) and librdkafka's watermark query then knows no
    leader to ask. That query does not refresh its metadata and ask again as a fetch would, so
    do that here, for 20 s at most."""
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + 20
    while True:
        try:
            return consumer.get_watermark_offsets(tp, timeout=20)[1]
        except KafkaException as exc:
            if (exc.args[0].code() not in (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError._UNKNOWN_PARTITION)
                    or time.monotonic() > deadline):
                raise
            consumer.list_topics(tp.topic, timeout=10)       # refresh who leads it
            pace(0.1)


def read_topic(bootstrap: str, topic: str, partitions: int) -> dict[int, dict[int, bytes]]:
    """Every record of `topic` up to the end: partition -> {offset: value}."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "cluster-test-reader",
                         "enable.auto.commit": False})
    try:
        ends = {p: _high_watermark(consumer, TopicPartition(topic, p)) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        got: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        deadline = time.monotonic() + 60
        while any(len(got[p]) < ends[p] for p in got) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    got[msg.partition()][msg.offset()] = msg.value()
        return got
    finally:
        consumer.close()


def missing_acknowledged(producer: AckedProducer, kept: dict[int, dict[int, bytes]],
                         before: float | None = None) -> list:
    """Acknowledged records the cluster does not have (at their offset, with their value);
    with `before`, those acknowledged before that time only (the producer may still run:
    read the topic after `before`, and every record acknowledged by then is below its end)."""
    return [(p, o, v) for at, p, o, v in list(producer.acked)
            if (before is None or at < before) and kept.get(p, {}).get(o) != v]
