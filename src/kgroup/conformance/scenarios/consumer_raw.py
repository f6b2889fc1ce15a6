"""The consumer protocol (KIP-848), asked with exact ConsumerGroupHeartbeat sequences."""

from __future__ import annotations

import time
import uuid

from kgroup.assignors.consumer_protocol import encode_subscription
from kgroup.assignors.spec import Subscription
from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import heartbeat, join, sync
from kgroup.conformance.target import Target

REBALANCE_MS = 10_000


def hb(group: str, member: str, epoch: int, *, topics: list[str] | None = None, regex: str | None = None,
       owned: list[tuple[object, list[int]]] | None = None, instance: str | None = None,
       assignor: str | None = None, rebalance_ms: int = REBALANCE_MS, version: int = 1):
    return request("ConsumerGroupHeartbeat", version, group_id=group, member_id=member, member_epoch=epoch,
                   instance_id=instance, rack_id=None, rebalance_timeout_ms=rebalance_ms,
                   subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
                   topic_partitions=None if owned is None else [
                       {"topic_id": tid, "partitions": ps} for tid, ps in owned])


def member_id(t: Target, name: str) -> str:
    """A member id as a KIP-848 client makes one (v1: the client generates it) — the same on
    both brokers, since assignors order members by id."""
    return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{t.names.prefix}-{name}"))


def owned_of(response) -> list[tuple[object, list[int]]]:
    """What a member owns once it has taken the assignment in `response`."""
    if response is None or response.assignment is None:
        return []
    return [(tp.topic_id, sorted(int(p) for p in tp.partitions)) for tp in response.assignment.topic_partitions]


async def take(t: Target, raw, group: str, member: str, label: str, req, owns: str, *,
               instance: str | None = None) -> tuple[int, list[tuple[object, list[int]]]]:
    """Ask `req` (a heartbeat of `member` that owns nothing yet), then heartbeat owning the
    assignment it answered; returns the member's epoch and what it owns. Both answers go
    into the transcript, under `label` and `owns`."""
    r = await t.ask(raw, label, req)
    epoch, owned = int(r.member_epoch), owned_of(r)
    await t.ask(raw, owns, hb(group, member, epoch, owned=owned, instance=instance))
    return epoch, owned


async def joined(t: Target, raw, group: str, member: str, topic: str, *, label: str = "join",
                 owns: str = "owns its assignment", instance: str | None = None):
    """`member` joins (epoch 0, subscribed to `topic`) and owns its assignment: (epoch, owned)."""
    return await take(t, raw, group, member, label, hb(group, member, 0, topics=[topic], owned=[], instance=instance),
                      owns, instance=instance)


async def b_joins(t: Target, raw, group: str, topic: str, a: str, b: str, b_label: str = "B joins"):
    """A joins and owns its assignment, B joins, and A's next heartbeat is told to revoke
    what B is to get: (A's epoch, B's join answer, A's answer, what A keeps)."""
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    rb = await t.ask(raw, b_label, hb(group, b, 0, topics=[topic], owned=[]))
    ra = await t.ask(raw, "A heartbeat: told to revoke", hb(group, a, a_epoch, owned=a_owned))
    return a_epoch, rb, ra, owned_of(ra) if ra.assignment is not None else a_owned


async def ready(t: Target, group: str, partitions: int = 4, topic: str | None = None,
                more: dict[str, int] | None = None):
    """A raw connection; the scenario's topic (and `more`) created and known to the group's
    coordinator."""
    raw = await t.raw()
    topics = {topic or t.names.topic(): partitions, **(more or {})}
    await observe.group_topics(raw, group, topics)
    # Topic ids in name order: their aliases then follow names ("topic order").
    t.add("topic ids", {name: await observe.topic_id(raw, name) for name in sorted(topics)})
    return raw


async def set_up(t: Target, partitions: int = 4):
    """The scenario's group and topic, and a raw connection `ready` for them: (raw, group, topic)."""
    group = t.names.group()
    return await ready(t, group, partitions), group, t.names.topic()


@scenario("consumer", "a member joins: epoch 1, every partition, Stable",
          rule="a ConsumerGroupHeartbeat with epoch 0 joins: the group epoch and the member epoch become 1, "
               "the uniform assignor gives a lone member every subscribed partition, and the group is Stable "
               "once the member owns them")
async def consumer_join(t: Target) -> None:
    raw, group, topic = await set_up(t, 3)
    a = member_id(t, "m1")
    r = await t.ask(raw, "join", hb(group, a, 0, topics=[topic], owned=[]))
    t.add("describe while reconciling", await observe.consumer_describe(raw, group))
    await t.ask(raw, "heartbeat owning the assignment", hb(group, a, int(r.member_epoch), owned=owned_of(r)))
    t.add("describe", await observe.consumer_describe(raw, group))
    t.add("describe with the classic API", await observe.describe(raw, group))
    await t.ask(raw, "leave", hb(group, a, -1))
    t.add("describe after leaving", await observe.consumer_describe(raw, group))


@scenario("consumer", "reconciliation: partitions revoked before they move",
          rule="when a second member joins, the first is asked to give up partitions and keeps its epoch "
               "until its heartbeat shows it no longer owns them; only then does the newcomer receive them")
async def consumer_revoke_first(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m2"), member_id(t, "m3")
    _, rb, ra, kept = await b_joins(t, raw, group, topic, a, b)
    t.add("describe while A revokes", await observe.consumer_describe(raw, group))
    await t.ask(raw, "B heartbeat before A revoked", hb(group, b, int(rb.member_epoch), owned=[]))
    ra = await t.ask(raw, "A heartbeat having revoked", hb(group, a, int(ra.member_epoch), owned=kept))
    await take(t, raw, group, b, "B heartbeat after A revoked", hb(group, b, int(rb.member_epoch), owned=[]),
               "B owns its partitions")
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a regular-expression subscription",
          rule="a member subscribed with a regular expression is assigned the partitions of every topic "
               "whose name matches it, and only those")
async def consumer_regex(t: Target) -> None:
    group = t.names.group()
    raw = await ready(t, group, 1, topic=t.names.topic("r1"),
                      more={t.names.topic("r2"): 2, t.names.topic("other"): 1})
    a = member_id(t, "m4")
    r = await t.ask(raw, "join with a regex", hb(group, a, 0, regex=f"{t.names.topic('r')}[0-9]", owned=[]))
    epoch, owned = int(r.member_epoch), owned_of(r)

    async def assigned() -> bool:
        nonlocal epoch, owned
        response = await raw.call(hb(group, a, epoch, owned=owned))
        epoch = int(response.member_epoch)
        if response.assignment is not None:
            owned = owned_of(response)
        return sum(len(ps) for _, ps in owned) == 3
    await observe.until(assigned, "the regex is resolved and assigned")
    await raw.call(hb(group, a, epoch, owned=owned))
    t.add("assigned partitions", sorted(len(ps) for _, ps in owned))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a static member leaves for a while and comes back",
          rule="epoch -2 is a static member leaving temporarily: it keeps its assignment and the group epoch "
               "does not move; the same instance id rejoining with a new member id gets the same partitions")
async def consumer_static_member(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    a = member_id(t, "m5")
    epoch, _ = await joined(t, raw, group, a, topic, label="join with an instance id", instance="i-a")
    await t.ask(raw, "leaves temporarily", hb(group, a, -2, instance="i-a"))
    t.add("describe while it is away", await observe.consumer_describe(raw, group))
    a2 = member_id(t, "m6")
    r = await t.ask(raw, "comes back under a new member id", hb(group, a2, 0, topics=[topic], owned=[],
                                                               instance="i-a"))
    t.add("describe after it came back", await observe.consumer_describe(raw, group))
    await t.ask(raw, "the old member id", hb(group, a, epoch, instance="i-a"))


@scenario("consumer", "an instance id still in use",
          rule="a member joining with the instance id of a member that has not left gets "
               "UNRELEASED_INSTANCE_ID")
async def consumer_unreleased_instance_id(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    a = member_id(t, "m7")
    await joined(t, raw, group, a, topic, label="A joins as i-1", owns="A owns its assignment", instance="i-1")
    await t.ask(raw, "B joins as i-1", hb(group, member_id(t, "m8"), 0, topics=[topic], owned=[], instance="i-1"))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a live member rejoins under a departed static member's instance id",
          rule="a member still in the group that heartbeats with epoch 0 and the instance id of a static member "
               "that left temporarily (epoch -2) takes that static member's place and its target; Kafka 4.4 "
               "moves no group epoch for it, so the partitions the member had been assigned are left to no one "
               "(kgroup moves the epoch: a kafka defect in conformance/divergences.py)")
async def consumer_rejoin_as_departed_static_member(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m15"), member_id(t, "m16")
    await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    await t.ask(raw, "B joins as i-1", hb(group, b, 0, topics=[topic], owned=[], instance="i-1"))
    await t.ask(raw, "B leaves temporarily", hb(group, b, -2, instance="i-1"))
    r = await t.ask(raw, "A rejoins as i-1", hb(group, a, 0, topics=[topic], owned=[], instance="i-1"))
    t.add("describe after A rejoined", await observe.consumer_describe(raw, group))
    epoch, owned = int(r.member_epoch), owned_of(r)
    for n in range(3):
        r = await t.ask(raw, f"A heartbeat {n + 1}", hb(group, a, epoch, owned=owned, instance="i-1"))
        epoch = int(r.member_epoch)
        if r.assignment is not None:
            owned = owned_of(r)
    t.add("what A owns", sorted(p for _, ps in owned for p in ps))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "fencing by epoch and unknown members",
          rule="a member epoch above the member's is FENCED_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID, "
               "a member that left is unknown, and a fenced member rejoins with epoch 0")
async def consumer_fencing(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    a = member_id(t, "m9")
    epoch, _ = await joined(t, raw, group, a, topic)
    await t.ask(raw, "an epoch from the future", hb(group, a, epoch + 5))
    await t.ask(raw, "an epoch from the past", hb(group, a, epoch - 1))
    await t.ask(raw, "a member the group does not know", hb(group, member_id(t, "m10"), epoch))
    await t.ask(raw, "rejoin with epoch 0", hb(group, a, 0, topics=[topic], owned=[]))
    await t.ask(raw, "leave", hb(group, a, -1))
    await t.ask(raw, "heartbeat after leaving", hb(group, a, epoch))
    await t.ask(raw, "leave again", hb(group, a, -1))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "requests the coordinator refuses",
          rule="an unknown server assignor is UNSUPPORTED_ASSIGNOR; a join without subscription, without "
               "rebalance timeout or without member id INVALID_REQUEST; a bad regex INVALID_REGULAR_EXPRESSION")
async def consumer_invalid_requests(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    await t.ask(raw, "unknown assignor", hb(group, member_id(t, "m11"), 0, topics=[topic], owned=[], assignor="nope"))
    await t.ask(raw, "join without a subscription", hb(group, member_id(t, "m12"), 0, owned=[]))
    await t.ask(raw, "join without a rebalance timeout", hb(group, member_id(t, "m13"), 0, topics=[topic], owned=[],
                                                            rebalance_ms=-1))
    await t.ask(raw, "join without owned partitions", hb(group, member_id(t, "m14"), 0, topics=[topic]))
    await t.ask(raw, "join without a member id (v1)", hb(group, "", 0, topics=[topic], owned=[]))
    r0 = await t.ask(raw, "join without a member id (v0)", hb(group, "", 0, topics=[topic], owned=[], version=0))
    # It leaves at once: its id is the broker's (random), and the range assignor below
    # orders members by id.
    await t.ask(raw, "the v0 member leaves", hb(group, r0.member_id or "", -1, version=0))
    await t.ask(raw, "a bad regular expression", hb(group, member_id(t, "m15"), 0, regex="[", owned=[]))
    await t.ask(raw, "empty group id", hb("", member_id(t, "m16"), 0, topics=[topic], owned=[]))
    await t.ask(raw, "range assignor by name", hb(group, member_id(t, "m17"), 0, topics=[topic], owned=[], assignor="range"))
    t.add("describe", await observe.consumer_describe(raw, group))


# Patterns on which RE2 (Kafka's RE2/J) and Python's re disagree, each way.
RE2_REFUSES = ("(?=t)t", "(t)\\1", "t++", "t{1001}")
RE2_TAKES = ("t\\z", "\\pL+", "\\Qt.t\\E")


@scenario("consumer", "a subscription regex is RE2, as Kafka reads it",
          rule="SubscribedTopicRegex is compiled as RE2 (KIP-848; Kafka uses RE2/J): lookarounds, "
               "backreferences, possessive quantifiers and repetitions over 1000 are "
               "INVALID_REGULAR_EXPRESSION; \\z, \\pL and \\Q...\\E are taken")
async def consumer_regex_syntax(t: Target) -> None:
    raw, group, _ = await set_up(t, 1)
    for i, pattern in enumerate(RE2_REFUSES + RE2_TAKES):
        member = member_id(t, f"rx{i}")
        r = await t.ask(raw, f"join with {pattern!r}", hb(group, member, 0, regex=pattern, owned=[]))
        if int(r.error_code) == 0:
            await raw.call(hb(group, member, -1))          # leaves: the next one joins alone
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "session timeout fences a silent member",
          rule="a consumer-protocol member that stops heartbeating is removed after its group's "
               "consumer.session.timeout.ms (a group config, here 1.5 s; timing within 2 s)")
async def consumer_session_timeout(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    await t.ask(raw, "set consumer.session.timeout.ms", request(
        "IncrementalAlterConfigs", 1, validate_only=False, resources=[{
            "resource_type": 32, "resource_name": group, "configs": [
                {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "1500"}]}]))
    a = member_id(t, "m18")
    epoch, _ = await joined(t, raw, group, a, topic)
    last = time.monotonic()

    async def gone() -> bool:
        d = await observe.consumer_describe(raw, group)
        return not d.members
    await observe.until(gone, "the member is removed", timeout=20)
    t.timing("member removed after its session timeout", time.monotonic() - last, 2.0)
    t.add("describe", await observe.consumer_describe(raw, group))
    await t.ask(raw, "heartbeat of the removed member", hb(group, a, epoch))


async def classic_member(t: Target, group: str, topic: str):
    """A classic group of one member (on a connection of its own) holding partitions 0 and 1
    of `topic`, ready to be upgraded: (connection, member id, generation, subscription)."""
    from kgroup.conformance.scenarios.classic_raw import assignment
    classic = await t.raw("raw-classic")
    meta = encode_subscription(Subscription((topic,)), 1)
    r = await t.ask(classic, "classic member joins", join(5, group, protocols=(("range", meta),)))
    r = await t.ask(classic, "classic member joins with its id", join(5, group, r.member_id,
                                                                       protocols=(("range", meta),)))
    c, gen = r.member_id, int(r.generation_id)
    await t.ask(classic, "classic member syncs", sync(3, group, gen, c, assignments={c: assignment(topic, 0, 1)}))
    return classic, c, gen, meta


@scenario("consumer", "migration: a classic group becomes a consumer group and back",
          rule="a ConsumerGroupHeartbeat joining a non-empty classic group converts it online (group.consumer"
               ".migration.policy=bidirectional); the classic member keeps using JoinGroup/SyncGroup/Heartbeat "
               "and is asked to rejoin; when the last consumer-protocol member leaves the group is classic again")
async def consumer_migration(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    classic, c, gen, meta = await classic_member(t, group, topic)
    t.add("describe (classic)", await observe.describe(raw, group))
    b = member_id(t, "m19")
    rb = await t.ask(raw, "a consumer-protocol member joins", hb(group, b, 0, topics=[topic], owned=[]))
    t.add("describe after the upgrade", await observe.consumer_describe(raw, group))
    await t.ask(classic, "classic member heartbeat", heartbeat(3, group, gen, c))
    rj = await t.ask(classic, "classic member rejoins", join(5, group, c, protocols=(("range", meta),)))
    if rj is not None and int(rj.error_code) == 0:
        await t.ask(classic, "classic member syncs again", sync(3, group, int(rj.generation_id), c))
    await t.ask(raw, "the consumer-protocol member leaves", hb(group, b, -1))
    t.add("describe after the downgrade", await observe.describe(raw, group))
    await t.ask(classic, "classic member heartbeat after the downgrade",
                heartbeat(3, group, int(rj.generation_id) if rj is not None else gen, c))


@scenario("consumer", "a regular expression that matches a topic the group already subscribes to",
          rule="a member joining with a regular expression whose topics another member already subscribes "
               "to by name is given some of their partitions once the expression is resolved")
async def consumer_regex_of_a_subscribed_topic(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m30"), member_id(t, "m31")
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins by name", owns="A owns its assignment")
    r = await t.ask(raw, "B joins with a regex matching only that topic", hb(group, b, 0, regex=topic, owned=[]))
    b_epoch, b_owned = int(r.member_epoch), owned_of(r)

    async def b_owns_some() -> bool:
        nonlocal a_epoch, a_owned, b_epoch, b_owned
        ra = await raw.call(hb(group, a, a_epoch, owned=a_owned))
        a_epoch = int(ra.member_epoch)
        if ra.assignment is not None:
            a_owned = owned_of(ra)
        rb = await raw.call(hb(group, b, b_epoch, owned=b_owned))
        b_epoch = int(rb.member_epoch)
        if rb.assignment is not None:
            b_owned = owned_of(rb)
        return bool(b_owned) and sum(len(ps) for _, ps in a_owned + b_owned) == 4
    try:
        await observe.until(b_owns_some, "B owns some of the topic's partitions", timeout=20.0)
        t.add("B given partitions within 20 s", True)
    except AssertionError:
        t.add("B given partitions within 20 s", False)
    t.add("partitions owned by A and by B", (sum(len(ps) for _, ps in a_owned), sum(len(ps) for _, ps in b_owned)))
