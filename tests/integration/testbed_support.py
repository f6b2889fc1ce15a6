"""Helpers of the test-bed tests: names, fault spies, waits, a consumer-protocol member."""

from __future__ import annotations

import threading
import uuid
from contextlib import contextmanager
from typing import Iterator
from tests.integration.waits import until

CONSUMER_PROTOCOL_FAST = {
    "consumer_min_session_timeout_ms": 6_000, "consumer_session_timeout_ms": 6_000,
    "consumer_min_heartbeat_interval_ms": 500, "consumer_heartbeat_interval_ms": 500,
}


def names(prefix: str) -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:6]
    return f"{prefix}-topic-{suffix}", f"{prefix}-group-{suffix}"


def hits(broker, fault_id: str) -> int:
    """Hits of an armed fault (a used-up fault is gone: None)."""
    return next((f["hits"] for f in broker.faults() if f["id"] == fault_id), None)


def armed(broker, fault_id: str) -> bool:
    return any(f["id"] == fault_id for f in broker.faults())


def wait_for_generation(broker, group: str, generation: int) -> dict:
    return until(lambda: (view := broker.wait_for_group(group, state="Stable", timeout_ms=30_000))["generation"]
                 >= generation and view, 60, what=f"{group} Stable at generation {generation}")


class LostTracker(threading.Thread):
    """A confluent-kafka consumer on the consumer protocol recording assign/revoke/lost."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.events: list[tuple[str, tuple[int, ...]]] = []
        self.stopping = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from confluent_kafka import Consumer

        def record(kind):
            return lambda c, ps: self.events.append((kind, tuple(sorted(p.partition for p in ps))))

        try:
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                                 "group.protocol": "consumer", "client.id": "rdk-fenced",
                                 "auto.offset.reset": "earliest"})
            consumer.subscribe([self.topic], on_assign=record("assigned"), on_revoke=record("revoked"),
                               on_lost=record("lost"))
            while not self.stopping.is_set():
                consumer.poll(0.1)
            consumer.close()
        except BaseException as exc:
            self.error = exc


@contextmanager
def consumer_protocol_member(broker, prefix: str, partitions: int) -> Iterator[tuple[LostTracker, str, str]]:
    """A LostTracker on a new topic and group, Stable before the body runs; stopped after,
    and checked to have raised nothing."""
    topic, group = names(prefix)
    broker.create_topic(topic, partitions)
    member = LostTracker(broker.bootstrap, group, topic)
    member.start()
    try:
        broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        yield member, topic, group
    finally:
        member.stopping.set()
        member.join(30)
    assert member.error is None
