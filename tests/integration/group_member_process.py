"""One consumer-group member of a real client library, in its own process.

    python -m tests.integration.group_member_process KIND BOOTSTRAP GROUP TOPIC NAME

KIND: confluent-cooperative (classic, cooperative-sticky), confluent-consumer
(group.protocol=consumer), kafka-python, aiokafka, kgroup-classic, kgroup-consumer.

Prints one JSON line per event, with the wall-clock time `t`:
  {"e": "assigned" | "revoked" | "lost", "p": [partitions], "gen": generation or epoch or null}
  {"e": "progress", "pos": {partition: next offset}}      (every 200 ms, when it moved)
  {"e": "committed", "offsets": {partition: offset}}       (a synchronous commit that succeeded)
  {"e": "commit_failed", "error": "..."}
  {"e": "poll_error", "error": "..."}   (a client's transient error out of poll; it goes on)
  {"e": "error", "error": "..."}
It consumes from the earliest offset, commits its positions every second, and on end of
stdin (or SIGTERM) commits once more, closes (leaving the group) and prints {"e": "closed"}.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from tests.integration.waits import pace

# Longer than a coordinator stopped for 15 s: a member's requests to a stopped node hang
# (no error tells the client to look elsewhere) until the node answers again, so that is
# when most clients rediscover the coordinator (librdkafka re-queries a coordinator it is
# connected to only every coordinator.query.interval.ms, 10 minutes by default).
SESSION_MS = 25000
HEARTBEAT_MS = 500
COMMIT_EVERY_S = 1.0
PROGRESS_EVERY_S = 0.2

_lock = threading.Lock()


def log_client(logger: str, name: str) -> None:
    """The client library's own account of its coordinator, joins and heartbeats (its INFO
    lines) goes to stderr, whose tail a test shows when this member stops making progress;
    every request too, into DIR/<name>.log, with KGROUP_MEMBER_DEBUG_DIR=DIR set."""
    import logging
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s"))
    handler.setLevel(logging.INFO)
    log = logging.getLogger(logger)
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    if os.environ.get("KGROUP_MEMBER_DEBUG_DIR"):
        debug = logging.FileHandler(os.path.join(os.environ["KGROUP_MEMBER_DEBUG_DIR"], f"{name}.log"))
        debug.setFormatter(handler.formatter)
        log.addHandler(debug)
        log.setLevel(logging.DEBUG)


def say(event: str, **fields) -> None:
    line = json.dumps({"e": event, "t": time.time(), **fields})
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Member:
    def __init__(self, kind: str, bootstrap: str, group: str, topic: str, name: str) -> None:
        self.kind, self.bootstrap, self.group, self.topic, self.name = kind, bootstrap, group, topic, name
        self.stop = threading.Event()
        self.positions: dict[int, int] = {}
        self.owned: set[int] = set()
        self._reported: dict[int, int] = {}
        self._last_progress = 0.0
        self._last_commit = time.monotonic()

    # ---- shared bookkeeping ----------------------------------------------------------------

    def record(self, partition: int, offset: int) -> None:
        if offset + 1 > self.positions.get(partition, 0):
            self.positions[partition] = offset + 1

    def tick(self) -> bool:
        """Report progress; True when a commit is due."""
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            moved = {p: o for p, o in self.positions.items() if self._reported.get(p) != o}
            if moved:
                self._reported.update(moved)
                say("progress", pos=moved)
        if now - self._last_commit >= COMMIT_EVERY_S:
            self._last_commit = now
            return True
        return False

    def to_commit(self) -> dict[int, int]:
        return {p: o for p, o in self.positions.items() if p in self.owned}

    async def commit_async(self, consumer, tp_class) -> None:
        """Commit the positions of the owned partitions (aiokafka's and kgroup's API)."""
        offsets = self.to_commit()
        if not offsets:
            return
        try:
            await consumer.commit({tp_class(self.topic, p): o for p, o in offsets.items()})
            say("committed", offsets=offsets)
        except Exception as exc:  # noqa: BLE001 (reported, the test decides)
            say("commit_failed", error=f"{type(exc).__name__}: {exc}")

    def assigned(self, partitions, gen) -> None:
        self.owned |= set(partitions)
        say("assigned", p=sorted(partitions), gen=gen)

    def revoked(self, partitions, event: str = "revoked") -> None:
        self.owned -= set(partitions)
        # What it read while it owned them is history: if one comes back, its position is
        # what it reads then (the client resumes from the group's commit). Kept, a member
        # given back a partition it read long ago committed that old position over the
        # newer commits of the members in between, if it closed before reading from it
        # again (test_cluster_chaos, 2026-12-01: a kafka-python member's final commit put
        # 52 and 56 over the 3,033 and 3,031 another member had committed; the broker
        # rightly took a commit of the partitions' owner).
        for p in partitions:
            self.positions.pop(p, None)
        say(event, p=sorted(partitions))

    # ---- confluent-kafka -----------------------------------------------------------------

    def run_confluent(self, protocol: str) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol}
        if protocol == "classic":
            config.update({"partition.assignment.strategy": "cooperative-sticky",
                           "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
        consumer = Consumer(config)

        def on_assign(c, ps):
            self.assigned([p.partition for p in ps], None)
            c.incremental_assign(ps) if protocol == "classic" else None

        def on_revoke(c, ps):
            self.revoked([p.partition for p in ps])
            c.incremental_unassign(ps) if protocol == "classic" else None

        def on_lost(c, ps):
            self.revoked([p.partition for p in ps], "lost")
            c.incremental_unassign(ps) if protocol == "classic" else None

        consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

        def commit() -> None:
            offsets = self.to_commit()
            if not offsets:
                return
            try:
                consumer.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                                asynchronous=False)
                say("committed", offsets=offsets)
            except KafkaException as exc:
                say("commit_failed", error=str(exc))

        while not self.stop.is_set():
            for msg in consumer.consume(num_messages=500, timeout=0.2):
                if msg.error() is None:
                    self.record(msg.partition(), msg.offset())
            if self.tick():
                commit()
        commit()
        consumer.close()

    # ---- kafka-python --------------------------------------------------------------------

    def run_kafka_python(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError, UnknownBrokerIdError
        from kafka.structs import OffsetAndMetadata

        from kgroup.testing.kafka_python_pending_join import count_pending_join_as_rejoin

        member = self
        log_client("kafka", self.name)

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member.revoked([tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                gen = consumer._coordinator._generation.generation_id
                member.assigned([tp.partition for tp in assigned], gen)

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap.split(","), group_id=self.group,
                                 client_id=self.name, auto_offset_reset="earliest", enable_auto_commit=False,
                                 session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
        count_pending_join_as_rejoin(consumer)
        consumer.subscribe([self.topic], listener=Listener())

        def commit() -> None:
            offsets = self.to_commit()
            if not offsets:
                return
            try:
                consumer.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                                 for p, o in offsets.items()})
                say("committed", offsets=offsets)
            except Exception as exc:  # noqa: BLE001 (reported, the test decides)
                say("commit_failed", error=f"{type(exc).__name__}: {exc}")

        while not self.stop.is_set():
            try:
                polled = consumer.poll(timeout_ms=200)
            except KafkaError as exc:
                # kafka-python 3.0 raises out of poll() when a node it was about to send to
                # left the metadata meanwhile (a kill -9: kgroup drops a node whose lock is
                # free at once): UnknownBrokerIdError, not retriable by its class, though the
                # consumer goes on fine at the next poll, as an application's loop would.
                # Any other error that is not retriable still ends the member.
                if not (isinstance(exc, UnknownBrokerIdError) or exc.retriable):
                    raise
                say("poll_error", error=f"{type(exc).__name__}: {exc}")
                continue
            for tp, records in polled.items():
                for r in records:
                    self.record(tp.partition, r.offset)
            if self.tick():
                commit()
        commit()
        consumer.close()

    # ---- aiokafka -------------------------------------------------------------------------

    async def run_aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition

        member = self
        log_client("aiokafka", self.name)

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member.revoked([tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                member.assigned([tp.partition for tp in assigned], consumer._coordinator.generation)

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap.split(","), group_id=self.group,
                                    client_id=self.name, auto_offset_reset="earliest", enable_auto_commit=False,
                                    session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
        await consumer.start()
        consumer.subscribe([self.topic], listener=Listener())

        async def commit() -> None:
            await self.commit_async(consumer, TopicPartition)

        try:
            while not self.stop.is_set():
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    for r in records:
                        self.record(tp.partition, r.offset)
                if self.tick():
                    await commit()
            await commit()
        finally:
            await consumer.stop()

    # ---- kgroup ---------------------------------------------------------------------------

    async def run_kgroup(self, protocol: str) -> None:
        from kgroup.client import Consumer, ConsumerRebalanceListener, TopicPartition

        member = self
        log_client("kgroup.client", self.name)

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                member.revoked([tp.partition for tp in revoked])

            def on_partitions_assigned(self, assigned):
                member.assigned([tp.partition for tp in assigned], consumer.group.member.generation)

            def on_partitions_lost(self, lost):
                member.revoked([tp.partition for tp in lost], "lost")

        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group, "client.id": self.name,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False, "group.protocol": protocol}
        if protocol == "classic":
            config.update({"session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": HEARTBEAT_MS})
        consumer = Consumer(config)

        async def commit() -> None:
            await self.commit_async(consumer, TopicPartition)

        async with consumer:
            consumer.subscribe([self.topic], listener=Listener())
            while not self.stop.is_set():
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    for r in records:
                        self.record(tp.partition, r.offset)
                if self.tick():
                    await commit()
            await commit()

    # ---- entry ----------------------------------------------------------------------------

    def run(self) -> None:
        kind = self.kind
        if kind == "confluent-cooperative":
            self.run_confluent("classic")
        elif kind == "confluent-consumer":
            self.run_confluent("consumer")
        elif kind == "kafka-python":
            self.run_kafka_python()
        elif kind == "aiokafka":
            asyncio.run(self.run_aiokafka())
        elif kind in ("kgroup-classic", "kgroup-consumer"):
            asyncio.run(self.run_kgroup(kind.removeprefix("kgroup-")))
        else:
            raise SystemExit(f"unknown kind {kind!r}")


def main() -> None:
    member = Member(*sys.argv[1:6])

    def watch_stdin() -> None:
        sys.stdin.read()
        member.stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: member.stop.set())
    parent = os.getppid()
    threading.Thread(target=lambda: [pace(1) for _ in iter(lambda: os.getppid() == parent, False)]
                     or member.stop.set(), daemon=True).start()
    try:
        member.run()
    except Exception as exc:  # noqa: BLE001 (the test reads it)
        say("error", error=f"{type(exc).__name__}: {exc}")
        raise SystemExit(3) from None
    say("closed")


if __name__ == "__main__":
    main()
