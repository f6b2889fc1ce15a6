"""What a scenario looks at between its steps, asked the same way of both brokers.

Each helper sends one request at a fixed version both brokers serve (so an observation
never depends on version negotiation) over a raw connection, and returns the part of the
answer worth writing into a transcript. The waits (`until_*`) poll without writing
anything: only the state they end on is compared.
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from typing import Any, Callable

from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.storage.group_hash import partition_for_group
from kgroup.wire.record_batch import build_batch, decode_records, split_batches

OFFSETS_PARTITIONS = 50   # offsets.topic.num.partitions on both brokers

NONE = 0
COORDINATOR_NOT_AVAILABLE = 15
COORDINATOR_LOAD_IN_PROGRESS = 14
NOT_COORDINATOR = 16


_LOADING = (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR)


async def coordinator(raw: RawClient, key: str, key_type: int = 0, timeout: float = 30.0) -> None:
    """Wait until the broker coordinates `key` — a group (key type 0), a transactional id
    (1) or a share partition ("group:topic id:partition", 2) — and has loaded its partition
    of the internal topic. Kafka creates its internal
    topics lazily and loads each partition in the background: until then FindCoordinator
    says COORDINATOR_NOT_AVAILABLE and the coordinator NOT_COORDINATOR."""
    deadline = time.monotonic() + timeout
    code = -1
    while time.monotonic() < deadline:
        # Share-partition keys are FindCoordinator v6's (KIP-932).
        r = await raw.call(request("FindCoordinator", 6 if key_type == 2 else 4, key_type=key_type,
                                   coordinator_keys=[key]))
        code = int(r.coordinators[0].error_code)
        if code == NONE:
            if key_type == 0:
                probe = await raw.call(request("DescribeGroups", 5, groups=[key]))
                code = int(probe.groups[0].error_code)
            elif key_type == 1:
                probe = await raw.call(request("DescribeTransactions", 0, transactional_ids=[key]))
                code = int(probe.transaction_states[0].error_code)
            elif key_type == 2:
                group, topic_id, partition = key.rsplit(":", 2)
                probe = await raw.call(request("ReadShareGroupStateSummary", 0, group_id=group, topics=[
                    {"topic_id": _uuid_of(topic_id), "partitions": [{"partition": int(partition), "leader_epoch": 0}]}]))
                code = int(probe.results[0].partitions[0].error_code)
            if code not in _LOADING:
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no coordinator for {key!r}: error {code}")


def _uuid_of(text: str) -> uuid.UUID:
    """A topic id as Kafka prints it (22 characters of url-safe base64)."""
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))


async def producer_ids_ready(raw: RawClient, timeout: float = 30.0) -> None:
    """Wait until an idempotent producer gets a producer id: Kafka's broker fetches its
    first block of ids from the controller on the first request, answering
    COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
    deadline = time.monotonic() + timeout
    code = -1
    while time.monotonic() < deadline:
        code = int((await raw.call(request("InitProducerId", 4, transactional_id=None,
                                           transaction_timeout_ms=60_000))).error_code)
        if code == NONE:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no producer id: error {code}")


async def create_topic(raw: RawClient, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
    """CreateTopics, then wait until every partition has a leader."""
    r = await raw.call(request("CreateTopics", 7, timeout_ms=30_000, topics=[{
        "name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
        "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()]}]))
    code = int(r.topics[0].error_code)
    if code not in (0, 36):
        raise AssertionError(f"CreateTopics {name}: error {code}")
    await until(lambda: topic_ready(raw, name, partitions), f"topic {name} has leaders")
    await until(lambda: partitions_served(raw, name, partitions), f"topic {name} is served")


async def partitions_served(raw: RawClient, name: str, partitions: int) -> bool:
    """Whether every partition answers ListOffsets: Kafka's Metadata names a leader a moment
    before the broker serves the partition (a produce then gets NOT_LEADER_OR_FOLLOWER)."""
    r = await raw.call(request("ListOffsets", 7, replica_id=-1, isolation_level=0, topics=[
        {"name": name, "partitions": [{"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                                      for p in range(partitions)]}]))
    return all(int(p.error_code) == 0 for t in r.topics for p in t.partitions)


async def topic_ready(raw: RawClient, name: str, partitions: int) -> bool:
    r = await raw.call(request("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False))
    t = r.topics[0]
    return int(t.error_code) == 0 and len(t.partitions) == partitions and \
        all(int(p.leader_id) >= 0 and int(p.error_code) == 0 for p in t.partitions)


async def topic_id(raw: RawClient, name: str) -> Any:
    r = await raw.call(request("Metadata", 12, topics=[{"name": name}], allow_auto_topic_creation=False))
    return r.topics[0].topic_id


async def until(check: Callable[[], Any], what: str, timeout: float = 30.0, interval: float = 0.1) -> Any:
    """Poll the coroutine function `check` until it returns something true."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(interval)


async def settled(raw, req, done) -> None:
    """Poll `req` (unrecorded) until `done(answer)`: Kafka applies config and credential
    changes through its controller, so a describe right after an alter may still show the
    old state ("eventually consistent admin state"); kgroup is there at once."""
    async def check() -> bool:
        return bool(done(await raw.call(req)))
    await until(check, "the change is visible")


async def group_configs_visible(raw: RawClient, group: str, **configs: Any) -> None:
    """Wait until DescribeConfigs of `group` shows every value (share_auto_offset_reset ->
    share.auto.offset.reset). Kafka applies a group config through its controller, so a
    heartbeat right after the alter may still run under the broker default: under load that
    made a 1.5 s session timeout last the default 10 s on Kafka only."""
    wanted = {name.replace("_", "."): str(value) for name, value in configs.items()}
    await settled(raw, request("DescribeConfigs", 4, include_synonyms=False, include_documentation=False,
                               resources=[{"resource_type": 32, "resource_name": group,
                                           "configuration_keys": list(wanted)}]),
                  lambda r: {c.name: c.value for c in r.results[0].configs if c.name in wanted} == wanted)


async def describe(raw: RawClient, group: str, version: int = 5) -> Any:
    """DescribeGroups of one classic group."""
    r = await raw.call(request("DescribeGroups", version, groups=[group], include_authorized_operations=False))
    return r.groups[0]


async def until_state(raw: RawClient, group: str, state: str, members: int | None = None,
                      timeout: float = 30.0) -> Any:
    async def check() -> Any:
        g = await describe(raw, group)
        ok = g.group_state == state and (members is None or len(g.members) == members)
        return g if ok else None
    return await until(check, f"{group} is {state}" + (f" with {members} members" if members is not None else ""),
                       timeout)


async def consumer_describe(raw: RawClient, group: str) -> Any:
    r = await raw.call(request("ConsumerGroupDescribe", 1, group_ids=[group], include_authorized_operations=False))
    return r.groups[0]


async def share_describe(raw: RawClient, group: str) -> Any:
    r = await raw.call(request("ShareGroupDescribe", 1, group_ids=[group], include_authorized_operations=False))
    return r.groups[0]


async def committed(raw: RawClient, group: str, topics: dict[str, list[int]] | None = None,
                    require_stable: bool = False, version: int = 8) -> Any:
    """OffsetFetch v8 of one group (all its topics when `topics` is None)."""
    r = await raw.call(request("OffsetFetch", version, require_stable=require_stable, groups=[{
        "group_id": group,
        "topics": None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}]))
    return r.groups[0]


def batch(values: list[bytes | None], *, keys: list[bytes | None] | None = None, timestamp: int = 1_000,
          producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
          transactional: bool = False) -> bytes:
    """One record batch with fixed CreateTime timestamps (so both brokers store the same)."""
    keys = keys or [None] * len(values)
    return build_batch([(k, v, (), timestamp + i) for i, (k, v) in enumerate(zip(keys, values))],
                       producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
                       transactional=transactional)


async def produce(raw: RawClient, topic: str, partition: int, values: list[bytes | None], *,
                  version: int = 9, acks: int = -1, transactional_id: str | None = None, **batch_options: Any) -> Any:
    r = await raw.call(request("Produce", version, acks=acks, timeout_ms=30_000, transactional_id=transactional_id,
                               topic_data=[{"name": topic, "partition_data": [
                                   {"index": partition, "records": batch(values, **batch_options)}]}]))
    return None if r is None else r.responses[0].partition_responses[0]


def records_of(blob: bytes | None) -> list[dict[str, Any]]:
    """The records of a Fetch answer as a client sees them (control batches shown as such)."""
    out: list[dict[str, Any]] = []
    if not blob:
        return out
    for b in split_batches(bytes(blob)):
        if b.header.is_control:
            out.append({"offset": b.header.base_offset, "control": True})
            continue
        for r in decode_records(b):
            out.append({"offset": r.offset, "key": r.key, "value": r.value, "timestamp": r.timestamp})
    return out


async def fetch(raw: RawClient, topic: str, partition: int = 0, offset: int = 0, *,
                isolation_level: int = 0, version: int = 12, max_wait_ms: int = 0) -> Any:
    """Fetch v12 (topics by name) of one partition from `offset`."""
    r = await raw.call(request("Fetch", version, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1,
                               max_bytes=1 << 20, isolation_level=isolation_level, session_id=0,
                               session_epoch=-1, topics=[{"topic": topic, "partitions": [{
                                   "partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                                   "last_fetched_epoch": -1, "log_start_offset": -1,
                                   "partition_max_bytes": 1 << 20}]}], forgotten_topics_data=[], rack_id=""))
    return r.responses[0].partitions[0]


def shard_mate(group: str, tag: str) -> str:
    """A group id on the same group-metadata partition (the same coordinator shard) as
    `group`, made from `tag`."""
    want = partition_for_group(group, OFFSETS_PARTITIONS)
    i = 0
    while partition_for_group(f"{tag}-{i}", OFFSETS_PARTITIONS) != want:
        i += 1
    return f"{tag}-{i}"


async def coordinator_sees(raw: RawClient, group: str, topics: dict[str, int], timeout: float = 30.0) -> None:
    """Wait until the coordinator of `group` knows `topics` (name -> partitions).

    Kafka's group coordinator learns of a new topic from its metadata image a moment after
    Metadata answers with it: a member joining in between is assigned nothing and the group
    rebalances again when the topic arrives. So a scenario first lets a probe member of a
    group on the same shard join until it is assigned every partition, and leave."""
    probe = shard_mate(group, f"{group}-probe")
    member = str(uuid.uuid5(uuid.NAMESPACE_OID, probe))
    await coordinator(raw, probe)

    async def assigned() -> bool:
        r = await raw.call(request("ConsumerGroupHeartbeat", 1, group_id=probe, member_id=member, member_epoch=0,
                                   rebalance_timeout_ms=1_000, subscribed_topic_names=sorted(topics),
                                   topic_partitions=[]))
        got = 0
        if int(r.error_code) == 0 and r.assignment is not None:
            got = sum(len(tp.partitions) for tp in r.assignment.topic_partitions)
        await raw.call(request("ConsumerGroupHeartbeat", 1, group_id=probe, member_id=member, member_epoch=-1,
                               rebalance_timeout_ms=-1))
        return got == sum(topics.values())
    await until(assigned, f"the coordinator of {group} knows {sorted(topics)}", timeout, 0.05)


async def group_topics(raw: RawClient, group: str, topics: dict[str, int]) -> None:
    """The group's coordinator loaded, `topics` (name -> partitions) created, and the
    coordinator knowing them (see `coordinator_sees`): where a modern group's scenario starts."""
    await coordinator(raw, group)
    for name, count in topics.items():
        await create_topic(raw, name, count)
    await coordinator_sees(raw, group, topics)


async def share_offsets(raw: RawClient, group: str, topic: str, partitions: tuple[int, ...] = (0,)) -> Any:
    """DescribeShareGroupOffsets v0 of one topic's partitions of a share group."""
    return await raw.call(request("DescribeShareGroupOffsets", 0, groups=[{
        "group_id": group, "topics": [{"topic_name": topic, "partitions": list(partitions)}]}]))


async def read_all(raw: RawClient, topic: str, partition: int = 0, *, isolation_level: int = 0) -> dict[str, Any]:
    """Everything a consumer reads from offset 0 up to the high watermark (read_uncommitted)
    or the last stable offset (read_committed), fetching again after each answer: how a
    broker cuts its log into fetch answers is its business, what the consumer ends up with
    is compared."""
    offset, records, aborted = 0, [], []
    deadline = time.monotonic() + 30
    while True:
        p = await fetch(raw, topic, partition, offset, isolation_level=isolation_level)
        limit = int(p.last_stable_offset) if isolation_level else int(p.high_watermark)
        got = records_of(p.records)
        records += got
        aborted += [(int(a.producer_id), int(a.first_offset)) for a in (p.aborted_transactions or ())]
        if got:
            offset = max(r["offset"] for r in got) + 1
        if int(p.error_code) != 0 or offset >= limit or not got or time.monotonic() > deadline:
            return {"error_code": p.error_code, "high_watermark": p.high_watermark,
                    "last_stable_offset": p.last_stable_offset, "records": records,
                    "aborted_transactions": sorted(set(aborted))}
