"""A share consumer in its own process (confluent-kafka's ShareConsumer, or kgroup's), so a
test can SIGSTOP or SIGKILL it.

Usage: python -m tests.integration.share_consumer_process CLIENT BOOTSTRAP GROUP TOPIC MODE POLICY

CLIENT: confluent | kgroup. MODE: implicit | explicit. POLICY (explicit mode):
  accept          acknowledge every record ACCEPT and commit synchronously
  slow            as accept, but each poll's records are held half a second first (printing
                  {"event": "holding"}), so a test finds records in flight at any moment
  hold            take one non-empty poll, acknowledge nothing, then stop polling
  release         RELEASE every record (it comes back until the delivery limit archives it)
  reject          REJECT every record
  first-release   RELEASE a record the first time it is delivered, ACCEPT it the second time
In implicit mode every record is accepted by the next poll.

Prints one JSON line per event: {"event": "record", "p": partition, "o": offset,
"count": delivery count, "t": time}, {"event": "done", "type": "accept", "p": .., "offsets": [..]}
once the broker confirmed an acknowledgement (with its time "t"; "failed" when it did not),
{"event": "ready"} after subscribing. Stops at
SIGTERM (closing the consumer cleanly) or when its parent goes away.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from tests.integration.waits import pace

STOP = False


def say(**event) -> None:
    print(json.dumps(event), flush=True)


def _on_term(signum, frame) -> None:
    global STOP
    STOP = True


def choose(policy: str, count: int) -> str:
    """accept | release | reject for a record delivered `count` times."""
    if policy == "first-release":
        return "release" if count == 1 else "accept"
    if policy == "slow":
        return "accept"
    return policy


def run_confluent(bootstrap: str, group: str, topic: str, mode: str, policy: str) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    types = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": mode})
    consumer.subscribe([topic])
    say(event="ready")
    parent = os.getppid()
    deadline = time.monotonic() + 300
    held = False
    try:
        while not STOP and os.getppid() == parent and time.monotonic() < deadline:
            if held:
                pace(0.1)
                continue
            msgs = consumer.poll(0.5)
            decided: dict[tuple[int, str], list[int]] = {}
            for m in msgs or []:
                if m.error():
                    say(event="error", error=str(m.error()))
                    continue
                say(event="record", p=m.partition(), o=m.offset(), count=m.delivery_count(), t=time.time())
                if mode == "explicit" and policy != "hold":
                    action = choose(policy, m.delivery_count() or 1)
                    consumer.acknowledge(m, types[action])
                    decided.setdefault((m.partition(), action), []).append(m.offset())
            if msgs and policy == "hold":
                held = True
                say(event="holding")
                continue
            if msgs and policy == "slow":
                say(event="holding", t=time.time())
                pace(0.5)
            if mode == "explicit" and decided:
                results = consumer.commit_sync(30)
                failed = {tp.partition for tp, err in results.items() if err is not None}
                for (p, action), offsets in decided.items():
                    if p in failed:
                        say(event="failed", type=action, p=p, offsets=offsets, t=time.time())
                    else:
                        say(event="done", type=action, p=p, offsets=offsets, t=time.time())
    finally:
        if not held:
            consumer.close()
        say(event="closed")


async def run_kgroup(bootstrap: str, group: str, topic: str, mode: str, policy: str) -> None:
    from kgroup.client import AcknowledgeType, ShareConsumer

    types = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}
    async with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": mode}) as consumer:
        consumer.subscribe([topic])
        say(event="ready")
        parent = os.getppid()
        deadline = time.monotonic() + 300
        held = False
        while not STOP and os.getppid() == parent and time.monotonic() < deadline:
            if held:
                await asyncio.sleep(0.1)
                continue
            records = await consumer.poll(0.5)
            decided: dict[tuple[int, str], list[int]] = {}
            for r in records:
                say(event="record", p=r.partition, o=r.offset, count=r.delivery_count, t=time.time())
                if mode == "explicit" and policy != "hold":
                    action = choose(policy, r.delivery_count)
                    consumer.acknowledge(r, types[action])
                    decided.setdefault((r.partition, action), []).append(r.offset)
            if records and policy == "hold":
                held = True
                say(event="holding")
                continue
            if mode == "explicit" and decided:
                results = await consumer.commit_sync()
                failed = {p for (_, p), err in results.items() if err is not None}
                for (p, action), offsets in decided.items():
                    say(event="failed" if p in failed else "done", type=action, p=p, offsets=offsets)
    say(event="closed")


def main() -> None:
    client, bootstrap, group, topic, mode, policy = sys.argv[1:7]
    signal.signal(signal.SIGTERM, _on_term)
    if client == "confluent":
        run_confluent(bootstrap, group, topic, mode, policy)
    else:
        asyncio.run(run_kgroup(bootstrap, group, topic, mode, policy))


if __name__ == "__main__":
    main()
