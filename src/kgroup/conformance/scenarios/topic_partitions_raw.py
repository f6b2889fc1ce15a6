"""The read side of topics an operator's tools and a validating consumer ask, with exact
requests: DescribeTopicPartitions pages (KIP-966) and OffsetForLeaderEpoch (KIP-320)."""

from __future__ import annotations

from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import fetch_raw, scenario
from kgroup.conformance.target import Target


def _describe(names: list[str], limit: int, cursor: tuple[str, int] | None = None) -> Any:
    return request("DescribeTopicPartitions", 0, topics=[{"name": n} for n in names], response_partition_limit=limit,
                   cursor=None if cursor is None else {"topic_name": cursor[0], "partition_index": cursor[1]})


def _page(r: Any) -> dict[str, Any]:
    """An answer as the transcript keeps it: topics with their partitions' leaders and epochs
    (the topic ids are each broker's own: only whether one is set)."""
    cursor = r.next_cursor
    return {"topics": [{"name": t.name, "error_code": t.error_code, "has_id": t.topic_id is not None,
                        "is_internal": t.is_internal,
                        "partitions": [{"partition": int(p.partition_index), "error_code": p.error_code,
                                        "leader_id": int(p.leader_id), "leader_epoch": int(p.leader_epoch),
                                        "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
                                        "elr": p.eligible_leader_replicas, "last_known_elr": p.last_known_elr,
                                        "offline": list(p.offline_replicas)} for p in t.partitions]}
                       for t in r.topics],
            "next_cursor": None if cursor is None else (cursor.topic_name, int(cursor.partition_index))}


@scenario("admin", "DescribeTopicPartitions: pages by a partition limit and a cursor (KIP-966)",
          rule="topics in name order, at most response_partition_limit partitions an answer; a topic cut short sets "
               "next_cursor to its first partition left out, a topic reached with the limit spent to its partition "
               "0; the cursor's topic starts at the cursor's partition; an unknown named topic is answered "
               "UNKNOWN_TOPIC_OR_PARTITION and costs nothing; a cursor naming a topic not asked for is "
               "INVALID_REQUEST for every topic; each partition names its leader, epoch 0, the replicas, and an "
               "empty eligible leader replica set")
async def describe_topic_partitions_pages(t: Target) -> None:
    raw = await t.raw()
    a, b, c = t.names.topic("a"), t.names.topic("b"), t.names.topic("c")
    await observe.create_topic(raw, a, 3)
    await observe.create_topic(raw, b, 2)
    missing = t.names.topic("bb-missing")
    asks = [
        ("all three, the default limit", [c, b, a, missing], 2000, None),
        ("a limit of 2: cut inside the first topic", [a, b, missing], 2, None),
        ("from that cursor, a limit of 2", [a, b, missing], 2, (a, 2)),
        ("a limit of 3: the next topic reached with nothing left", [a, b], 3, None),
        ("a limit of 4: cut inside the second topic", [a, b], 4, None),
        ("a cursor past the topic's last partition", [a, b], 10, (a, 7)),
        ("a cursor on a topic not asked for", [a, b], 10, (c, 0)),
        ("the same topic twice", [b, b], 10, None),
        ("an illegal name", [b, "bad/name"], 10, None),
        ("a limit of 0", [a, missing], 0, None),
        ("a limit of 0, the missing topic alone", [missing], 0, None),
        ("a negative limit", [a, b], -1, None),
    ]
    for label, names, limit, cursor in asks:
        t.add(f"DescribeTopicPartitions: {label}", _page(await raw.call(_describe(names, limit, cursor))))


def _epoch_ask(topic: str, asks: list[tuple[int, int, int]], version: int) -> Any:
    fields: dict[str, Any] = {"topics": [{"topic": topic, "partitions": [
        {"partition": p, "current_leader_epoch": current, "leader_epoch": epoch} for p, current, epoch in asks]}]}
    if version >= 3:
        fields["replica_id"] = -1
    return request("OffsetForLeaderEpoch", version, **fields)


@scenario("data", "OffsetForLeaderEpoch: where a leader epoch ends (KIP-320)",
          rule="the partition's current epoch (0 for a topic that never changed leaders) ends at the log end "
               "offset; an older epoch (-2 and below) ends where the first newer one starts, with the requested "
               "epoch echoed; a newer epoch and -1 are answered -1/-1; a current_leader_epoch older than the "
               "leader's is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH; an unknown partition "
               "UNKNOWN_TOPIC_OR_PARTITION")
async def offset_for_leader_epoch(t: Target) -> None:
    raw = await t.raw()
    topic = t.names.topic()
    await observe.create_topic(raw, topic, 2)
    await observe.produce(raw, topic, 0, [b"a", b"b", b"c"])
    await observe.produce(raw, topic, 0, [b"d"])
    asks = [(0, -1, 0), (1, -1, 0), (0, 0, 0), (0, -1, -1), (0, -1, 1), (0, -1, 7), (0, -1, -2), (0, 1, 0),
            (0, -2, 0), (0, 5, 3), (9, -1, 0)]
    for version in (2, 3, 4):
        r = await raw.call(_epoch_ask(topic, asks, version))
        t.add(f"OffsetForLeaderEpoch v{version}", [
            {"partition": int(p.partition), "error_code": p.error_code, "leader_epoch": int(p.leader_epoch),
             "end_offset": int(p.end_offset)} for tr in r.topics for p in tr.partitions])
    r = await raw.call(request("OffsetForLeaderEpoch", 4, replica_id=-1, topics=[
        {"topic": t.names.topic("missing"), "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                                             "leader_epoch": 0}]}]))
    t.add("OffsetForLeaderEpoch of a missing topic", [
        {"topic": tr.topic, "partition": int(p.partition), "error_code": p.error_code} for tr in r.topics
        for p in tr.partitions])


@scenario("data", "Fetch and ListOffsets: current_leader_epoch fencing (KIP-320)",
          rule="a partition's leader epoch is 0 on a single broker; a Fetch (v9+) or ListOffsets (v4+) naming "
               "current_leader_epoch -1 or 0 is answered, an older one FENCED_LEADER_EPOCH and a newer one "
               "UNKNOWN_LEADER_EPOCH for that partition only (Fetch takes every negative epoch for none); ListOffsets names the epoch the offset was written at")
async def leader_epoch_fencing(t: Target) -> None:
    raw = await t.raw()
    topic = t.names.topic()
    await observe.create_topic(raw, topic, 1)
    await observe.produce(raw, topic, 0, [b"a", b"b"])
    for current in (-1, 0, 1, -2):
        for ts in (-2, -1, 0):
            r = await raw.call(request("ListOffsets", 9, replica_id=-1, isolation_level=0, topics=[
                {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": current,
                                                "timestamp": ts}]}]))
            t.add(f"ListOffsets v9 of timestamp {ts}, current_leader_epoch {current}", [
                {"error_code": p.error_code, "offset": int(p.offset), "leader_epoch": int(p.leader_epoch)}
                for tr in r.topics for p in tr.partitions])
        r = await raw.call(fetch_raw._fetch(topic, [(0, 0)], 0, -1, current_leader_epoch=current))
        t.add(f"Fetch v12, current_leader_epoch {current}", [
            {"error_code": p.error_code, "high_watermark": int(p.high_watermark),
             "has_records": bool(p.records)} for tr in r.responses for p in tr.partitions])
