"""The application under test: a consumer that records each order once.

It reads the `orders` topic in the group `orders-app`, stores every order by its key (so an
order read twice is stored once: processing is idempotent), and commits after each batch.
When a commit fails (the group moved on: a fenced commit, a coordinator that went away) it
carries on: librdkafka rejoins on its own, and whatever was not committed is read again and
stored again harmlessly. That is the behaviour its tests pin down with kgroup's faults.
"""

from __future__ import annotations

import threading

from confluent_kafka import Consumer, KafkaException


class OrdersApp(threading.Thread):
    def __init__(self, bootstrap: str, topic: str = "orders", group: str = "orders-app") -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "client.id": "orders-app",
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "heartbeat.interval.ms": 500, "session.timeout.ms": 10_000,
            # Above the fetch long-poll (fetch.wait.max.ms, 500 ms): after NOT_COORDINATOR on a
            # commit, librdkafka (2.x) asks where the coordinator is on the connection its fetch
            # waits on, and a commit retry due before the answer fails on the reconnection and
            # loses the coordinator again, in a loop that can outlast the session.
            "retry.backoff.ms": 1000,
        })
        self.topic = topic
        self.orders: dict[bytes, bytes] = {}     # key -> order: the app's "database"
        self.failed_commits: list[str] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        self.consumer.subscribe([self.topic])
        while not self.stopping.is_set():
            batch = [m for m in self.consumer.consume(num_messages=100, timeout=0.2) if m.error() is None]
            for message in batch:
                self.orders[message.key()] = message.value()
            if batch:
                try:
                    self.consumer.commit(asynchronous=False)
                except KafkaException as exc:
                    self.failed_commits.append(exc.args[0].name())
        self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
