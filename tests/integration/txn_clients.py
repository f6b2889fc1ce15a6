"""Transactional producers and isolation-aware readers of the four clients, one call each.

`transactions(kind, ...)` runs, with the client `kind`, one committed and one aborted
transaction (records spread over the topic's partitions); `read(kind, ...)` reads a topic
from the beginning (partitions assigned, no group) at an isolation level until it has seen
`expect` records and nothing more arrives for `settle` seconds, and returns the values.
"""

from __future__ import annotations

import asyncio
import time

KINDS = ("confluent-kafka", "kafka-python", "aiokafka", "kgroup")


def transactions(kind: str, bootstrap: str, txn_id: str, topic: str, partitions: int,
                 committed: list[bytes], aborted: list[bytes]) -> None:
    if kind == "confluent-kafka":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
        p.init_transactions(30)
        for values, commit in ((committed, True), (aborted, False)):
            p.begin_transaction()
            for i, v in enumerate(values):
                p.produce(topic, v, partition=i % partitions)
            if commit:
                p.commit_transaction(30)
            else:
                p.flush(30)
                p.abort_transaction(30)
        p.flush(10)
    elif kind == "kafka-python":
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        p.init_transactions()
        for values, commit in ((committed, True), (aborted, False)):
            p.begin_transaction()
            for i, v in enumerate(values):
                p.send(topic, v, partition=i % partitions)
            if commit:
                p.commit_transaction()
            else:
                p.flush()
                p.abort_transaction()
        p.close()
    elif kind == "aiokafka":
        asyncio.run(_aiokafka(bootstrap, txn_id, topic, partitions, committed, aborted))
    else:
        asyncio.run(_ours(bootstrap, txn_id, topic, partitions, committed, aborted))


async def _aiokafka(bootstrap, txn_id, topic, partitions, committed, aborted) -> None:
    from aiokafka import AIOKafkaProducer

    p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=txn_id)
    await p.start()
    try:
        await _commit_then_abort(p, p.begin_transaction, topic, partitions, committed, aborted)
    finally:
        await p.stop()


async def _ours(bootstrap, txn_id, topic, partitions, committed, aborted) -> None:
    from kgroup.client import Producer

    async with Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id}) as p:
        await p.init_transactions()

        async def begin() -> None:
            p.begin_transaction()

        await _commit_then_abort(p, begin, topic, partitions, committed, aborted)


async def _commit_then_abort(p, begin, topic, partitions, committed, aborted) -> None:
    """The two transactions with an asyncio producer (aiokafka's and ours agree on these calls)."""
    for values, commit in ((committed, True), (aborted, False)):
        await begin()
        for i, v in enumerate(values):
            await p.send(topic, v, partition=i % partitions)
        if commit:
            await p.commit_transaction()
        else:
            await p.flush()
            await p.abort_transaction()


class _UntilQuiet:
    """Collects values until `expect` were seen and then nothing new came for `settle`
    seconds (or the deadline passed)."""

    def __init__(self, expect: int, timeout: float, settle: float) -> None:
        self.expect, self.settle = expect, settle
        self.deadline = time.monotonic() + timeout
        self.got: list[bytes] = []
        self._quiet_since: float | None = None

    def add(self, values: list[bytes]) -> bool:
        """Take one poll's values; True when reading should stop."""
        now = time.monotonic()
        self.got += values
        if values or len(self.got) < self.expect:
            self._quiet_since = None
        else:
            self._quiet_since = self._quiet_since or now
        return now >= self.deadline or (self._quiet_since is not None and now - self._quiet_since >= self.settle)


def read(kind: str, bootstrap: str, topic: str, partitions: int, isolation: str, expect: int,
         timeout: float = 30.0, settle: float = 1.0) -> list[bytes]:
    """Values read from the beginning of `topic` at `isolation` (see the module docstring)."""
    q = _UntilQuiet(expect, timeout, settle)
    if kind == "confluent-kafka":
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                      "isolation.level": isolation, "enable.auto.commit": False})
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while not q.add([m.value() for m in c.consume(100, 0.2) if m.error() is None]):
            pass
        c.close()
        return q.got
    if kind == "kafka-python":
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                          auto_offset_reset="earliest")
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        while not q.add([r.value for records in c.poll(timeout_ms=200).values() for r in records]):
            pass
        c.close()
        return q.got
    return asyncio.run(_read_async(kind, bootstrap, topic, partitions, isolation, q))


async def _read_async(kind, bootstrap, topic, partitions, isolation, q: _UntilQuiet) -> list[bytes]:
    if kind == "aiokafka":
        from aiokafka import AIOKafkaConsumer, TopicPartition

        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    else:
        from kgroup.client import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    await c.start()
    try:
        c.assign([TopicPartition(topic, p) for p in range(partitions)])
        while not q.add([r.value for records in (await c.getmany(timeout_ms=200)).values() for r in records]):
            pass
        return q.got
    finally:
        await (c.stop() if kind == "aiokafka" else c.close())
