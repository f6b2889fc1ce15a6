"""What the streams scenarios share: topics, input, output and the group's configs, the same on
kgroup and on Apache Kafka 4.4 (through confluent-kafka, and the Java admin client for what
only it speaks: streams group configs and Admin#describeStreamsGroups)."""

from __future__ import annotations

import struct
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from tests.integration.waits import pace, until

# A group's streams configs in the scenarios: a crash is noticed in seconds, not 45 s.
GROUP_CONFIGS = {"streams.session.timeout.ms": 3_000, "streams.heartbeat.interval.ms": 300}
# The apps' configs in the scenarios: commits and polls often, quick shutdowns.
APP_CONFIGS = {
    "commit.interval.ms": 100,
    "poll.ms": 50,
    "consumer.max.poll.records": 100,
    "producer.linger.ms": 5,
    "num.stream.threads": 1,
}


def create_topics(bootstrap: str, **partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name.replace("__", "-"), n, 1) for name, n in partitions.items()],
                                  operation_timeout=30)
    for future in futures.values():
        future.result(timeout=60)
    # Kafka answers CreateTopics once its controller has the topics; a broker's metadata (and
    # its group coordinator's image) may lag behind: wait until the topics are served.
    wanted = {name.replace("__", "-"): n for name, n in partitions.items()}
    wait_for(lambda: partition_counts(bootstrap, *wanted) == wanted, 30, f"topics {sorted(wanted)} in metadata", 0.1)


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def partition_counts(bootstrap: str, *topics: str) -> dict[str, int | None]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(timeout=30).topics
    return {t: (len(meta[t].partitions) if t in meta and meta[t].error is None else None) for t in topics}


def produce_words(bootstrap: str, topic: str, words: list[str], *, partitions: int | None = None,
                  raw: bool = False) -> Counter:
    """One record a word (value "<word> <n>", keyed by n; `raw`: the word itself); returns how
    many of each word."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for n, word in enumerate(words):
        kw: dict[str, Any] = {"key": str(n), "value": word if raw else f"{word} {n}"}
        if partitions:
            kw["partition"] = n % partitions
        producer.produce(topic, **kw)
    assert producer.flush(30) == 0
    return Counter(words)


def read_all(bootstrap: str, topic: str, *, committed_only: bool = True, timeout: float = 10.0) -> list[tuple]:
    """Every record of `topic` from the start, as (key, value bytes), read_committed."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                         "enable.auto.commit": False,
                         "isolation.level": "read_committed" if committed_only else "read_uncommitted"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        parts = [TopicPartition(topic, p, 0) for p in sorted(meta.partitions)]
        ends = {}
        for tp in parts:
            _, high = consumer.get_watermark_offsets(tp, timeout=30)
            ends[tp.partition] = high
        consumer.assign(parts)
        out: list[tuple] = []
        done = {p for p, high in ends.items() if high == 0}
        deadline = time.monotonic() + timeout
        while len(done) < len(ends) and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.2):
                if msg.error():
                    continue
                out.append((msg.key().decode() if msg.key() else None, msg.value()))
                if msg.offset() + 1 >= ends[msg.partition()]:
                    done.add(msg.partition())
            for p, high in ends.items():
                pos = consumer.position([TopicPartition(topic, p)])[0].offset
                if pos >= high:
                    done.add(p)
        return out
    finally:
        consumer.close()


def latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The count app's output: the last count per word."""
    counts: dict[str, int] = {}
    for key, value in read_all(bootstrap, topic):
        counts[key] = struct.unpack(">q", value)[0]
    return counts


def wait_for(check, timeout: float, what: str, interval: float = 0.3):
    """`check()`'s first truthy value (tests/integration/waits.py's `until`)."""
    return until(check, timeout, interval, what)


def tasks_of(jvm, names) -> dict[str, set[str]]:
    """Active tasks per instance, as the instances run them."""
    return {n: set((jvm.tasks(n) or {}).get("active", ())) for n in names}


def wait_tasks(jvm, names, counts: list[int], timeout: float = 30.0) -> dict[str, set[str]]:
    """Wait until the instances run `counts` active tasks (sorted), and return them."""
    def check():
        tasks = tasks_of(jvm, names)
        return tasks if sorted(len(v) for v in tasks.values()) == sorted(counts) else None
    return wait_for(check, timeout, f"active task counts {counts}")


def wait_value(fetch, expected, timeout: float, what: str):
    """Wait until fetch() == expected; returns the last value fetched."""
    box = []

    def check():
        box[:] = [fetch()]
        return box[0] == expected
    try:
        wait_for(check, timeout, what)
    except AssertionError:
        pass
    return box[0] if box else None


WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "hazel", "iris", "juniper"]


class WordWriter:
    """The count app's input: record n is "<word> n" keyed n, on partition n % partitions;
    `sent` counts what was acknowledged, per word."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self.topic, self.partitions = topic, partitions
        self.sent: Counter = Counter()
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})

    def produce(self, start: int, count: int, per_beat: int = 0) -> None:
        """Records start..start+count-1; every `per_beat` records a flush and a short pause
        (a stream that goes on while the scenario acts)."""
        for n in range(start, start + count):
            word = WORDS[n % len(WORDS)]
            self.producer.produce(self.topic, key=str(n), value=f"{word} {n}", partition=n % self.partitions)
            self.sent[word] += 1
            if per_beat and n % per_beat == 0:
                self.producer.flush(10)
                pace(0.05)
        self.producer.flush(30)
