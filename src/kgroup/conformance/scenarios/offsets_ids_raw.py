"""Offsets by topic id: OffsetCommit and OffsetFetch v10 (KIP-848), and what a deleted topic's
offsets become (exact sequences)."""

from __future__ import annotations

import uuid

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import set_up
from kgroup.conformance.scenarios.offsets_raw import fetch
from kgroup.conformance.target import Target


def commit_by_id(group: str, offsets: dict[tuple[uuid.UUID | None, int], int], *, generation: int = -1,
                 member: str = ""):
    """OffsetCommit v10: topics by id (None: the zero id)."""
    topics: dict[uuid.UUID | None, list[dict]] = {}
    for (topic_id, partition), offset in offsets.items():
        topics.setdefault(topic_id, []).append({
            "partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
            "committed_metadata": "m"})
    return request("OffsetCommit", 10, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                   group_instance_id=None, topics=[{"topic_id": t, "partitions": ps} for t, ps in topics.items()])


def fetch_by_id(group: str, topics: dict[uuid.UUID, list[int]] | None = None):
    """OffsetFetch v10: topics by id, or None for every topic the group has offsets of."""
    return request("OffsetFetch", 10, require_stable=False, groups=[{
        "group_id": group, "member_id": None, "member_epoch": -1,
        "topics": None if topics is None else [{"topic_id": t, "partition_indexes": ps} for t, ps in topics.items()]}])


async def delete_topic(raw, name: str) -> None:
    r = await raw.call(request("DeleteTopics", 6, topics=[{"name": name, "topic_id": None}], timeout_ms=30_000))
    code = int(r.responses[0].error_code)
    if code:
        raise AssertionError(f"DeleteTopics {name}: error {code}")

    async def gone() -> bool:
        m = await raw.call(request("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False))
        return int(m.topics[0].error_code) != 0
    await observe.until(gone, f"topic {name} is gone")


@scenario("offsets", "OffsetCommit and OffsetFetch v10: topics by id",
          rule="from v10 (KIP-848) OffsetCommit and OffsetFetch name topics by id and answer by id; an id no "
               "topic has (the zero id too) is UNKNOWN_TOPIC_ID per partition and stores nothing (a commit of "
               "only such ids creates no group), a partition past the topic's count UNKNOWN_TOPIC_OR_PARTITION; "
               "v9 sees the same offsets by name")
async def offsets_topic_ids(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    tid = await observe.topic_id(raw, topic)
    nobody = uuid.uuid5(uuid.NAMESPACE_URL, t.names.topic("nobody"))   # no topic has it
    await t.ask(raw, "commit by id", commit_by_id(group, {(tid, 0): 5, (tid, 1): 6}))
    await t.ask(raw, "commit an id no topic has", commit_by_id(group, {(nobody, 0): 1}))
    await t.ask(raw, "commit the zero id", commit_by_id(group, {(None, 0): 1}))
    await t.ask(raw, "commit a known id past its partitions, and an unknown id", commit_by_id(
        group, {(tid, 7): 1, (nobody, 1): 1, (tid, 0): 8}))
    await t.ask(raw, "fetch every topic by id", fetch_by_id(group))
    await t.ask(raw, "fetch by id, an unknown id too", fetch_by_id(group, {tid: [0, 1, 5], nobody: [0]}))
    await t.ask(raw, "fetch every topic by name (v9)", fetch(9, group))
    lone = t.names.group("lone")
    await observe.coordinator(raw, lone)
    await t.ask(raw, "commit only unknown ids to a new group", commit_by_id(lone, {(nobody, 0): 1}))
    t.add("describe the new group", await observe.describe(raw, lone))


@scenario("offsets", "a deleted topic's offsets, and a topic created again under its name",
          rule="deleting a topic deletes its committed offsets in every group (the group stays): its old id "
               "answers UNKNOWN_TOPIC_ID, and a topic created again with the same name (a new id) has no "
               "offsets, by id or by name, until committed anew")
async def offsets_deleted_topic(t: Target) -> None:
    raw, group, topic = await set_up(t, 2)
    old = await observe.topic_id(raw, topic)
    await t.ask(raw, "commit by id", commit_by_id(group, {(old, 0): 5, (old, 1): 6}))
    await t.ask(raw, "commit by name (v9)", request("OffsetCommit", 9, group_id=group,
                                                    generation_id_or_member_epoch=-1, member_id="",
                                                    group_instance_id=None, topics=[{"name": topic, "partitions": [
                                                        {"partition_index": 1, "committed_offset": 7,
                                                         "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
    await delete_topic(raw, topic)

    # Kafka deletes the offsets once its coordinator sees the deletion (a moment after
    # DeleteTopics answers): wait for it, then look.
    async def forgotten() -> bool:
        r = await raw.call(fetch(9, group))
        return not r.groups[0].topics
    await observe.until(forgotten, "the deleted topic's offsets are gone")
    await t.ask(raw, "fetch every topic after the deletion", fetch_by_id(group))
    await t.ask(raw, "fetch the old id", fetch_by_id(group, {old: [0, 1]}))
    await t.ask(raw, "commit to the old id", commit_by_id(group, {(old, 0): 9}))
    await observe.create_topic(raw, topic, 2)
    new = await observe.topic_id(raw, topic)
    t.add("the new topic has a new id", new != old)
    await t.ask(raw, "fetch the new id", fetch_by_id(group, {new: [0, 1]}))
    await t.ask(raw, "fetch by name (v9)", fetch(9, group, {topic: [0, 1]}))
    await t.ask(raw, "fetch every topic", fetch_by_id(group))
    await t.ask(raw, "commit to the new id", commit_by_id(group, {(new, 1): 3}))
    await t.ask(raw, "fetch every topic again", fetch_by_id(group))
    t.add("describe the group", await observe.describe(raw, group))
