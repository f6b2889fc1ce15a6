"""Classic groups, asked with exact JoinGroup / SyncGroup / Heartbeat / LeaveGroup sequences."""

from __future__ import annotations

import asyncio
import time

from kgroup.assignors.consumer_protocol import encode_assignment, encode_subscription
from kgroup.assignors.spec import Assignment, Subscription
from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.target import Target


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(tuple(topics)), 1)


def assignment(topic: str, *partitions: int) -> bytes:
    return encode_assignment(Assignment(((topic, tuple(partitions)),)), 1)


def join(version: int, group: str, member_id: str = "", *, instance: str | None = None,
         session_ms: int = 10_000, rebalance_ms: int = 10_000, protocol_type: str = "consumer",
         protocols: tuple[tuple[str, bytes], ...] | None = None, topic: str = "t"):
    return request("JoinGroup", version, group_id=group, session_timeout_ms=session_ms,
                   rebalance_timeout_ms=rebalance_ms, member_id=member_id, group_instance_id=instance,
                   protocol_type=protocol_type, reason=None,
                   protocols=[{"name": n, "metadata": m} for n, m in (protocols or (("range", subscription(topic)),))])


def sync(version: int, group: str, generation: int, member_id: str, *, instance: str | None = None,
         assignments: dict[str, bytes] | None = None, protocol_type: str | None = "consumer",
         protocol_name: str | None = "range"):
    return request("SyncGroup", version, group_id=group, generation_id=generation, member_id=member_id,
                   group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
                   assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()])


def heartbeat(version: int, group: str, generation: int, member_id: str, instance: str | None = None):
    return request("Heartbeat", version, group_id=group, generation_id=generation, member_id=member_id,
                   group_instance_id=instance)


def leave(version: int, group: str, member_id: str = "", members: list[dict] | None = None):
    return request("LeaveGroup", version, group_id=group, member_id=member_id, members=members or [])


async def coordinated(t: Target, group: str):
    """A raw connection of the scenario that has found (and so loaded) `group`'s coordinator."""
    raw = await t.raw()
    await observe.coordinator(raw, group)
    return raw


async def ready(t: Target, group: str, partitions: int = 2):
    """A raw connection, the group's coordinator loaded and the scenario's topic created."""
    raw = await coordinated(t, group)
    await observe.create_topic(raw, t.names.topic(), partitions)
    return raw


async def set_up(t: Target, partitions: int = 2):
    """The scenario's group and topic, and a raw connection `ready` for them: (raw, group, topic)."""
    group = t.names.group()
    return await ready(t, group, partitions), group, t.names.topic()


async def stable_member(t: Target, raw, group: str, *, version: int = 5, instance: str | None = None,
                        topic: str | None = None, label: str = "") -> tuple[str, int]:
    """Join (two steps where the version asks for it) and sync a lone member; returns its
    id and generation. Every answer goes into the transcript."""
    topic = topic or t.names.topic()
    r = await t.ask(raw, f"{label}join", join(version, group, instance=instance))
    member = r.member_id
    if int(r.error_code) == 79:
        r = await t.ask(raw, f"{label}join again", join(version, group, member, instance=instance))
    await t.ask(raw, f"{label}sync", sync(min(version, 5), group, int(r.generation_id), r.member_id, instance=instance,
                                          assignments={r.member_id: assignment(topic, 0)}))
    return r.member_id, int(r.generation_id)


@scenario("classic", "two-step join, sync, heartbeat, leave",
          rule="JoinGroup v4+ without a member id is answered MEMBER_ID_REQUIRED with an id to join with; "
               "the lone member leads generation 1; Stable after the leader's SyncGroup; Empty after it leaves")
async def classic_two_step_join(t: Target) -> None:
    raw, group, _ = await set_up(t)
    first = await t.ask(raw, "join without id", join(5, group))
    member = first.member_id
    joined = await t.ask(raw, "join with the id given", join(5, group, member))
    t.add("describe after join", await observe.describe(raw, group))
    await t.ask(raw, "sync", sync(3, group, int(joined.generation_id), member, assignments={member: assignment("t", 0)}))
    await t.ask(raw, "heartbeat", heartbeat(3, group, int(joined.generation_id), member))
    t.add("describe when stable", await observe.describe(raw, group))
    await t.ask(raw, "leave", leave(2, group, member))
    t.add("describe after leave", await observe.describe(raw, group))


@scenario("classic", "join without MEMBER_ID_REQUIRED before v4",
          rule="JoinGroup v0-v3 with no member id joins at once: the broker names the member in the same answer")
async def classic_join_old_versions(t: Target) -> None:
    for version in (0, 1, 2, 3):
        group = t.names.group(f"v{version}")
        raw = await ready(t, group)
        r = await t.ask(raw, f"join v{version}", join(version, group))
        await t.ask(raw, f"sync v{version}", sync(min(version, 2), group, int(r.generation_id), r.member_id,
                                                  assignments={r.member_id: b""}))
        await t.ask(raw, f"leave v{version}", leave(0, group, r.member_id))


async def two_members(t: Target, raw_a, raw_b, group: str, *, version: int = 5,
                      instances: tuple[str | None, str | None] = (None, None)) -> tuple[str, str, int]:
    """A stable lone member A, then B joins and both rejoin: generation 2, A leading.
    Returns (a, b, generation), every answer in the transcript."""
    topic = t.names.topic()
    a, gen = await stable_member(t, raw_a, group, version=version, instance=instances[0], label="A ")
    if instances[1] is None:
        b_first = await t.ask(raw_b, "B join", join(version, group))
        b_req = join(version, group, b_first.member_id)
    else:   # a static member joins at once (no MEMBER_ID_REQUIRED): its join waits for the rebalance
        b_req = join(version, group, instance=instances[1])
    b_join = raw_b.start(b_req)
    await observe.until_state(raw_a, group, "PreparingRebalance")
    await t.ask(raw_a, "A heartbeat during the rebalance", heartbeat(3, group, gen, a, instances[0]))
    a_req = join(version, group, a, instance=instances[0])
    a_join = await t.ask(raw_a, "A rejoins", a_req)
    b = (await t.answer("B joined", b_join, b_req)).member_id
    generation = int(a_join.generation_id)
    b_sync_req = sync(min(version, 5), group, generation, b, instance=instances[1])
    b_sync = raw_b.start(b_sync_req)
    await asyncio.sleep(0.2)
    await t.ask(raw_a, "A (leader) syncs", sync(min(version, 5), group, generation, a, instance=instances[0],
                                                 assignments={a: assignment(topic, 0), b: assignment(topic, 1)}))
    await t.answer("B's sync completes", b_sync, b_sync_req)
    return a, b, generation


@scenario("classic", "a second member: rebalance, generation 2, the first joiner leads",
          rule="a new member moves a Stable group to PreparingRebalance; heartbeats then answer "
               "REBALANCE_IN_PROGRESS; when all have rejoined the leader gets every member's metadata, a "
               "follower none, and a follower's SyncGroup waits for the leader's")
async def classic_second_member(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    await two_members(t, raw_a, raw_b, group)
    t.add("describe", await observe.describe(raw_a, group))


@scenario("classic", "the leader leaves: the follower leads the next generation",
          rule="when the leader leaves, the group rebalances and a remaining member becomes the leader of "
               "the next generation")
async def classic_leader_handover(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    a, b, gen = await two_members(t, raw_a, raw_b, group)
    await t.ask(raw_a, "A leaves", leave(3, group, members=[{"member_id": a, "group_instance_id": None}]))
    await t.ask(raw_b, "B heartbeat after A left", heartbeat(3, group, gen, b))
    r = await t.ask(raw_b, "B rejoins", join(5, group, b))
    await t.ask(raw_b, "B syncs", sync(3, group, int(r.generation_id), b, assignments={b: assignment("t", 0, 1)}))
    t.add("describe", await observe.describe(raw_b, group))


@scenario("classic", "rejoining a Stable group with the same metadata",
          rule="a follower that rejoins a Stable group with unchanged metadata gets the current generation "
               "without a rebalance; the leader rejoining starts one")
async def classic_rejoin_in_stable(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    a, b, gen = await two_members(t, raw_a, raw_b, group)
    await t.ask(raw_b, "B (follower) rejoins unchanged", join(5, group, b))
    t.add("describe after the follower's rejoin", await observe.describe(raw_a, group))
    a_req = join(5, group, a)
    a_join = raw_a.start(a_req)
    await asyncio.sleep(0.3)
    t.add("describe after the leader's rejoin", await observe.describe(raw_b, group))
    await t.ask(raw_b, "B heartbeat", heartbeat(3, group, gen, b))
    await t.ask(raw_b, "B rejoins", join(5, group, b))
    await t.answer("A's rejoin completes", a_join, a_req)


@scenario("classic", "session timeout removes a silent member",
          rule="a member that sends no heartbeat for its session timeout is removed; a lone member's group "
               "becomes Empty (timing compared within 2 s)")
async def classic_session_timeout(t: Target) -> None:
    raw, group, _ = await set_up(t)
    r = await t.ask(raw, "join", join(5, group, session_ms=1_500))
    r = await t.ask(raw, "join again", join(5, group, r.member_id, session_ms=1_500))
    await t.ask(raw, "sync", sync(3, group, int(r.generation_id), r.member_id,
                                  assignments={r.member_id: assignment("t", 0)}))
    synced = time.monotonic()
    t.add("describe", await observe.describe(raw, group))
    g = await observe.until_state(raw, group, "Empty", timeout=20)
    t.timing("member removed after its session timeout", time.monotonic() - synced, 2.0)
    t.add("describe after the session timeout", g)
    await t.ask(raw, "heartbeat of the removed member", heartbeat(3, group, int(r.generation_id), r.member_id))


@scenario("classic", "rebalance timeout drops a member that does not rejoin",
          rule="in PreparingRebalance a member that has not rejoined when the rebalance timeout (the largest "
               "of the members') passes is removed and the join completes without it (timing within 2 s)")
async def classic_rebalance_timeout(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    ra = await t.ask(raw_a, "A join", join(5, group, session_ms=20_000, rebalance_ms=2_000))
    ra = await t.ask(raw_a, "A join again", join(5, group, ra.member_id, session_ms=20_000, rebalance_ms=2_000))
    a = ra.member_id
    await t.ask(raw_a, "A sync", sync(3, group, 1, a, assignments={a: assignment("t", 0)}))
    rb = await t.ask(raw_b, "B join", join(5, group, session_ms=20_000, rebalance_ms=2_000))
    started = time.monotonic()
    await t.ask(raw_b, "B joins; A never rejoins", join(5, group, rb.member_id, session_ms=20_000, rebalance_ms=2_000),
                timeout=30)
    t.timing("the join completes after the rebalance timeout", time.monotonic() - started, 2.0)
    t.add("describe", await observe.describe(raw_b, group))
    await t.ask(raw_a, "A heartbeat", heartbeat(3, group, 1, a))


@scenario("classic", "heartbeat, sync and join with the wrong member or generation",
          rule="an unknown member id gets UNKNOWN_MEMBER_ID; a wrong generation ILLEGAL_GENERATION; a member "
               "id on JoinGroup that the group does not know UNKNOWN_MEMBER_ID")
async def classic_unknown_member_and_stale_generation(t: Target) -> None:
    raw, group, _ = await set_up(t)
    member, gen = await stable_member(t, raw, group)
    await t.ask(raw, "heartbeat of an unknown member", heartbeat(3, group, gen, "nobody"))
    await t.ask(raw, "heartbeat with an old generation", heartbeat(3, group, gen - 1, member))
    await t.ask(raw, "heartbeat with a future generation", heartbeat(3, group, gen + 1, member))
    await t.ask(raw, "sync of an unknown member", sync(3, group, gen, "nobody"))
    await t.ask(raw, "sync with a wrong generation", sync(3, group, gen + 1, member))
    await t.ask(raw, "join with an unknown member id", join(5, group, "nobody"))
    await t.ask(raw, "leave of an unknown member", leave(2, group, "nobody"))
    await t.ask(raw, "batch leave with an unknown member", leave(3, group, members=[
        {"member_id": "nobody", "group_instance_id": None}, {"member_id": member, "group_instance_id": None}]))
    other = t.names.group("missing")
    await observe.coordinator(raw, other)
    await t.ask(raw, "heartbeat to a group that does not exist", heartbeat(3, other, 1, "nobody"))
    await t.ask(raw, "sync to a group that does not exist", sync(3, other, 1, "nobody"))
    await t.ask(raw, "join a group that does not exist with a member id", join(5, other, "nobody"))
    t.add("describe", await observe.describe(raw, group))


@scenario("classic", "session timeout and group id checks",
          rule="a session timeout outside group.min/max.session.timeout.ms gets INVALID_SESSION_TIMEOUT; an "
               "empty group id INVALID_GROUP_ID")
async def classic_invalid_join(t: Target) -> None:
    raw, group, _ = await set_up(t)
    await t.ask(raw, "session timeout below the minimum", join(5, group, session_ms=999))
    await t.ask(raw, "session timeout above the maximum", join(5, group, session_ms=1_800_001))
    await t.ask(raw, "empty group id", join(5, ""))
    await t.ask(raw, "no protocols", join(5, group, protocols=()))
    await t.ask(raw, "empty protocol type", join(5, group, protocol_type=""))
    t.add("describe", await observe.describe(raw, group))


@scenario("classic", "protocol type and protocol names must match the group",
          rule="a member whose protocol type differs from the group's, or who shares no protocol with its "
               "members, gets INCONSISTENT_GROUP_PROTOCOL; so does a SyncGroup v5 naming another type or protocol")
async def classic_wrong_protocol(t: Target) -> None:
    raw, group, _ = await set_up(t)
    member, gen = await stable_member(t, raw, group)
    other = await t.raw("raw-b")
    await t.ask(other, "join with another protocol type", join(5, group, protocol_type="connect"))
    await t.ask(other, "join with no protocol in common",
                join(5, group, protocols=(("roundrobin", subscription("t")),)))
    await t.ask(raw, "sync v5 with another protocol type", sync(5, group, gen, member, protocol_type="connect"))
    await t.ask(raw, "sync v5 with another protocol name", sync(5, group, gen, member, protocol_name="roundrobin"))
    await t.ask(raw, "sync v5 with null type and name", sync(5, group, gen, member, protocol_type=None,
                                                              protocol_name=None))
    t.add("describe", await observe.describe(raw, group))


@scenario("classic", "a static member restarts without a rebalance",
          rule="JoinGroup with a known group.instance.id and no member id replaces the member: new member id, "
               "same generation, no rebalance, the assignment kept; the old id is then FENCED_INSTANCE_ID")
async def classic_static_restart(t: Target) -> None:
    raw, group, _ = await set_up(t)
    old, gen = await stable_member(t, raw, group, instance="i-1")
    restarted = await t.raw("raw-restarted")
    r = await t.ask(restarted, "rejoin after a restart", join(5, group, instance="i-1"))
    t.add("describe after the restart", await observe.describe(raw, group))
    await t.ask(restarted, "sync of the new member id", sync(3, group, int(r.generation_id), r.member_id,
                                                             instance="i-1"))
    await t.ask(raw, "heartbeat of the old member id", heartbeat(3, group, gen, old, "i-1"))
    await t.ask(raw, "join of the old member id", join(5, group, old, instance="i-1"))
    await t.ask(raw, "sync of the old member id", sync(3, group, gen, old, instance="i-1"))
    await t.ask(raw, "leave of the old member id", leave(3, group, members=[
        {"member_id": old, "group_instance_id": "i-1"}]))
    await t.ask(restarted, "heartbeat of the new member id", heartbeat(3, group, gen, r.member_id, "i-1"))


@scenario("classic", "a static leader restarts with JoinGroup v9: SkipAssignment",
          rule="a static leader that rejoins a Stable group with v9 is told it leads but must not assign "
               "(SkipAssignment true), with every member listed")
async def classic_static_leader_v9(t: Target) -> None:
    raw, group, _ = await set_up(t)
    await stable_member(t, raw, group, version=9, instance="i-1")
    restarted = await t.raw("raw-restarted")
    r = await t.ask(restarted, "leader rejoins after a restart", join(9, group, instance="i-1"))
    t.add("describe", await observe.describe(restarted, group))
    await t.ask(restarted, "sync", sync(5, group, int(r.generation_id), r.member_id, instance="i-1"))


@scenario("classic", "static members removed by instance id (admin remove members)",
          rule="LeaveGroup v3+ removes members by group.instance.id, answering each: an instance id the group "
               "does not know gets UNKNOWN_MEMBER_ID, one mapped to another member id FENCED_INSTANCE_ID")
async def classic_remove_static_members(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    a, b, _ = await two_members(t, raw_a, raw_b, group, instances=("i-a", "i-b"))
    admin = await t.raw("raw-admin")
    await t.ask(admin, "remove i-a, an unknown instance and i-b under a wrong member id", leave(4, group, members=[
        {"member_id": "", "group_instance_id": "i-a"},
        {"member_id": "", "group_instance_id": "i-nobody"},
        {"member_id": "wrong", "group_instance_id": "i-b"}]))
    t.add("describe", await observe.describe(admin, group))


@scenario("classic", "requests in the wrong phase of a rebalance",
          rule="SyncGroup while the group is PreparingRebalance gets REBALANCE_IN_PROGRESS; a heartbeat while "
               "CompletingRebalance is accepted; an OffsetCommit then gets REBALANCE_IN_PROGRESS")
async def classic_wrong_phase(t: Target) -> None:
    raw_a, group, _ = await set_up(t)
    raw_b = await t.raw("raw-b")
    a, gen = await stable_member(t, raw_a, group, label="A ")
    b = await t.ask(raw_b, "B join", join(5, group))
    b_req = join(5, group, b.member_id)
    b_join = raw_b.start(b_req)
    await observe.until_state(raw_a, group, "PreparingRebalance")
    await t.ask(raw_a, "A sync during PreparingRebalance", sync(3, group, gen, a))
    a_join = await t.ask(raw_a, "A rejoins", join(5, group, a))
    await t.answer("B joined", b_join, b_req)
    gen2 = int(a_join.generation_id)
    await t.ask(raw_a, "A heartbeat during CompletingRebalance", heartbeat(3, group, gen2, a))
    await t.ask(raw_a, "A commit during CompletingRebalance", request(
        "OffsetCommit", 8, group_id=group, generation_id_or_member_epoch=gen2, member_id=a,
        group_instance_id=None, topics=[{"name": t.names.topic(), "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}]))
    t.add("describe", await observe.describe(raw_a, group))
