"""Real clients for the differential scenarios, one driver shape for every library.

A `GroupConsumer` runs one consumer of a library on a thread of its own (aiokafka and our
own client on their own event loop there) and takes orders from the scenario: it polls and
keeps what it reads until told to stop polling; then, on order, commits its positions,
and closes. The scenario decides when (after waiting for the group to settle, through its
raw connection), so what the consumers do, and hence what the proxy records, is the same on
both brokers. The libraries: kafka-python, aiokafka, confluent-kafka (librdkafka) with
`group.protocol` classic or consumer, and kgroup's own client; `ShareConsumerDriver` is the
same for confluent-kafka's ShareConsumer.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Any

KINDS = ("kafka-python", "aiokafka", "confluent", "confluent-consumer", "kgroup", "kgroup-consumer")


class GroupConsumer:
    """One consumer of `kind` subscribed to `topic` in `group` (see the module)."""

    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, client_id: str, **options: Any) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown client kind {kind!r}")
        self.kind, self.bootstrap, self.group, self.topic = kind, bootstrap, group, topic
        self.client_id = client_id
        self.options = options
        self.records: list[tuple[int, int, bytes | None]] = []      # (partition, offset, value)
        self.assigned: set[int] = set()
        self.error: BaseException | None = None
        self._orders: queue.Queue[str] = queue.Queue()
        self._done: dict[str, threading.Event] = {k: threading.Event() for k in ("commit", "close", "stopped")}
        self._polling = threading.Event()
        self._polling.set()
        self._thread = threading.Thread(target=self._run, name=f"client-{client_id}", daemon=True)

    def start(self) -> "GroupConsumer":
        self._thread.start()
        return self

    # ---- orders (from the scenario's thread or loop) ---------------------------------------

    def stop_polling(self) -> None:
        self._polling.clear()

    def order(self, what: str, timeout: float = 60.0) -> None:
        """`commit` or `close`; blocks until done (raises what the client raised)."""
        self._orders.put(what)
        if not self._done[what].wait(timeout):
            raise TimeoutError(f"{self.client_id}: {what} did not finish in {timeout:g} s")
        if self.error is not None:
            raise self.error

    async def aorder(self, what: str, timeout: float = 60.0) -> None:
        await asyncio.to_thread(self.order, what, timeout)

    def values(self) -> list[bytes | None]:
        return [v for _, _, v in self.records]

    # ---- the thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            if self.kind in ("aiokafka", "kgroup", "kgroup-consumer"):
                asyncio.run(getattr(self, f"_run_{self.kind.split('-')[0]}")())
            else:
                getattr(self, f"_run_{self.kind.split('-')[0].replace('-', '_')}")()
        except BaseException as exc:  # noqa: BLE001 (surfaced by the next order)
            self.error = exc
        finally:
            for event in self._done.values():
                event.set()

    def _next_order(self) -> str | None:
        try:
            return self._orders.get_nowait()
        except queue.Empty:
            return None

    def _run_kafka(self) -> None:       # kafka-python
        from kafka import KafkaConsumer

        from kgroup.testing.kafka_python_pending_join import count_pending_join_as_rejoin

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.client_id,
                                 auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6_000,
                                 heartbeat_interval_ms=500, **self.options)
        # Under load a 100 ms poll can end between JoinGroup and SyncGroup and leave kafka-python
        # REBALANCING for good, expelled a session later, on either broker (kafka_python_pending_join).
        count_pending_join_as_rejoin(consumer)
        consumer.subscribe([self.topic])
        while True:
            if self._polling.is_set():
                for tp, batch in consumer.poll(timeout_ms=100).items():
                    self.records += [(tp.partition, r.offset, r.value) for r in batch]
                self.assigned = {tp.partition for tp in consumer.assignment()}
            else:
                time.sleep(0.05)
            order = self._next_order()
            if order == "commit":
                consumer.commit()
                self._done["commit"].set()
            elif order == "close":
                consumer.close()
                self._done["close"].set()
                return

    def _run_confluent(self) -> None:
        from confluent_kafka import Consumer

        modern = self.kind == "confluent-consumer"
        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.client_id,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "group.protocol": "consumer" if modern else "classic"}
        if not modern:
            config.update({"session.timeout.ms": 6_000, "heartbeat.interval.ms": 500})
        config.update(self.options)
        consumer = Consumer(config)
        consumer.subscribe([self.topic])
        while True:
            if self._polling.is_set():
                for m in consumer.consume(num_messages=100, timeout=0.1):
                    if m.error() is None:
                        self.records.append((m.partition(), m.offset(), m.value()))
                self.assigned = {tp.partition for tp in consumer.assignment()}
            else:
                time.sleep(0.05)
            order = self._next_order()
            if order == "commit":
                consumer.commit(asynchronous=False)
                self._done["commit"].set()
            elif order == "close":
                consumer.close()
                self._done["close"].set()
                return

    async def _run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=self.client_id,
                                    auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6_000,
                                    heartbeat_interval_ms=500, **self.options)
        await consumer.start()
        consumer.subscribe([self.topic])
        await self._async_loop(consumer, lambda b: [(tp.partition, r.offset, r.value)
                                                    for tp, rs in b.items() for r in rs])

    async def _run_kgroup(self) -> None:
        from kgroup.client import Consumer

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.client_id,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False}
        if self.kind == "kgroup-consumer":
            config["group.protocol"] = "consumer"
        else:
            config.update({"session.timeout.ms": 6_000, "heartbeat.interval.ms": 500})
        config.update(self.options)
        consumer = Consumer(config)
        await consumer.start()
        consumer.subscribe([self.topic])
        await self._async_loop(consumer, lambda b: [(tp.partition, r.offset, r.value)
                                                    for tp, rs in b.items() for r in rs])

    async def _async_loop(self, consumer: Any, unpack: Any) -> None:
        while True:
            if self._polling.is_set():
                self.records += unpack(await consumer.getmany(timeout_ms=100))
                self.assigned = {tp.partition for tp in consumer.assignment()}
            else:
                await asyncio.sleep(0.05)
            order = self._next_order()
            if order == "commit":
                await consumer.commit()
                self._done["commit"].set()
            elif order == "close":
                await consumer.stop() if hasattr(consumer, "stop") else await consumer.close()
                self._done["close"].set()
                return


class ShareConsumerDriver:
    """confluent-kafka's ShareConsumer (librdkafka's KIP-932 client) on a thread: polls,
    acknowledges what `policy(record)` says (accept/release/reject) with explicit
    acknowledgement, commits after each poll, until told to close."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str, policy: Any = None) -> None:
        self.bootstrap, self.group, self.topic, self.client_id = bootstrap, group, topic, client_id
        self.policy = policy or (lambda record: "accept")
        self.deliveries: list[tuple[int, int, int, str]] = []     # (partition, offset, delivery count, action)
        self.error: BaseException | None = None
        self._close = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"share-{client_id}", daemon=True)

    def start(self) -> "ShareConsumerDriver":
        self._thread.start()
        return self

    def close(self, timeout: float = 60.0) -> None:
        self._close.set()
        if not self._closed.wait(timeout):
            raise TimeoutError(f"{self.client_id}: close did not finish")
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            from confluent_kafka import AcknowledgeType, ShareConsumer

            types = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE,
                     "reject": AcknowledgeType.REJECT}
            consumer = ShareConsumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                                      "client.id": self.client_id, "share.acknowledgement.mode": "explicit"})
            consumer.subscribe([self.topic])
            try:
                while not self._close.is_set():
                    decided = False
                    for m in consumer.poll(0.3) or []:
                        if m.error():
                            continue
                        action = self.policy(m)
                        consumer.acknowledge(m, types[action])
                        self.deliveries.append((m.partition(), m.offset(), m.delivery_count() or 1, action))
                        decided = True
                    if decided:
                        consumer.commit_sync(30)
            finally:
                consumer.close()
        except BaseException as exc:  # noqa: BLE001
            self.error = exc
        finally:
            self._closed.set()
