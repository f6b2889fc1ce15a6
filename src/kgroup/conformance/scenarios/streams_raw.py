"""Streams groups (KIP-1071) where they meet transactions and ACLs, asked with exact
StreamsGroupHeartbeat sequences (the scenarios of streams groups alone are in
tests/streams/test_streams_differential.py).

A member here is a hand-written one: its member and process ids are the scenario's, its
topology one stateless subtopology reading the scenario's topic (no internal topics to
create), so the coordinator's answers are comparable whole."""

from __future__ import annotations

from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.offsets_raw import fetch
from kgroup.conformance.scenarios.streams_random import described
from kgroup.conformance.scenarios.security import (
    GROUP_RESOURCE, LITERAL, PREFIXED, READ, TOPIC_RESOURCE, until_allowed, acl)
from kgroup.conformance.scenarios.transactions_raw import TxnProducer, txn_ready, until_settled
from kgroup.conformance.target import Target

# STREAMS_GROUP_HEARTBEAT's status codes: a topology whose source topics are missing.
MISSING_SOURCE_TOPICS = 1


def heartbeat(group: str, member: str, epoch: int, topic: str | None = None, *, active: Any = None,
              process: str = "p0", changelog: str | None = None, instance: str | None = None) -> Any:
    """A StreamsGroupHeartbeat v0: a join (epoch 0) sends a one-subtopology topology reading
    `topic`; later beats report the active tasks held (`active`: [(subtopology, [partitions])])."""
    joining = epoch == 0
    topology = {"epoch": 0, "subtopologies": [{
        "subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [],
        "state_changelog_topics": [{"name": changelog, "partitions": 0, "replication_factor": -1, "topic_configs": []}]
        if changelog else [],
        "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}
    tasks = [{"subtopology_id": s, "partitions": ps} for s, ps in (active or [])]
    return request("StreamsGroupHeartbeat", 0, group_id=group, member_id=member, member_epoch=epoch,
                   endpoint_information_epoch=-1, instance_id=instance, rack_id=None,
                   rebalance_timeout=30_000 if joining else -1, topology=topology if joining else None,
                   active_tasks=tasks, standby_tasks=[], warmup_tasks=[],
                   process_id=process if joining else None, user_endpoint=None,
                   client_tags=[] if joining else None, task_offsets=[] if joining else None,
                   task_end_offsets=[] if joining else None, shutdown_application=False)


def seen(r: Any) -> dict:
    """What a heartbeat answer says, comparable across brokers (intervals left out)."""
    return {"error_code": int(r.error_code), "error_message": r.error_message, "member_epoch": r.member_epoch,
            "active_tasks": None if r.active_tasks is None else
            sorted((t.subtopology_id, sorted(t.partitions)) for t in r.active_tasks),
            "status": None if r.status is None else sorted((int(s.status_code), s.status_detail) for s in r.status)}


async def assigned_member(t: Target, raw, group: str, topic: str, member: str = "m0",
                          instance: str | None = None) -> tuple[int, list]:
    """Join until the coordinator sees the topic (Kafka's coordinator learns of a new topic
    from its metadata image a moment after it is served: the beats before are unrecorded),
    then beat until the member holds its tasks; the answers from the join on are recorded."""
    async def joined() -> Any:
        r = await raw.call(heartbeat(group, member, 0, topic, instance=instance))
        if int(r.error_code) == 0 and any(int(s.status_code) == MISSING_SOURCE_TOPICS for s in r.status or ()):
            await raw.call(heartbeat(group, member, -1, instance=instance))      # leave, join again
            return None
        return r
    r = await observe.until(joined, f"the coordinator of {group} sees {topic}")
    t.add("join (StreamsGroupHeartbeat v0)", seen(r))
    epoch, active = int(r.member_epoch), []
    for i in range(10):
        if r.active_tasks is not None:
            active = [(x.subtopology_id, list(x.partitions)) for x in r.active_tasks]
        if active and int(r.member_epoch) == epoch and i:
            break
        epoch = int(r.member_epoch)
        r = await raw.call(heartbeat(group, member, epoch, active=active, instance=instance))
        t.add(f"heartbeat {i + 1}", seen(r))
    return int(r.member_epoch), active


@scenario("transactions", "TxnOffsetCommit to a streams group: the member's epoch as its generation",
          rule="a streams group checks a TxnOffsetCommit's generation as its member's epoch: the member's "
               "own epoch commits, so does an older one for a task held since (not one given up); a newer epoch, generation "
               "-1 with a member id are ILLEGAL_GENERATION; an unknown member is UNKNOWN_MEMBER_ID; no member "
               "id and generation -1 commits as an admin would; the offsets are pending until the commit marker")
async def txn_offset_commit_streams_group(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t, partitions=2)
    group = t.names.group("app")
    await observe.coordinator(raw, group)
    epoch, active = await assigned_member(t, raw, group, topic)
    # A second member makes the group epoch move on: m0's epoch after it is what it holds.
    await observe.until(lambda: _second_member(raw, group, topic), f"a second member in {group}")
    # m0 revokes what m1 is to get, then is at the new epoch: its old epoch is then stale.
    first = epoch
    for i in range(8):
        r = await raw.call(heartbeat(group, "m0", epoch, active=active))
        t.add(f"m0 beats after m1 joined, {i + 1}", seen(r))
        if int(r.error_code) != 0 or int(r.member_epoch) > first:
            break
        if r.active_tasks is not None:
            active = [(x.subtopology_id, list(x.partitions)) for x in r.active_tasks]
    epoch = int(r.member_epoch)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_offsets(group, "add the group's offsets")
    await p.commit_offsets(group, {(topic, 0): 5}, "commit as m0 at its epoch", generation=epoch, member="m0")
    await p.commit_offsets(group, {(topic, 0): 6}, "commit at an older epoch, a partition still held",
                           generation=epoch - 1, member="m0")
    await p.commit_offsets(group, {(topic, 1): 6}, "commit at an older epoch, a partition given up",
                           generation=epoch - 1, member="m0")
    await p.commit_offsets(group, {(topic, 0): 6}, "commit at a newer epoch", generation=epoch + 1, member="m0")
    await p.commit_offsets(group, {(topic, 0): 7}, "commit as an unknown member", generation=epoch,
                           member="nobody")
    await p.commit_offsets(group, {(topic, 0): 7}, "commit as m0 at generation -1", generation=-1, member="m0")
    await p.commit_offsets(group, {(topic, 1): 8}, "commit without a member", generation=-1, member="")
    await t.ask(raw, "fetch, require stable", fetch(8, group, {topic: [0, 1]}, require_stable=True))
    await p.end(True, "commit")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the commit", fetch(8, group, {topic: [0, 1]}, require_stable=True))
    for m in ("m0", "m1"):
        await raw.call(heartbeat(group, m, -1))


@scenario("streams", "a static member rejoining under its own member id before it left",
          rule="a StreamsGroupHeartbeat joining (epoch 0) with the instance id of a live static member is "
               "UNRELEASED_INSTANCE_ID even under that member's own id; once it left for a while (-2) the same "
               "join takes its place again")
async def streams_static_rejoin_same_id(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 2})
    epoch, active = await assigned_member(t, raw, group, topic, instance="i0")
    r = await raw.call(heartbeat(group, "m0", 0, topic, instance="i0"))
    t.add("rejoin under its own id while in use", seen(r))
    r = await raw.call(heartbeat(group, "m0", -2, instance="i0"))
    t.add("leaves for a while (-2)", seen(r))
    r = await raw.call(heartbeat(group, "m0", 0, topic, instance="i0"))
    t.add("rejoins under its own id", seen(r))
    t.add("describe", described(await raw.call(
        request("StreamsGroupDescribe", 0, group_ids=[group], include_authorized_operations=False))))
    await raw.call(heartbeat(group, "m0", -1, instance="i0"))


async def _second_member(raw, group: str, topic: str) -> bool:
    r = await raw.call(heartbeat(group, "m1", 0, topic, process="p1"))
    return int(r.error_code) == 0


# --- ACLs (the secured pair) ----------------------------------------------------------------------

CREATE, DESCRIBE = 5, 8                      # AclOperation codes security.py does not name


def _acl(resource_type: int, name: str, operation: int, pattern: int = LITERAL) -> dict:
    return acl(resource_type, name, "User:alice", operation, pattern)


def stateful_heartbeat(group: str, member: str, epoch: int, topic: str) -> Any:
    """A join whose topology has a changelog (an internal topic the coordinator wants created)."""
    return heartbeat(group, member, epoch, topic, changelog=f"{group}-store-changelog")


def _beat(r: Any) -> dict:
    return {"error_code": int(r.error_code), "error_message": r.error_message,
            "status": None if r.status is None else sorted((int(s.status_code), s.status_detail) for s in r.status)}


def _described(r: Any) -> list:
    return [(int(g.error_code), g.error_message, g.group_state) for g in r.groups]


@scenario("security", "ACLs on streams groups and their topics", pair="secured",
          rule="StreamsGroupHeartbeat needs READ on the group and StreamsGroupDescribe DESCRIBE, else "
               "GROUP_AUTHORIZATION_FAILED; a joining topology's topics need DESCRIBE, else "
               "TOPIC_AUTHORIZATION_FAILED; its internal topics are created only with CREATE on them, else the "
               "member joins with status MISSING_INTERNAL_TOPICS saying 'Unauthorized to CREATE on topics ...'")
async def security_streams_group_acls(t: Target) -> None:
    group, topic = t.names.group("app"), t.names.topic()
    admin = await t.raw("admin", user="admin")
    await observe.coordinator(admin, group)
    await observe.create_topic(admin, topic, 2)
    alice = await t.raw("alice", user="alice")
    describe = request("StreamsGroupDescribe", 0, group_ids=[group], include_authorized_operations=False)
    t.add("alice joins without an ACL", _beat(await alice.call(heartbeat(group, "m0", 0, topic))))
    t.add("alice describes without an ACL", _described(await alice.call(describe)))
    await t.ask(admin, "allow alice to DESCRIBE the group", request("CreateAcls", 3, creations=[
        _acl(GROUP_RESOURCE, group, DESCRIBE)]))
    await until_allowed(alice, group)
    t.add("alice describes with DESCRIBE", _described(await alice.call(describe)))
    t.add("alice joins with DESCRIBE only", _beat(await alice.call(heartbeat(group, "m0", 0, topic))))
    await t.ask(admin, "allow alice to READ the group", request("CreateAcls", 3, creations=[
        _acl(GROUP_RESOURCE, group, READ)]))

    async def may_read() -> Any:
        r = await alice.call(stateful_heartbeat(group, "m0", 0, topic))
        return r if int(r.error_code) != 30 else None
    t.add("alice joins with READ, no ACL on the topics", _beat(await observe.until(may_read, "READ on the group")))
    await t.ask(admin, "allow alice to DESCRIBE the topics by prefix", request("CreateAcls", 3, creations=[
        _acl(TOPIC_RESOURCE, t.names.prefix, DESCRIBE, PREFIXED)]))

    async def may_describe() -> Any:
        r = await alice.call(stateful_heartbeat(group, "m0", 0, topic))
        return r if int(r.error_code) != 29 else None
    t.add("alice joins with DESCRIBE on the topics, no CREATE",
          _beat(await observe.until(may_describe, "DESCRIBE on the topics")))
    await t.ask(admin, "allow alice to CREATE topics by prefix", request("CreateAcls", 3, creations=[
        _acl(TOPIC_RESOURCE, t.names.prefix, CREATE, PREFIXED)]))

    async def created() -> Any:
        r = await alice.call(stateful_heartbeat(group, "m0", 0, topic))
        return r if int(r.error_code) == 0 and not r.status else None
    t.add("alice joins with CREATE: the changelog created",
          _beat(await observe.until(created, "the changelog created")))
    t.add("alice describes", _described(await alice.call(describe)))
    await alice.call(heartbeat(group, "m0", -1))
