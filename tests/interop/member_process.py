"""A consumer-group member in its own process: confluent-kafka's Consumer or kgroup's, on the
classic or the consumer protocol, for the mixed-group scenarios.

Usage: python -m tests.interop.member_process CLIENT PROTOCOL BOOTSTRAP GROUP TOPIC

CLIENT: confluent | kgroup. Prints one JSON line per event, each with "ts" (µs since the
epoch, the same clock the Java worker stamps its events with): {"event": "ready"},
{"event": "assigned" | "revoked" | "lost", "partitions": [[topic, partition], ...]} from the
rebalance callbacks, {"event": "records", "records": [[topic, partition, offset, key, value]]},
{"event": "closed"}. Commits after each batch. Stops (closing, so it leaves the group) at
SIGTERM or when its parent goes away.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

STOP = False


def say(event: str, **fields) -> None:
    print(json.dumps({"event": event, "ts": time.time_ns() // 1000, **fields}), flush=True)


def _on_term(signum, frame) -> None:
    global STOP
    STOP = True


def _text(b) -> str | None:
    return None if b is None else (b.decode() if isinstance(b, bytes) else str(b))


def run_confluent(protocol: str, bootstrap: str, group: str, topic: str) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": "confluent"})

    def parts(ps):
        return sorted([p.topic, p.partition] for p in ps)

    consumer.subscribe([topic], on_assign=lambda c, ps: say("assigned", partitions=parts(ps)),
                       on_revoke=lambda c, ps: say("revoked", partitions=parts(ps)),
                       on_lost=lambda c, ps: say("lost", partitions=parts(ps)))
    say("ready")
    parent = os.getppid()
    try:
        while not STOP and os.getppid() == parent:
            msgs = [m for m in consumer.consume(100, 0.2) if m.error() is None]
            if msgs:
                say("records", records=[[m.topic(), m.partition(), m.offset(), _text(m.key()), _text(m.value())]
                                        for m in msgs])
                try:
                    consumer.commit(asynchronous=False)
                except Exception as exc:    # the group moved on meanwhile: the next owner reads them
                    say("commit_failed", error=str(exc))
    finally:
        consumer.close()
        say("closed")


async def run_kgroup(protocol: str, bootstrap: str, group: str, topic: str) -> None:
    from kgroup.client import Consumer
    from kgroup.client.consumer import ConsumerRebalanceListener

    def parts(ps):
        return sorted([p.topic, p.partition] for p in ps)

    class Listener(ConsumerRebalanceListener):
        def on_partitions_assigned(self, assigned):
            say("assigned", partitions=parts(assigned))

        def on_partitions_revoked(self, revoked):
            say("revoked", partitions=parts(revoked))

        def on_partitions_lost(self, lost):
            say("lost", partitions=parts(lost))

    config = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
              "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": "kgroup"}
    async with Consumer(config) as consumer:
        consumer.subscribe([topic], listener=Listener())
        say("ready")
        parent = os.getppid()
        while not STOP and os.getppid() == parent:
            batch = await consumer.getmany(timeout_ms=200)
            records = [r for rs in batch.values() for r in rs] if isinstance(batch, dict) else list(batch)
            if records:
                say("records", records=[[r.topic, r.partition, r.offset, _text(r.key), _text(r.value)]
                                        for r in records])
                try:
                    await consumer.commit()
                except Exception as exc:    # the group moved on meanwhile: the next owner reads them
                    say("commit_failed", error=str(exc))
    say("closed")


def main() -> None:
    client, protocol, bootstrap, group, topic = sys.argv[1:6]
    signal.signal(signal.SIGTERM, _on_term)
    if client == "confluent":
        run_confluent(protocol, bootstrap, group, topic)
    else:
        asyncio.run(run_kgroup(protocol, bootstrap, group, topic))


if __name__ == "__main__":
    main()
