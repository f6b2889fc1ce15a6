"""Thin drivers for the three real client libraries, so one scenario runs against each.

Each consumer runs on its own thread (aiokafka: its own event loop on a thread) and records
what it was assigned and what it consumed; tests read those records.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from kgroup.testing.kafka_python_pending_join import count_pending_join_as_rejoin
from tests.integration.waits import wait_for  # noqa: F401 (the tests import it from here too)

SESSION_MS = 6_000


@dataclass
class Tally:
    name: str
    assigned: set = field(default_factory=set)
    events: list = field(default_factory=list)          # (time, "assigned"/"revoked", partitions)
    consumed: list = field(default_factory=list)        # (partition, offset, key, value)
    committed: bool = False
    error: BaseException | None = None

    def by_partition(self) -> dict[int, int]:
        counts: dict[int, int] = defaultdict(int)
        for p, *_ in self.consumed:
            counts[p] += 1
        return dict(counts)


class _Recording:
    """Rebalance callbacks that record into a Tally (mixed into each library's listener)."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def on_partitions_revoked(self, revoked):
        self.tally.events.append((time.monotonic(), "revoked", {tp.partition for tp in revoked}))
        self.tally.assigned -= {tp.partition for tp in revoked}

    def on_partitions_assigned(self, assigned):
        self.tally.events.append((time.monotonic(), "assigned", {tp.partition for tp in assigned}))
        self.tally.assigned |= {tp.partition for tp in assigned}


class ConsumerThread(threading.Thread):
    """Polls until stopped; `commit_and_stop()` commits synchronously, then closes."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, name: str, **options) -> None:
        super().__init__(name=name, daemon=True)
        self.kind, self.bootstrap, self.group, self.topic = kind, bootstrap, group, topic
        self.options = options
        self.tally = Tally(name)
        self._stop = threading.Event()
        self._commit = threading.Event()
        self._close = True
        self.closed = threading.Event()
        self.commit_done = threading.Event()

    def run(self) -> None:
        try:
            if self.kind == "aiokafka":
                asyncio.run(self._run_aiokafka())
            else:
                getattr(self, f"_run_{self.kind.replace('-', '_')}")()
        except BaseException as exc:  # surfaced by the test
            self.tally.error = exc
        finally:
            self.closed.set()

    def commit_now(self, timeout: float = 30) -> None:
        """Commit what this consumer has read of its current partitions, and keep polling."""
        self.commit_done.clear()
        self._commit.set()
        if not self.commit_done.wait(timeout):
            raise AssertionError(f"{self.name} did not commit within {timeout}s")

    def _committed(self) -> None:
        self._commit.clear()
        self.tally.committed = True
        self.commit_done.set()

    def stop(self, commit: bool = True, close: bool = True, timeout: float = 30) -> None:
        self._close = close
        if commit:
            self._commit.set()
        self._stop.set()
        self.closed.wait(timeout)

    # ---- kafka-python ---------------------------------------------------------------------

    def _run_kafka_python(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        tally = self.tally

        class Listener(_Recording, ConsumerRebalanceListener):
            pass

        options = dict(bootstrap_servers=self.bootstrap, group_id=self.group, auto_offset_reset="earliest",
                       enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000,
                       client_id=self.name)
        options.update(self.options)
        consumer = KafkaConsumer(**options)
        count_pending_join_as_rejoin(consumer)
        consumer.subscribe([self.topic], listener=Listener(tally))
        while not self._stop.is_set():
            for tp, records in consumer.poll(timeout_ms=200).items():
                tally.consumed.extend((tp.partition, r.offset, r.key, r.value) for r in records)
            if self._commit.is_set():
                consumer.commit()
                self._committed()
        if self._commit.is_set():
            consumer.commit()
            self._committed()
        if self._close:
            consumer.close()

    # ---- confluent-kafka ------------------------------------------------------------------

    def _run_confluent_kafka(self) -> None:
        from confluent_kafka import Consumer

        tally = self.tally

        def on_assign(consumer, partitions):
            tally.events.append((time.monotonic(), "assigned", {p.partition for p in partitions}))
            tally.assigned |= {p.partition for p in partitions}
            if self.options.get("partition.assignment.strategy") == "cooperative-sticky":
                consumer.incremental_assign(partitions)
            else:
                consumer.assign(partitions)

        def on_revoke(consumer, partitions):
            tally.events.append((time.monotonic(), "revoked", {p.partition for p in partitions}))
            tally.assigned -= {p.partition for p in partitions}
            if self.options.get("partition.assignment.strategy") == "cooperative-sticky":
                consumer.incremental_unassign(partitions)
            else:
                consumer.unassign()

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False, "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 1000,
                  "client.id": self.name, "group.protocol": "classic"}
        config.update(self.options)
        consumer = Consumer(config)
        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)
        from confluent_kafka import TopicPartition

        def commit() -> None:
            # The next offset to read of each partition this consumer owns now.
            positions = {}
            for p, offset, *_ in tally.consumed:
                if p in tally.assigned:
                    positions[p] = max(positions.get(p, -1), offset + 1)
            if positions:
                consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in positions.items()],
                                asynchronous=False)
            self._committed()

        while not self._stop.is_set():
            for msg in consumer.consume(num_messages=1000, timeout=0.2):
                if msg.error() is None:
                    tally.consumed.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
            if self._commit.is_set():
                commit()
        if self._commit.is_set():
            commit()
        if self._close:
            consumer.close()

    # ---- aiokafka -------------------------------------------------------------------------

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

        tally = self.tally

        class Listener(_Recording, ConsumerRebalanceListener):
            pass

        options = dict(bootstrap_servers=self.bootstrap, group_id=self.group, auto_offset_reset="earliest",
                       enable_auto_commit=False, session_timeout_ms=SESSION_MS, heartbeat_interval_ms=1000,
                       client_id=self.name)
        options.update(self.options)
        consumer = AIOKafkaConsumer(**options)
        await consumer.start()
        consumer.subscribe([self.topic], listener=Listener(tally))
        try:
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=200)
                for tp, records in batches.items():
                    tally.consumed.extend((tp.partition, r.offset, r.key, r.value) for r in records)
                if self._commit.is_set():
                    await consumer.commit()
                    self._committed()
            if self._commit.is_set():
                await consumer.commit()
                self._committed()
        finally:
            if self._close:
                await consumer.stop()


def produce_keyed(bootstrap: str, topic: str, count: int) -> None:
    """Produce `count` keyed messages with confluent-kafka (acks=all) and wait for them all."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    failures = []
    for i in range(count):
        producer.produce(topic, key=f"key-{i}".encode(), value=f"value-{i}".encode(),
                         on_delivery=lambda err, msg: failures.append(err) if err else None)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert not failures, failures[:3]


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(10)


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kgroup-test-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def caught_up(consumer: "ConsumerThread", ends: dict[int, int]) -> bool:
    """The consumer has read each partition it owns now up to the end."""
    last: dict[int, int] = {}
    for p, offset, *_ in list(consumer.tally.consumed):
        last[p] = max(last.get(p, -1), offset)
    return all(last.get(p, -1) >= ends[p] - 1 for p in consumer.tally.assigned)


def mock_cluster_with_topic(messages: int):
    """librdkafka's built-in mock cluster, with a new topic holding `messages` keyed records.

    Returns (holder, bootstrap, topic, partitions); the mock lives as long as `holder`.
    """
    import uuid

    from confluent_kafka import Producer

    holder = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "", "log_level": 0})
    broker = next(iter(holder.list_topics(timeout=5).brokers.values()))
    bootstrap = f"{broker.host}:{broker.port}"
    topic = f"mock-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(messages):
        producer.produce(topic, key=str(i).encode(), value=b"v")
    assert producer.flush(10) == 0
    partitions = len(producer.list_topics(topic, timeout=5).topics[topic].partitions)
    return holder, bootstrap, topic, partitions
