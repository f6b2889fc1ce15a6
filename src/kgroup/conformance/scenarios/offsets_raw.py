"""Offsets: OffsetCommit / OffsetFetch / OffsetDelete / DeleteGroups, exact sequences."""

from __future__ import annotations

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import set_up, stable_member
from kgroup.conformance.scenarios.consumer_raw import hb, joined, member_id
from kgroup.conformance.scenarios.consumer_raw import set_up as consumer_set_up
from kgroup.conformance.target import Target


def commit(version: int, group: str, offsets: dict[tuple[str, int], int], *, generation: int = -1,
           member: str = "", instance: str | None = None, metadata: str | None = "", leader_epoch: int = -1,
           retention_ms: int = -1):
    topics: dict[str, list[dict]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append({
            "partition_index": partition, "committed_offset": offset, "committed_leader_epoch": leader_epoch,
            "committed_metadata": metadata, "commit_timestamp": -1})
    return request("OffsetCommit", version, group_id=group, generation_id_or_member_epoch=generation,
                   generation_id=generation, member_id=member, group_instance_id=instance,
                   retention_time_ms=retention_ms,
                   topics=[{"name": t, "partitions": ps} for t, ps in topics.items()])


def fetch(version: int, group: str, topics: dict[str, list[int]] | None = None, *, require_stable: bool = False):
    if version >= 8:
        return request("OffsetFetch", version, require_stable=require_stable, groups=[{
            "group_id": group,
            "topics": None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}])
    return request("OffsetFetch", version, group_id=group, require_stable=require_stable,
                   topics=None if topics is None else [{"name": t, "partition_indexes": ps}
                                                       for t, ps in topics.items()])


@scenario("offsets", "simple commits: no members, generation -1",
          rule="a group with no members accepts commits with generation -1 and no member id (manual "
               "assignment); OffsetFetch returns them with their metadata and leader epoch, -1 for a "
               "partition never committed, and nothing for a group that does not exist")
async def offsets_simple_commits(t: Target) -> None:
    raw, group, topic = await set_up(t, 3)
    await t.ask(raw, "commit v8", commit(8, group, {(topic, 0): 5, (topic, 1): 7}, metadata="meta", leader_epoch=0))
    await t.ask(raw, "commit v2 with a retention time", commit(2, group, {(topic, 2): 9}, retention_ms=60_000))
    await t.ask(raw, "commit v9 with epoch -1", commit(9, group, {(topic, 0): 6}))
    await t.ask(raw, "fetch everything (v8)", fetch(8, group))
    await t.ask(raw, "fetch some partitions (v8)", fetch(8, group, {topic: [0, 2, 1]}))
    await t.ask(raw, "fetch some partitions (v5)", fetch(5, group, {topic: [1]}))
    await t.ask(raw, "fetch everything (v1)", fetch(1, group, {topic: [0]}))
    other = t.names.group("missing")
    await observe.coordinator(raw, other)
    await t.ask(raw, "fetch a group that does not exist", fetch(8, other))
    await t.ask(raw, "fetch partitions of a group that does not exist", fetch(8, other, {topic: [0]}))
    t.add("describe", await observe.describe(raw, group))


@scenario("offsets", "classic commits fenced by generation and member",
          rule="a member of a classic group commits with its generation and member id: another generation "
               "is ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, a simple commit to a group with "
               "members too, and a static member's instance under another id FENCED_INSTANCE_ID")
async def offsets_classic_fencing(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    member, gen = await stable_member(t, raw, group, instance="i-1")
    await t.ask(raw, "commit as the member", commit(8, group, {(topic, 0): 1}, generation=gen, member=member,
                                                    instance="i-1"))
    await t.ask(raw, "commit with another generation", commit(8, group, {(topic, 0): 2}, generation=gen + 1,
                                                              member=member, instance="i-1"))
    await t.ask(raw, "commit as an unknown member", commit(8, group, {(topic, 0): 3}, generation=gen, member="nobody"))
    await t.ask(raw, "simple commit to a group with members", commit(8, group, {(topic, 0): 4}))
    await t.ask(raw, "commit with the instance under another id", commit(8, group, {(topic, 0): 5}, generation=gen,
                                                                         member="nobody", instance="i-1"))
    await t.ask(raw, "commit v7 without the instance", commit(7, group, {(topic, 0): 6}, generation=gen, member=member))
    await t.ask(raw, "fetch", fetch(8, group))


@scenario("offsets", "consumer-group commits fenced by member epoch",
          rule="OffsetCommit v9+ to a consumer group carries the member epoch: an older epoch is "
               "STALE_MEMBER_EPOCH, a newer one or an unknown member is refused; a simple commit (epoch -1) "
               "to a group with members is refused too")
async def offsets_consumer_fencing(t: Target) -> None:
    raw, group, topic = await consumer_set_up(t, 2)
    a = member_id(t, "a")
    epoch, _ = await joined(t, raw, group, a, topic)
    await t.ask(raw, "commit with the member epoch", commit(9, group, {(topic, 0): 1}, generation=epoch, member=a))
    await t.ask(raw, "commit with an older epoch", commit(9, group, {(topic, 0): 2}, generation=epoch - 1, member=a))
    await t.ask(raw, "commit with a newer epoch", commit(9, group, {(topic, 0): 3}, generation=epoch + 1, member=a))
    await t.ask(raw, "commit as an unknown member", commit(9, group, {(topic, 0): 4}, generation=epoch,
                                                           member=member_id(t, "x")))
    await t.ask(raw, "simple commit to the group", commit(9, group, {(topic, 0): 5}))
    await t.ask(raw, "commit v8 to a consumer group", commit(8, group, {(topic, 0): 6}, generation=epoch, member=a))
    await t.ask(raw, "fetch v9 as the member", request("OffsetFetch", 9, require_stable=False, groups=[{
        "group_id": group, "member_id": a, "member_epoch": epoch, "topics": None}]))
    await t.ask(raw, "fetch v9 with a stale epoch", request("OffsetFetch", 9, require_stable=False, groups=[{
        "group_id": group, "member_id": a, "member_epoch": epoch - 1, "topics": None}]))
    await t.ask(raw, "fetch", fetch(8, group))


@scenario("offsets", "OffsetDelete and DeleteGroups",
          rule="OffsetDelete removes an empty group's offsets (GROUP_SUBSCRIBED_TO_TOPIC while a member "
               "subscribes to the topic, GROUP_ID_NOT_FOUND for no group); DeleteGroups removes an empty "
               "group with its offsets, NON_EMPTY_GROUP while it has members")
async def offsets_delete(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    await t.ask(raw, "commit", commit(8, group, {(topic, 0): 5, (topic, 1): 6}))
    await t.ask(raw, "delete one partition's offset", request(
        "OffsetDelete", 0, group_id=group, topics=[{"name": topic, "partitions": [{"partition_index": 0}]}]))
    await t.ask(raw, "fetch", fetch(8, group))
    busy = t.names.group("busy")
    await observe.coordinator(raw, busy)
    cg = member_id(t, "busy")
    r = await t.ask(raw, "a consumer member subscribes", hb(busy, cg, 0, topics=[topic], owned=[]))
    await t.ask(raw, "commit as the member", commit(9, busy, {(topic, 0): 1}, generation=int(r.member_epoch),
                                                    member=cg))
    await t.ask(raw, "delete a subscribed topic's offset", request(
        "OffsetDelete", 0, group_id=busy, topics=[{"name": topic, "partitions": [{"partition_index": 0}]}]))
    missing = t.names.group("missing")
    await observe.coordinator(raw, missing)
    await t.ask(raw, "delete offsets of no group", request(
        "OffsetDelete", 0, group_id=missing, topics=[{"name": topic, "partitions": [{"partition_index": 0}]}]))
    await t.ask(raw, "delete the groups", request("DeleteGroups", 2, groups_names=[group, busy, missing]))
    await t.ask(raw, "fetch after delete", fetch(8, group))
    await t.ask(raw, "the member leaves", hb(busy, cg, -1))
    await t.ask(raw, "delete the emptied consumer group", request("DeleteGroups", 2, groups_names=[busy]))
    t.add("describe the deleted consumer group", await observe.consumer_describe(raw, busy))


@scenario("offsets", "commit limits and unusual offsets",
          rule="metadata over offset.metadata.max.bytes (4096) is OFFSET_METADATA_TOO_LARGE for that "
               "partition; a null metadata is stored as empty; any offset, even negative, is stored as sent")
async def offsets_limits(t: Target) -> None:
    raw, group, topic = await set_up(t, 3)
    await t.ask(raw, "commit with 4097 bytes of metadata", commit(8, group, {(topic, 0): 1}, metadata="x" * 4097))
    await t.ask(raw, "commit with 4096 bytes of metadata", commit(8, group, {(topic, 1): 1}, metadata="y" * 4096))
    await t.ask(raw, "commit with null metadata", commit(8, group, {(topic, 2): 3}, metadata=None))
    await t.ask(raw, "commit a negative offset", commit(8, group, {(topic, 0): -5}))
    await t.ask(raw, "fetch", fetch(8, group))


@scenario("offsets", "commits and fetches naming a topic that does not exist",
          rule="Kafka 4.x answers UNKNOWN_TOPIC_OR_PARTITION for a commit to a topic or partition that does "
               "not exist (and fetches nothing for it)")
async def offsets_unknown_topic(t: Target) -> None:
    raw, group, topic = await set_up(t, 1)
    await t.ask(raw, "commit to a topic that does not exist", commit(8, group, {(t.names.topic("nope"), 0): 1}))
    await t.ask(raw, "commit to a partition that does not exist", commit(8, group, {(topic, 5): 1}))
    await t.ask(raw, "fetch it", fetch(8, group, {t.names.topic("nope"): [0], topic: [5]}))
