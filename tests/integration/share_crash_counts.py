"""Delivery counts across a broker crash (KIP-932), one scenario run on kgroup and on Kafka
4.4 alike (tests/reference/test_share_delivery_counts.py): what the broker counts as a
delivery when it is killed with `kill -9` while records are acquired.

Three share groups read one topic of RECORDS records, each with its own story before the
kill; after the restart a new member of each fetches, and the acquired ranges with their
delivery counts are what the scenario observed:

- "cut short": records acquired at the crash, nothing written meanwhile;
- "beside a written neighbour": record 0 released and acquired again (its second delivery),
  record 1 accepted while 0 and 2..4 are still acquired (the partition's state is written
  then), and the crash;
- "lock ran out": records acquired under a 1 s lock (the group's
  share.record.lock.duration.ms; the brokers' minimum allows it), the lock raised to 30 s,
  the records acquired again once the first lock ran out, and the crash;
- "renewed": records acquired, their locks renewed (KIP-1222: ShareAcknowledge v2, RENEW),
  and the crash: a renewal is an in-memory timer, so this is "cut short" again.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Callable

from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from kgroup.wire.api_keys import ApiKey
from tests.integration.share_session_race import ACCEPT, RECORDS, RELEASE, Member, produce

STORIES = ("cut short", "beside a written neighbour", "lock ran out", "renewed")
RENEW = 4

# What Kafka 4.4 answers (and kgroup must): a delivery that ended counts (the release, the
# lock that ran out), a delivery the crash cut short does not.
AFTER_THE_CRASH = {
    "cut short": [(0, RECORDS - 1, 1)],
    "beside a written neighbour": [(0, 0, 2), (2, RECORDS - 1, 1)],
    "lock ran out": [(0, RECORDS - 1, 2)],
    "renewed": [(0, RECORDS - 1, 1)],
}


def counted(resp) -> list[tuple[int, int, int]]:
    """(first, last, delivery count) of the ranges a ShareFetch answer acquired. Normalized:
    adjacent ranges with the same count are one (Kafka answers a range per record batch)."""
    out: list[tuple[int, int, int]] = []
    for first, last, count in sorted((int(a.first_offset), int(a.last_offset), int(a.delivery_count))
                                     for t in resp.responses for p in t.partitions for a in p.acquired_records):
        if out and out[-1][1] + 1 == first and out[-1][2] == count:
            out[-1] = (out[-1][0], last, count)
        else:
            out.append((first, last, count))
    return out


async def _until_acquired(member: Member, tries: int = 120) -> list[tuple[int, int, int]]:
    """Fetch until records are acquired (a new share partition answers empty at first on
    Kafka; a lock has to run out first)."""
    for _ in range(tries):
        got = counted(await member.fetch(max_wait=500))
        if got:
            return got
    raise AssertionError("no records were acquired")


async def _alter_group(conn: Connection, group: str, configs: dict[str, str]) -> None:
    resp = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request_fields(resources=[{
        "resource_type": 32, "resource_name": group,
        "configs": [{"name": k, "config_operation": 0, "value": v} for k, v in configs.items()]}],
        validate_only=False))
    assert int(resp.responses[0].error_code) == 0, resp


async def _prepare(host: str, port: int) -> tuple[str, uuid.UUID, dict[str, str]]:
    """The topic with its records, and one share group per story reading from the earliest."""
    topic = f"crash-{uuid.uuid4().hex[:8]}"
    groups = {story: f"crash-g{i}-{uuid.uuid4().hex[:8]}" for i, story in enumerate(STORIES)}
    conn = await Connection.open(host, port, "crash-counts", 10)
    try:
        created = await conn.request(ApiKey.CREATE_TOPICS, request_fields(topics=[{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            timeout=10_000, validate_only=False))
        assert int(created.topics[0].error_code) == 0, created
        for story, group in groups.items():
            for _ in range(100):
                found = await conn.request(ApiKey.FIND_COORDINATOR, request_fields(key=group, key_type=0,
                                                                            coordinator_keys=[group]))
                if int(found.coordinators[0].error_code) == 0:
                    break
                await asyncio.sleep(0.2)
            configs = {"share.auto.offset.reset": "earliest"}
            if story == "lock ran out":
                configs["share.record.lock.duration.ms"] = "1000"
            await _alter_group(conn, group, configs)
        md = await conn.request(ApiKey.METADATA, request_fields(topics=[{"name": topic}]), 12)
        return topic, md.topics[0].topic_id, groups
    finally:
        await conn.close()


async def _before(host: str, port: int, topic: str, topic_id: uuid.UUID, groups: dict[str, str]) -> list[Connection]:
    """Each story up to the moment of the crash; the connections stay open (the crash, not a
    closed connection, ends the deliveries)."""
    conns = []
    for story, group in groups.items():
        conn = await Connection.open(host, port, f"crash-{story}", 10)
        conns.append(conn)
        member = Member(conn, group, topic, topic_id)
        await member.join()
        assert await _until_acquired(member) == [(0, RECORDS - 1, 1)], story
        if story == "beside a written neighbour":
            released = await member.fetch(acks=[(0, 0, RELEASE)], max_bytes=0, max_wait=0)
            assert [int(p.acknowledge_error_code) for t in released.responses for p in t.partitions] == [0]
            assert await _until_acquired(member) == [(0, 0, 2)]
            accepted = await member.fetch(acks=[(1, 1, ACCEPT)], max_bytes=0, max_wait=0)
            assert [int(p.acknowledge_error_code) for t in accepted.responses for p in t.partitions] == [0]
        elif story == "lock ran out":
            # Raised now, so the second delivery's lock outlasts the crash.
            await _alter_group(conn, group, {"share.record.lock.duration.ms": "30000"})
            assert await _until_acquired(member) == [(0, RECORDS - 1, 2)]
        elif story == "renewed":
            renewed = await conn.request(ApiKey.SHARE_ACKNOWLEDGE, request_fields(
                group_id=group, member_id=member.member_id, share_session_epoch=member.session_epoch,
                is_renew_ack=True, topics=member._topics([(0, RECORDS - 1, RENEW)])), 2)
            member.session_epoch += 1
            assert int(renewed.error_code) == 0, renewed
            assert [int(p.error_code) for t in renewed.responses for p in t.partitions] == [0], renewed
    return conns


async def _after(host: str, port: int, topic: str, topic_id: uuid.UUID, groups: dict[str, str]) -> dict:
    seen = {}
    for story, group in groups.items():
        conn = await Connection.open(host, port, f"after-{story}", 10)
        try:
            member = Member(conn, group, topic, topic_id)
            await member.join()
            seen[story] = await _until_acquired(member)
        finally:
            await conn.close()
    return seen


def delivery_counts_across_a_crash(bootstrap: str, crash: Callable[[], None]) -> dict:
    """Run every story, `crash()` the broker (kill -9 and start it again on the same data),
    and return what a new member of each group is handed: story -> [(first, last, count)]."""
    host, port = bootstrap.rsplit(":", 1)
    topic, topic_id, groups = asyncio.run(_prepare(host, int(port)))
    produce(bootstrap, topic, [f"v{i}".encode() for i in range(RECORDS)])

    async def before_and_crash() -> None:
        conns = await _before(host, int(port), topic, topic_id, groups)
        crash()
        for conn in conns:
            await conn.close()

    asyncio.run(before_and_crash())
    return asyncio.run(_after(host, int(port), topic, topic_id, groups))
