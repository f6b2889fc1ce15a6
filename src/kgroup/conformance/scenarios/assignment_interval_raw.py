"""The assignment interval (KIP-1263): its group configs, and target assignments batched.

Both brokers run with the broker-wide intervals at 0 (the test settings); these scenarios
set a group's own `consumer.assignment.interval.ms` and `share.assignment.interval.ms`.
"""

from __future__ import annotations

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.observe import settled
from kgroup.conformance.scenarios.classic_raw import coordinated
from kgroup.conformance.scenarios.consumer_raw import hb, member_id, owned_of, ready, two_topics
from kgroup.conformance.target import Target

GROUP = 32
KEYS = ["consumer.assignment.interval.ms", "share.assignment.interval.ms"]


def alter(group: str, op: int, **values: str | None):
    """IncrementalAlterConfigs of `group` (consumer_assignment_interval_ms -> its dotted name)."""
    return request("IncrementalAlterConfigs", 1, validate_only=False, resources=[{
        "resource_type": GROUP, "resource_name": group, "configs": [
            {"name": name.replace("_", "."), "config_operation": op, "value": value}
            for name, value in values.items()]}])


def describe(group: str):
    return request("DescribeConfigs", 4, include_synonyms=True, include_documentation=False, resources=[
        {"resource_type": GROUP, "resource_name": group, "configuration_keys": KEYS}])


def value_of(answer, name: str) -> str | None:
    return next((c.value for c in answer.results[0].configs if c.name == name), None)


@scenario("admin", "group configs: the assignment intervals (KIP-1263)",
          rule="consumer.assignment.interval.ms and share.assignment.interval.ms are INT group configs "
               "within group.<kind>.min/max.assignment.interval.ms (0 and 15 s); DescribeConfigs shows the "
               "broker's value until a group sets its own; out of bounds or not a number is INVALID_CONFIG")
async def admin_assignment_interval_configs(t: Target) -> None:
    group = t.names.group()
    raw = await coordinated(t, group)
    await t.ask(raw, "describe a group with no configs", describe(group))
    await t.ask(raw, "set both", alter(group, 0, consumer_assignment_interval_ms="5000",
                                       share_assignment_interval_ms="250"))
    await settled(raw, describe(group), lambda r: value_of(r, "share.assignment.interval.ms") == "250")
    await t.ask(raw, "describe", describe(group))
    await t.ask(raw, "above the maximum", alter(group, 0, consumer_assignment_interval_ms="15001"))
    await t.ask(raw, "negative", alter(group, 0, share_assignment_interval_ms="-1"))
    await t.ask(raw, "not a number", alter(group, 0, consumer_assignment_interval_ms="soon"))
    await t.ask(raw, "the maximum", alter(group, 0, consumer_assignment_interval_ms="15000"))
    await t.ask(raw, "delete one", alter(group, 1, share_assignment_interval_ms=None))
    await settled(raw, describe(group), lambda r: value_of(r, "share.assignment.interval.ms") != "250"
                  and value_of(r, "consumer.assignment.interval.ms") == "15000")
    await t.ask(raw, "describe after", describe(group))


INTERVAL_MS = 5_000


@scenario("consumer", "KIP-1263: a join within the assignment interval waits for the next assignment",
          rule="with consumer.assignment.interval.ms set, a group's first member is assigned at once; a member "
               "joining within the interval moves the group epoch but is reconciled against the last target "
               "(nothing, at its epoch) until a heartbeat after the interval computes the next one")
async def consumer_assignment_interval(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await ready(t, group, 4)
    await t.ask(raw, "set consumer.assignment.interval.ms",
                alter(group, 0, consumer_assignment_interval_ms=str(INTERVAL_MS)))
    await settled(raw, describe(group),
                  lambda r: value_of(r, "consumer.assignment.interval.ms") == str(INTERVAL_MS))
    a, b = member_id(t, "i1"), member_id(t, "i2")
    ra = await t.ask(raw, "A joins: assigned at once", hb(group, a, 0, topics=[topic], owned=[]))
    a_epoch, a_owned = int(ra.member_epoch), owned_of(ra)
    await t.ask(raw, "A owns its assignment", hb(group, a, a_epoch, owned=a_owned))
    rb = await t.ask(raw, "B joins within the interval", hb(group, b, 0, topics=[topic], owned=[]))
    t.add("describe within the interval", await observe.consumer_describe(raw, group))
    await t.ask(raw, "A heartbeats within the interval", hb(group, a, a_epoch, owned=a_owned))
    # Once the interval has passed, one of A's heartbeats computes the next target: A is
    # asked to give partitions up (polled unrecorded: when is timing, not protocol).
    moved: list = []

    async def asked_to_revoke() -> bool:
        r = await raw.call(hb(group, a, a_epoch, owned=a_owned))
        if r.assignment is not None and owned_of(r) != a_owned:
            moved.append(r)
        return bool(moved)
    await observe.until(asked_to_revoke, "the next target assignment", timeout=30)
    t.add("A's assignment after the interval", owned_of(moved[0]))
    a_owned = owned_of(moved[0])
    ra = await t.ask(raw, "A gave them up", hb(group, a, int(moved[0].member_epoch), owned=a_owned))
    await t.ask(raw, "B takes its share", hb(group, b, int(rb.member_epoch), owned=[]))
    t.add("describe after", await observe.consumer_describe(raw, group))


@scenario("consumer", "KIP-1263: a topic dropped within the assignment interval is given up at once",
          rule="with consumer.assignment.interval.ms set, a member that stops subscribing to a topic within "
               "the interval gets no new target yet, but what it holds of that topic goes to pending "
               "revocation at once (Kafka 4.4's subscription-changed step), and it keeps the rest")
async def consumer_assignment_interval_unsubscribe(t: Target) -> None:
    raw, group, topic, other = await two_topics(t, 2)
    await t.ask(raw, "set consumer.assignment.interval.ms",
                alter(group, 0, consumer_assignment_interval_ms=str(INTERVAL_MS)))
    await settled(raw, describe(group),
                  lambda r: value_of(r, "consumer.assignment.interval.ms") == str(INTERVAL_MS))
    a = member_id(t, "i3")
    ra = await t.ask(raw, "A joins both topics: assigned at once", hb(group, a, 0, topics=[topic, other], owned=[]))
    epoch, owned = int(ra.member_epoch), owned_of(ra)
    await t.ask(raw, "A owns its assignment", hb(group, a, epoch, owned=owned))
    r = await t.ask(raw, "A drops the first topic within the interval", hb(group, a, epoch, topics=[other], owned=owned))
    t.add("describe after the drop", await observe.consumer_describe(raw, group))
    kept = [(tid, ps) for tid, ps in owned if tid in {tp.topic_id for tp in r.assignment.topic_partitions}] \
        if r.assignment is not None else owned
    await t.ask(raw, "A reports what it kept", hb(group, a, int(r.member_epoch), owned=kept))
    t.add("describe after", await observe.consumer_describe(raw, group))
