"""The share-group dead-letter queue (KIP-1191, Kafka 4.4 at share.version 2): which records
are copied to a group's DLQ topic, and what each copy holds, asked with exact requests.

Normalized: a DLQ record's timestamp (the time it was written) is shown as whether it lies
between the moment before the acknowledgement that archived it and the moment it was read."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.share_raw import ACCEPT, REJECT, RELEASE, member_a_joined, set_group_configs
from kgroup.conformance.target import Target
from kgroup.wire.record_batch import decode_records, split_batches

ENABLE = {"errors.deadletterqueue.group.enable": "true"}


async def dlq_records(raw: Any, topic: str, count: int, since_ms: int, timeout: float = 15.0) -> list[dict]:
    """The DLQ topic's records (once `count` are there, or after `timeout`), timestamps normalized."""
    deadline = time.monotonic() + timeout
    while True:
        p = await observe.fetch(raw, topic, 0, 0)
        records = [r for b in split_batches(bytes(p.records or b"")) for r in decode_records(b)]
        if len(records) >= count or time.monotonic() > deadline:
            now = int(time.time() * 1000)
            return [{"offset": r.offset, "key": r.key, "value": r.value,
                     "timestamp": "when written" if since_ms - 5 <= r.timestamp <= now + 5 else r.timestamp,
                     "headers": [(k, v) for k, v in r.headers]} for r in records]
        await asyncio.sleep(0.25)


@scenario("share", "dead-letter queue: rejected and over-limit records (KIP-1191)",
          rule="with errors.deadletterqueue.topic.name naming a dlq.-prefixed topic that has "
               "errors.deadletterqueue.group.enable=true, a record a member REJECTs and a record released at "
               "share.delivery.count.limit are copied there: no key, the original value when "
               "errors.deadletterqueue.copy.record.enable is true, the time written, and headers naming the "
               "topic, partition, offset, group, delivery count and why; accepted records are not")
async def share_dlq_rejected_and_over_limit(t: Target) -> None:
    dlq = f"dlq.{t.names.topic('d')}"
    raw0 = await t.raw()
    await observe.create_topic(raw0, dlq, 1, ENABLE)
    raw, group, topic, a = await member_a_joined(
        t, values=4, share_delivery_count_limit=2, errors_deadletterqueue_topic_name=dlq,
        errors_deadletterqueue_copy_record_enable="true")
    before = int(time.time() * 1000)
    await a.fetch("first fetch", wait_for=4)
    await a.fetch("reject 0, release 1, accept 2-3", [(0, 0, REJECT), (1, 1, RELEASE), (2, 3, ACCEPT)],
                  wait_for=1)
    await a.acknowledge("release 1 at the delivery limit", [(1, 1, RELEASE)])
    t.add("the DLQ topic", await dlq_records(raw, dlq, 2, before))
    t.add("offsets", await observe.share_offsets(raw, group, topic))
    await a.close()


@scenario("share", "dead-letter queue: no copy of the value, and topics that take none (KIP-1191)",
          rule="without errors.deadletterqueue.copy.record.enable a DLQ record has no value; a DLQ topic "
               "without errors.deadletterqueue.group.enable=true gets nothing (the record is archived anyway); "
               "a DLQ topic name without the broker's errors.deadletterqueue.topic.name.prefix is accepted as a group config")
async def share_dlq_value_and_refusals(t: Target) -> None:
    dlq, closed = f"dlq.{t.names.topic('d')}", f"dlq.{t.names.topic('x')}"
    raw0 = await t.raw()
    await observe.create_topic(raw0, dlq, 1, ENABLE)
    await observe.create_topic(raw0, closed, 1)
    raw, group, topic, a = await member_a_joined(t, values=2, errors_deadletterqueue_topic_name=dlq)
    before = int(time.time() * 1000)
    await a.fetch("first fetch", wait_for=2)
    await a.acknowledge("reject 0", [(0, 0, REJECT)])
    t.add("the DLQ topic", await dlq_records(raw, dlq, 1, before))
    await t.ask(raw, "point the group at a topic without the DLQ flag", set_dlq(group, closed))
    await observe.group_configs_visible(raw, group, errors_deadletterqueue_topic_name=closed)
    await a.acknowledge("reject 1", [(1, 1, REJECT)])
    t.add("that topic", await dlq_records(raw, closed, 1, before, timeout=3.0))
    await t.ask(raw, "a DLQ topic name without the dlq. prefix", set_dlq(group, t.names.topic("np")))
    t.add("offsets", await observe.share_offsets(raw, group, topic))
    await a.close()


def set_dlq(group: str, name: str) -> Any:
    return set_group_configs(group, errors_deadletterqueue_topic_name=name)
