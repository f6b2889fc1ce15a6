"""Share-session scenarios run on kgroup and on Kafka 4.4 alike (tests/integration and
tests/reference): hand-built sequences — a member that closes with its leave and its final
acknowledgement in either order, ShareFetch with MaxBytes 0 — and confluent-kafka's
ShareConsumer reading transactions with `share.isolation.level`. Each returns what it
observed, to compare."""

from __future__ import annotations

import asyncio
import time
import uuid

from kgroup.client.cluster import request_fields
from kgroup.client.connection import Connection
from tests.integration.clients import create_topic
from kgroup.wire.api_keys import ApiKey

RETRIABLE = {14, 15, 16}
ACCEPT, RELEASE = 1, 2
RECORDS = 5


class Member:
    """One share-group member over its own connection (its share session lives on it)."""

    def __init__(self, conn: Connection, group: str, topic: str, topic_id: uuid.UUID) -> None:
        self.conn, self.group, self.topic, self.topic_id = conn, group, topic, topic_id
        self.member_id = str(uuid.uuid4())
        self.epoch = 0
        self.session_epoch = 0

    async def join(self) -> None:
        for _ in range(100):
            hb = await self.heartbeat([self.topic] if self.epoch == 0 else None)
            if int(hb.error_code) in RETRIABLE:
                await asyncio.sleep(0.2)
                continue
            assert int(hb.error_code) == 0, hb
            self.epoch = int(hb.member_epoch)
            if hb.assignment is not None and hb.assignment.topic_partitions:
                return
            await asyncio.sleep(0.2)
        raise AssertionError("never assigned")

    async def heartbeat(self, topics: list[str] | None, epoch: int | None = None):
        return await self.conn.request(ApiKey.SHARE_GROUP_HEARTBEAT, request_fields(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch if epoch is None else epoch,
            rack_id=None, subscribed_topic_names=topics))

    def _topics(self, acks=()) -> list[dict]:
        return [dict(topic_id=self.topic_id, partitions=[dict(partition_index=0, acknowledgement_batches=[
            dict(first_offset=f, last_offset=la, acknowledge_types=[t]) for f, la, t in acks])])]

    async def fetch(self, max_bytes: int = 1 << 20, acks=(), max_wait: int = 500):
        first = self.session_epoch == 0
        resp = await self.conn.request(ApiKey.SHARE_FETCH, request_fields(
            group_id=self.group, member_id=self.member_id, share_session_epoch=self.session_epoch,
            max_wait=max_wait, min_bytes=1, max_bytes=max_bytes, max_records=100, batch_size=100,
            topics=self._topics(acks) if (first or acks) else [], forgotten_topics_data=[]))
        assert int(resp.error_code) == 0, resp
        self.session_epoch += 1
        return resp

    async def fetch_records(self) -> list[tuple[int, int]]:
        for _ in range(60):
            got = acquired(await self.fetch())
            if got:
                return got
        raise AssertionError("no records were acquired")

    async def acknowledge_final(self, acks):
        return await self.conn.request(ApiKey.SHARE_ACKNOWLEDGE, request_fields(
            group_id=self.group, member_id=self.member_id, share_session_epoch=-1, topics=self._topics(acks)))


def acquired(resp) -> list[tuple[int, int]]:
    return [(a.first_offset, a.last_offset) for t in resp.responses for p in t.partitions for a in p.acquired_records]


async def _setup(bootstrap: str) -> tuple[str, int, str, str, uuid.UUID]:
    """A topic with RECORDS records and a share group that starts at the earliest offset."""
    from confluent_kafka import Producer

    host, port = bootstrap.rsplit(":", 1)
    topic, group = f"ss-{uuid.uuid4().hex[:8]}", f"ss-g-{uuid.uuid4().hex[:8]}"
    conn = await Connection.open(host, int(port), "share-sessions", 10)
    try:
        created = await conn.request(ApiKey.CREATE_TOPICS, request_fields(topics=[{
            "name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}],
            timeout=10_000, validate_only=False))
        assert int(created.topics[0].error_code) == 0
        for _ in range(100):
            found = await conn.request(ApiKey.FIND_COORDINATOR, request_fields(key=group, key_type=0, coordinator_keys=[group]))
            if int(found.coordinators[0].error_code) == 0:
                break
            await asyncio.sleep(0.2)
        altered = await conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, request_fields(resources=[{
            "resource_type": 32, "resource_name": group,
            "configs": [{"name": "share.auto.offset.reset", "config_operation": 0, "value": "earliest"}]}],
            validate_only=False))
        assert int(altered.responses[0].error_code) == 0, altered
        md = await conn.request(ApiKey.METADATA, request_fields(topics=[{"name": topic}]), 12)
        topic_id = md.topics[0].topic_id
    finally:
        await conn.close()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, f"v{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    return host, int(port), topic, group, topic_id


async def close_race(bootstrap: str, leave_first: bool) -> dict:
    """A member takes every record and closes: the leave and the final ACCEPT in one order,
    each on its own connection as a client sends them; then a new member fetches."""
    host, port, topic, group, topic_id = await _setup(bootstrap)
    conns = [await Connection.open(host, port, f"share-sessions-{i}", 10) for i in range(3)]
    try:
        member = Member(conns[0], group, topic, topic_id)
        await member.join()
        got = await member.fetch_records()
        leaver = Member(conns[1], group, topic, topic_id)
        leaver.member_id, leaver.epoch = member.member_id, -1

        async def leave():
            return int((await leaver.heartbeat(None, -1)).error_code)

        async def accept():
            resp = await member.acknowledge_final([(f, la, ACCEPT) for f, la in got])
            return int(resp.error_code), [int(p.error_code) for t in resp.responses for p in t.partitions]

        if leave_first:
            left, acked = await leave(), await accept()
        else:
            acked, left = await accept(), await leave()
        again = Member(conns[2], group, topic, topic_id)
        await again.join()
        redelivered = acquired(await again.fetch(max_wait=1000))
        return {"acquired": got, "leave": left, "acknowledge": acked, "delivered again": redelivered}
    finally:
        for conn in conns:
            await conn.close()


async def max_bytes_zero(bootstrap: str) -> dict:
    """ShareFetch with MaxBytes 0: opening the session, with acknowledgements, and plain."""
    host, port, topic, group, topic_id = await _setup(bootstrap)
    conn = await Connection.open(host, port, "share-sessions-mb0", 10)
    try:
        member = Member(conn, group, topic, topic_id)
        await member.join()
        seen = {}
        opened = await member.fetch(max_bytes=0, max_wait=200)
        seen["open"] = (int(opened.error_code), acquired(opened), len(opened.responses))
        got = await member.fetch_records()
        released = await member.fetch(max_bytes=0, acks=[(f, la, RELEASE) for f, la in got], max_wait=200)
        seen["with acknowledgements"] = (acquired(released), [
            (p.partition_index, int(p.error_code), int(p.acknowledge_error_code), bytes(p.records or b""))
            for t in released.responses for p in t.partitions])
        plain = await member.fetch(max_bytes=0, max_wait=200)
        seen["plain"] = (acquired(plain), len(plain.responses))
        after = await member.fetch_records()
        seen["released records come back"] = after == got
        return seen
    finally:
        await conn.close()


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def consume(bootstrap: str, group: str, topic: str, want: int, timeout: float = 30.0,
             errors: list | None = None) -> list:
    """A ShareConsumer polls until it has `want` records, ACCEPTs each (explicit
    acknowledgement), and closes: the accepts ride on the final ShareAcknowledge, sent with
    the leave. The records."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in consumer.poll(0.2) or []:
                if m.error():
                    if errors is not None:
                        errors.append(str(m.error()))
                    continue
                got.append(m)
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    finally:
        consumer.close()
    return got


def set_isolation(bootstrap: str, group: str, level: str) -> None:
    """share.isolation.level of one group (and share.auto.offset.reset earliest), with
    confluent-kafka's AdminClient on the GROUP resource."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.isolation.level", level, incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)

    def applied() -> bool:
        (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
        return described.result(15)["share.isolation.level"].value == level

    # Kafka 4.4 applies a group config from its metadata log after IncrementalAlterConfigs
    # answers: a describe at once can show the old value (it did on a loaded machine), and a
    # share consumer that joined then would read with the old isolation level.
    from tests.integration.waits import wait_for
    wait_for(applied, 30, interval=0.2, what=f"share.isolation.level={level} applied to {group}")


# What the isolation scenario sees, on kgroup as on Kafka.
ISOLATION_SEEN = {
    "read_committed": [b"c1", b"c2", b"plain", b"c3"],
    "read_committed while a transaction is open": [],
    "read_committed after it commits": [b"late"],
    "read_uncommitted": [b"c1", b"c2", b"a1", b"a2", b"a3", b"plain", b"c3", b"late"],
}


def isolation_scenario(bootstrap: str) -> dict:
    """Committed, aborted, plain, committed and open transactions in one partition, read by a
    read_committed and a read_uncommitted share group."""
    from confluent_kafka import Producer

    topic = f"iso-{uuid.uuid4().hex[:6]}"
    committed_group, uncommitted_group = f"iso-rc-{uuid.uuid4().hex[:6]}", f"iso-ru-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, 1)
    set_isolation(bootstrap, committed_group, "read_committed")
    set_isolation(bootstrap, uncommitted_group, "read_uncommitted")
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"iso-{uuid.uuid4().hex[:6]}"})
    txn.init_transactions(30)

    def transaction(values: list[bytes], commit: bool) -> None:
        txn.begin_transaction()
        for value in values:
            txn.produce(topic, value, partition=0)
        txn.flush(30)
        (txn.commit_transaction if commit else txn.abort_transaction)(30)

    transaction([b"c1", b"c2"], commit=True)
    transaction([b"a1", b"a2", b"a3"], commit=False)
    produce(bootstrap, topic, [b"plain"])
    transaction([b"c3"], commit=True)
    # An open transaction: past the last stable offset until it commits.
    txn.begin_transaction()
    txn.produce(topic, b"late", partition=0)
    txn.flush(30)
    seen = {"read_committed": [m.value() for m in consume(bootstrap, committed_group, topic, 4)],
            "read_committed while a transaction is open":
                [m.value() for m in consume(bootstrap, committed_group, topic, 1, timeout=3)]}
    txn.commit_transaction(30)
    seen["read_committed after it commits"] = [m.value() for m in consume(bootstrap, committed_group, topic, 1)]
    # The same log read uncommitted: every record, the aborted ones too.
    seen["read_uncommitted"] = [m.value() for m in consume(bootstrap, uncommitted_group, topic, 8)]
    return seen
