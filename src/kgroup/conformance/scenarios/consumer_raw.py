"""The consumer protocol (KIP-848), asked with exact ConsumerGroupHeartbeat sequences."""

from __future__ import annotations

import asyncio
import random
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


async def until_owning(raw, group: str, member: str, epoch: int, owned: list, count: int, what: str, *,
                       timeout: float = 30.0, beside=None) -> tuple[int, list]:
    """Heartbeat `member` (unrecorded, owning what it was given; `beside`, a coroutine
    function, runs after each: another member's heartbeat) until it owns `count`
    partitions: its epoch and what it owns then."""
    state = [epoch, owned]

    async def check() -> bool:
        r = await raw.call(hb(group, member, state[0], owned=state[1]))
        state[0] = int(r.member_epoch)
        if r.assignment is not None:
            state[1] = owned_of(r)
        if beside is not None:
            await beside()
        return sum(len(ps) for _, ps in state[1]) == count
    await observe.until(check, what, timeout)
    return state[0], state[1]


async def owns_by_regex(t: Target, raw, group: str, member: str, topic: str) -> tuple[int, list]:
    """`member` joins with a regex naming `topic` (two partitions) and heartbeats until the
    regex is resolved and it owns the topic: its epoch and what it owns (recorded)."""
    r = await t.ask(raw, "A joins with a regex of one topic", hb(group, member, 0, regex=topic, owned=[]))
    epoch, owned = await until_owning(raw, group, member, int(r.member_epoch), owned_of(r), 2,
                                      "A's regex is resolved and A owns the topic", timeout=15.0)
    t.add("A owns", owned)
    return epoch, owned


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


async def two_topics(t: Target, partitions: int, others: int = 2):
    """`set_up` with a second topic (named with "u") for subscription changes:
    (raw, group, topic, other)."""
    group, topic, other = t.names.group(), t.names.topic(), t.names.topic("u")
    return await ready(t, group, partitions, more={other: others}), group, topic, other


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
    epoch, owned = await until_owning(raw, group, a, int(r.member_epoch), owned_of(r), 3,
                                      "the regex is resolved and assigned")
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
    await observe.group_configs_visible(raw, group, consumer_session_timeout_ms=1500)
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


@scenario("consumer", "regular expressions are resolved at most once per 10 s",
          rule="a group's regular expressions are resolved in the background at most once per 10 s "
               "(Kafka 4.4's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS): a second new regex brought within 10 s of "
               "the last resolution counts nothing and moves no epoch until a heartbeat after the window "
               "starts the next resolution", timeout=60.0)
async def consumer_regex_batch_window(t: Target) -> None:
    raw, group, topic, other = await two_topics(t, 2)
    a, b = member_id(t, "m40"), member_id(t, "m41")
    started = time.monotonic()
    a_epoch, a_owned = await owns_by_regex(t, raw, group, a, topic)
    rb = await t.ask(raw, "B joins with a regex of the other topic, within the window",
                     hb(group, b, 0, regex=other, owned=[]))
    b_epoch = int(rb.member_epoch)
    await asyncio.sleep(2.0)
    await t.ask(raw, "B heartbeats 2 s later: nothing yet", hb(group, b, b_epoch, owned=[]))
    t.add("describe within the window", await observe.consumer_describe(raw, group))
    await asyncio.sleep(max(0.0, started + 10.5 - time.monotonic()))

    async def a_stays() -> None:
        await raw.call(hb(group, a, a_epoch, owned=a_owned))
    _, b_owned = await until_owning(raw, group, b, b_epoch, [], 2, "B's regex is resolved after the window",
                                    timeout=10.0, beside=a_stays)
    t.add("B owns after the window", b_owned)
    t.add("describe after", await observe.consumer_describe(raw, group))


@scenario("consumer", "a member switching to a regex not resolved yet gives up its partitions at once",
          rule="a heartbeat that changes a member's subscription without a new target (a regex the group has "
               "not resolved) moves what the member holds of topics it no longer subscribes to to pending "
               "revocation at once, at its epoch; once it reports them gone it holds nothing")
async def consumer_regex_switch_revokes(t: Target) -> None:
    raw, group, topic, other = await two_topics(t, 2)
    a = member_id(t, "m42")
    epoch, owned = await owns_by_regex(t, raw, group, a, topic)
    r = await t.ask(raw, "A switches to a regex of the other topic, still owning the first",
                    hb(group, a, epoch, regex=other, owned=owned))
    t.add("describe after the switch", await observe.consumer_describe(raw, group))
    r = await t.ask(raw, "A reports owning nothing", hb(group, a, int(r.member_epoch), owned=[]))
    # The group's only regex went with the switch, so that heartbeat started the new one's
    # resolution; when it lands is the broker's (polled, unrecorded), what A then owns is not.
    _, owned = await until_owning(raw, group, a, int(r.member_epoch), [], 2, "A's new regex is resolved")
    t.add("A owns after", owned)


@scenario("consumer", "a member that reports not owning what moves skips the revocation step",
          rule="when a new target takes partitions from a member whose heartbeat reports owning none of them, "
               "the member goes straight to the new epoch with what it keeps (no UNREVOKED_PARTITIONS step)")
async def consumer_revocation_not_owned(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m40"), member_id(t, "m41")
    a_epoch, _ = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    await t.ask(raw, "B joins", hb(group, b, 0, topics=[topic], owned=[]))
    await t.ask(raw, "A heartbeat owning nothing", hb(group, a, a_epoch, owned=[]))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a rejoin keeps the epoch it had as the previous epoch",
          rule="a known member rejoining with epoch 0 is not reset: its epoch before the rejoin becomes its "
               "previous epoch, so a later heartbeat at that epoch owning only what it was given is answered "
               "(a lost answer), and one further behind is fenced")
async def consumer_rejoin_previous_epoch(t: Target) -> None:
    raw, group, topic, other = await two_topics(t, 4)
    a = member_id(t, "m43")
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    r = await t.ask(raw, "A rejoins with epoch 0, subscribing to another topic too",
                    hb(group, a, 0, topics=[topic, other], owned=[]))
    owned = owned_of(r)
    await t.ask(raw, "A heartbeat at its epoch before the rejoin", hb(group, a, a_epoch, owned=owned))
    await t.ask(raw, "A heartbeat one epoch further behind", hb(group, a, a_epoch - 1, owned=owned))


@scenario("consumer", "a static member rejoining under its own member id before it left",
          rule="a static member (consumer protocol) sending epoch 0 again under the same member id and instance "
               "id is refused UNRELEASED_INSTANCE_ID until it has left with epoch -2; after that it rejoins "
               "under that id and is given its partitions again")
async def consumer_static_rejoin_same_id(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    a = member_id(t, "m44")
    a_epoch, _ = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment", instance="i-a")
    await t.ask(raw, "A rejoins with epoch 0 under the same id",
                hb(group, a, 0, topics=[topic], owned=[], instance="i-a"))
    await t.ask(raw, "A leaves with epoch -2", hb(group, a, -2, instance="i-a"))
    await t.ask(raw, "A rejoins after leaving", hb(group, a, 0, topics=[topic], owned=[], instance="i-a"))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "the range assignor splits by member order, not by who holds what",
          rule="the server range assignor gives each topic's subscribers contiguous runs in their order "
               "(static members first by instance id, then member ids) whatever they hold: a static member "
               "joining a dynamic one that holds every partition takes the first run, and the holder is "
               "asked to revoke it")
async def consumer_range_not_sticky(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m45"), member_id(t, "m46")
    r = await t.ask(raw, "A joins with the range assignor",
                    hb(group, a, 0, topics=[topic], owned=[], assignor="range"))
    a_epoch, a_owned = int(r.member_epoch), owned_of(r)
    await t.ask(raw, "A owns its assignment", hb(group, a, a_epoch, owned=a_owned))
    await t.ask(raw, "B joins, static, with the range assignor",
                hb(group, b, 0, topics=[topic], owned=[], assignor="range", instance="i-b"))
    await t.ask(raw, "A heartbeat: told to revoke", hb(group, a, a_epoch, owned=a_owned))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a member changing its server assignor",
          rule="a heartbeat naming a server assignor moves the group epoch only if that changes the assignor "
               "the group uses: naming uniform (the default) in a group that asks for none changes nothing, "
               "naming range then moves the epoch")
async def consumer_assignor_change(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    a = member_id(t, "m49")
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    r = await t.ask(raw, "A names uniform", hb(group, a, a_epoch, owned=a_owned, assignor="uniform"))
    r = await t.ask(raw, "A names range", hb(group, a, int(r.member_epoch), owned=a_owned, assignor="range"))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "owned partitions naming a topic twice",
          rule="a heartbeat whose owned partitions name a topic twice is read entry by entry: a member told to "
               "revoke that still names what it must give up, in the first entry, stays revoking")
async def consumer_owned_topic_twice(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m50"), member_id(t, "m51")
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment")
    await t.ask(raw, "B joins", hb(group, b, 0, topics=[topic], owned=[]))
    tid = a_owned[0][0]
    await t.ask(raw, "A heartbeat naming its topic twice, all four partitions first",
                hb(group, a, a_epoch, owned=[(tid, [0, 1, 2, 3]), (tid, [0])]))
    t.add("describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "a static member leaving while it revokes",
          rule="a static member that leaves with epoch -2 while asked to revoke keeps what it is assigned but no "
               "longer holds the partitions it was revoking: they go to their new owner at its next heartbeat")
async def consumer_static_leave_while_revoking(t: Target) -> None:
    raw, group, topic = await set_up(t, 4)
    a, b = member_id(t, "m47"), member_id(t, "m48")
    a_epoch, a_owned = await joined(t, raw, group, a, topic, label="A joins", owns="A owns its assignment",
                                    instance="i-a")
    rb = await t.ask(raw, "B joins", hb(group, b, 0, topics=[topic], owned=[]))
    await t.ask(raw, "A heartbeat not saying what it owns: told to revoke", hb(group, a, a_epoch, instance="i-a"))
    await t.ask(raw, "A leaves with epoch -2", hb(group, a, -2, instance="i-a"))
    t.add("describe", await observe.consumer_describe(raw, group))
    await t.ask(raw, "B heartbeat", hb(group, b, int(rb.member_epoch), owned=[]))
    t.add("describe after B's heartbeat", await observe.consumer_describe(raw, group))


# ---- random heartbeat sequences ---------------------------------------------------------------
# Seeded sequences of joins, steady heartbeats, heartbeats that report owning nothing, half of
# what they hold, a partition twice or do not say, heartbeats that change the subscription,
# stale epochs, leaves and static leaves, by four members of one group over two topics.
# Every member asks for the range assignor: Kafka
# 4.4's is deterministic (members in order), whereas its uniform assignor walks members and
# topics in hash-map order of their random ids, which no second broker can reproduce. A member
# is static (instance id of its own) or not for the whole sequence. How such sequences were
# run side by side on Kafka 4.4 is how the rules of the scenarios above were found.

RANDOM_SEQUENCES = tuple(range(24))
_RANDOM_MEMBERS = 4


def random_sequence(seed: int, length: int = 18, regex: bool = False) -> list[tuple]:
    """The operations of sequence `seed` (the same on both brokers); with `regex`, joins and
    heartbeats that subscribe by regular expression too."""
    rng = random.Random(seed)
    static = [rng.random() < 0.5 for _ in range(_RANDOM_MEMBERS)]
    kinds = ["join", "beat", "beat", "beat", "stale", "leave", "full", "lazy", "empty", "some", "extra", "resub"]
    if regex:
        kinds += ["regex-join", "regex-join", "regex-sub"]
    ops: list[tuple] = []
    for _ in range(length):
        kind = rng.choice(kinds)
        i = rng.randrange(_RANDOM_MEMBERS)
        if kind == "join":
            ops.append(("join", i, rng.choice([("T",), ("T",), ("T", "U"), ("U",)]), static[i]))
        elif kind.startswith("regex"):
            ops.append((kind, i, rng.choice(["T", "U", "TU"]), static[i]))
        else:
            ops.append((kind, i))
    return ops


async def play_random_sequence(t: Target, raw, seed: int, ids: dict[str, object], assignor: str | None = "range",
                               regex: bool = False) -> None:
    """Play sequence `seed` on its own group, each answer into the transcript; its group described
    at the end. `ids`: the topic ids of T and U (`consumer_random_sequences` sets them up)."""
    group = t.names.group(f"s{seed}")
    names = {"T": t.names.topic(), "U": t.names.topic("u")}
    patterns = {"T": names["T"], "U": names["U"], "TU": t.names.prefix + "-[tu]"}
    state: dict[int, dict] = {}      # member -> epoch, owned, instance (None: not in the group)
    for n, op in enumerate(random_sequence(seed, regex=regex)):
        kind, i = op[0], op[1]
        mid = member_id(t, f"r{seed}-{i}")
        st = state.get(i)
        if kind in ("join", "regex-join"):
            st = state[i] = {"epoch": 0, "owned": [], "instance": f"i{seed}-{i}" if op[3] else None}
            by = {"regex": patterns[op[2]]} if kind == "regex-join" else {"topics": [names[x] for x in op[2]]}
            req = hb(group, mid, 0, owned=[], assignor=assignor, instance=st["instance"], **by)
        elif st is None:
            continue
        elif kind == "regex-sub":   # subscribing by regex instead, owning what it was given
            req = hb(group, mid, st["epoch"], owned=st["owned"], instance=st["instance"], regex=patterns[op[2]])
        elif kind == "beat":        # owning what it was last given
            req = hb(group, mid, st["epoch"], owned=st["owned"], instance=st["instance"])
        elif kind == "lazy":        # not saying what it owns
            req = hb(group, mid, st["epoch"], instance=st["instance"])
        elif kind == "empty":       # owning nothing
            req = hb(group, mid, st["epoch"], owned=[], instance=st["instance"])
        elif kind == "some":        # owning half of what it was given
            half = [(tid, ps[:(len(ps) + 1) // 2]) for tid, ps in st["owned"]]
            req = hb(group, mid, st["epoch"], owned=half, instance=st["instance"])
        elif kind == "extra":       # naming T's partition 3 again, whether it was given it or not
            req = hb(group, mid, st["epoch"], owned=st["owned"] + [(ids["T"], [3])], instance=st["instance"])
        elif kind == "full":        # every field, subscribed to T only
            req = hb(group, mid, st["epoch"], owned=st["owned"], instance=st["instance"], topics=[names["T"]])
        elif kind == "resub":       # subscribed to both topics, not saying what it owns
            req = hb(group, mid, st["epoch"], instance=st["instance"], topics=[names["T"], names["U"]])
        elif kind == "stale":       # the epoch before (or one ahead of a first epoch)
            epoch = st["epoch"] - 1 if st["epoch"] > 1 else st["epoch"] + 5
            req = hb(group, mid, epoch, owned=st["owned"], instance=st["instance"])
        else:                       # leave: -2 if static, else -1
            req = hb(group, mid, -2 if st["instance"] else -1, instance=st["instance"])
        r = await t.ask(raw, f"sequence {seed} step {n} {kind} m{i}", req)
        if kind.startswith("regex"):
            await asyncio.sleep(0.3)   # Kafka resolves a regex in the background
        if r is None:
            continue
        if r.error_code != 0 or kind == "leave":
            if kind in ("join", "regex-join", "leave") or int(r.error_code) in (25, 110):   # unknown, fenced
                state.pop(i, None)
            continue
        st["epoch"] = int(r.member_epoch)
        if r.assignment is not None:
            st["owned"] = owned_of(r)
    t.add(f"sequence {seed}: describe", await observe.consumer_describe(raw, group))


@scenario("consumer", "random heartbeat sequences of four members",
          rule="seeded random sequences of joins (static or not, one or two topics), heartbeats owning what they "
               "were given, half of it, nothing, a partition twice or not saying, heartbeats changing the "
               "subscription, stale epochs and leaves get the same answer at every step and leave the same "
               "group, with the range assignor",
          timeout=120.0)
async def consumer_random_sequences(t: Target) -> None:
    group = t.names.group("s0")
    raw = await ready(t, group, 4, more={t.names.topic("u"): 3})
    ids = {"T": await observe.topic_id(raw, t.names.topic()), "U": await observe.topic_id(raw, t.names.topic("u"))}
    for seed in RANDOM_SEQUENCES:
        await play_random_sequence(t, raw, seed, ids)



async def _owning_through(raw, group: str, member: str, state: list, count: int, letters: dict,
                          what: str) -> list[list]:
    """Heartbeat `member` from `state` ([epoch, owned], updated) owning what it was given
    until it owns `count` partitions: the distinct holdings it went through, topics by
    letter (their ids differ between brokers)."""
    seen: list[list] = []

    async def check() -> bool:
        r = await raw.call(hb(group, member, state[0], owned=state[1]))
        state[0] = int(r.member_epoch)
        if r.assignment is not None:
            state[1] = owned_of(r)
        held = sorted((letters.get(tid, "?"), p) for tid, ps in state[1] for p in ps)
        if not seen or seen[-1] != held:
            seen.append(held)
        return len(held) == count
    await observe.until(check, what, interval=0.05)
    return seen


@scenario("consumer", "a topic a member subscribed to before it existed is created, then grows",
          rule="a member may subscribe to a topic that does not exist yet: when it is created the group epoch "
               "moves and the member is given its partitions; when a subscribed topic gains partitions the "
               "epoch moves again and the member is given the new ones, once the coordinator knows of the change "
               "(compared: the holdings the member goes through and how far its epoch moved each time)",
          timeout=90.0)
async def consumer_topic_created_later_and_grown(t: Target) -> None:
    group, topic, later = t.names.group(), t.names.topic(), t.names.topic("l")
    raw = await ready(t, group, 1)
    letters = {await observe.topic_id(raw, topic): "T"}
    member = member_id(t, "later")
    r = await raw.call(hb(group, member, 0, topics=[topic, later], owned=[]))
    state = [int(r.member_epoch), owned_of(r)]
    await _owning_through(raw, group, member, state, 1, letters, "the member owns the first topic's partition")
    for step, change, count in (("created", None, 3), ("grown", 4, 5)):
        before = state[0]
        if change is None:
            await observe.create_topic(raw, later, 2)
            letters[await observe.topic_id(raw, later)] = "L"
        else:
            await t.ask(raw, "grow the new topic to 4 partitions", request(
                "CreatePartitions", 3, timeout_ms=30_000, validate_only=False,
                topics=[{"name": later, "count": change, "assignments": None}]))
        # Kafka's coordinator learns of the change from its metadata image a moment later.
        await observe.coordinator_sees(raw, group, {topic: 1, later: count - 1})
        seen = await _owning_through(raw, group, member, state, count, letters,
                                     f"the member owns every partition once the topic is {step}")
        t.add(f"holdings the member went through once the topic was {step}", seen)
        t.add(f"epochs moved once the topic was {step}", state[0] - before)
