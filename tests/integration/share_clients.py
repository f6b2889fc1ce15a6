"""Share consumers in their own processes, and the two clusters the share-group scenarios
run on: a real `kgroup serve`, and librdkafka's mock cluster (to check the tests)."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

from kgroup.client.cluster import ClusterClient, request_fields
from kgroup.testing.process import ChildProcess
from kgroup.wire.api_keys import ApiKey
from tests.integration.clients import create_topic, wait_for
from tests.integration.waits import hold

REPO = Path(__file__).resolve().parents[2]

# The share-group settings every scenario runs with (kgroup's TOML [group] table; the
# mock's share-group settings are set to the same).
SHARE_SETTINGS = {"share_auto_offset_reset": "earliest", "share_record_lock_duration_ms": 5000,
                  "share_delivery_count_limit": 3, "share_heartbeat_interval_ms": 1000,
                  "share_session_timeout_ms": 10_000}
LOCK_S = SHARE_SETTINGS["share_record_lock_duration_ms"] / 1000


class ShareProc:
    """One share consumer process (tests/integration/share_consumer_process.py), through the
    one process helper: its stderr (a traceback, librdkafka's complaints) is in its log and
    on a failing test's report."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, mode: str = "implicit",
                 policy: str = "accept") -> None:
        self.child = ChildProcess(
            [sys.executable, "-m", "tests.integration.share_consumer_process", client, bootstrap, group, topic,
             mode, policy], name=f"share consumer {client} {mode} {policy}", cwd=REPO, stdout_pipe=True).start()
        self.proc = self.child.proc
        self.events: list[dict] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.child.lines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def of(self, kind: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e["event"] == kind]

    def records(self) -> list[dict]:
        return self.of("record")

    def offsets(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in self.records()]

    def done(self, kind: str = "accept") -> set[tuple[int, int]]:
        return {(e["p"], o) for e in self.of("done") if e["type"] == kind for o in e["offsets"]}

    def unconfirmed(self, kind: str = "accept") -> set[tuple[int, int]]:
        """Records whose acknowledgement the consumer sent without getting the broker's
        confirmation (its commit failed, e.g. the broker was killed before it answered)."""
        return {(e["p"], o) for e in self.of("failed") if e["type"] == kind for o in e["offsets"]}

    def wait_ready(self, timeout: float = 60) -> "ShareProc":
        wait_for(lambda: self.of("ready"), timeout, what="the share consumer to subscribe")
        return self

    def signal(self, sig: int) -> None:
        self.child.signal(sig)

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM: the consumer closes cleanly (implicit acknowledgements are sent)."""
        self.child.stop(timeout)

    def kill(self) -> None:
        self.child.kill()


def delivered_once(procs: list[ShareProc]) -> Counter:
    """How many times each (partition, offset) was delivered across `procs`."""
    return Counter(o for p in procs for o in p.offsets())


def delivered_after_accept(proc: ShareProc) -> list[tuple[int, int]]:
    """Replay the consumer's own story: the records delivered again after the broker
    confirmed their ACCEPT (there must be none; for a group of this one member)."""
    confirmed: set[tuple[int, int]] = set()
    again = []
    for event in proc.events:
        if event["event"] == "done" and event["type"] == "accept":
            confirmed.update((event["p"], o) for o in event["offsets"])
        elif event["event"] == "record" and (event["p"], event["o"]) in confirmed:
            again.append((event["p"], event["o"]))
    return again


class KgroupCluster:
    """A real broker: topics by CreateTopics, members by ShareGroupDescribe."""

    name = "kgroup"

    def __init__(self, broker) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap

    def create_topic(self, topic: str, partitions: int) -> None:
        create_topic(self.bootstrap, topic, partitions)

    def _admin(self, ask):
        """`ask(admin)` with a fresh AdminClient on this broker, run to its answer."""
        from kgroup.client.admin import AdminClient

        async def run():
            async with AdminClient(self.bootstrap) as admin:
                return await ask(admin)

        return asyncio.run(run())

    def members(self, group: str) -> int:
        async def count(admin) -> int:
            described = await admin.describe_share_group(group)
            return 0 if described is None else len(described.members)
        return self._admin(count)

    def assigned_members(self, group: str, latest: bool = False) -> int:
        """How many members of the share group have partitions assigned (ShareGroupDescribe);
        with `latest`, only those told them at the group's epoch (their epoch is the group's):
        not an earlier assignment they would still fetch by."""
        async def count(admin) -> int:
            d = await admin.describe_share_group(group)
            return 0 if d is None else sum(1 for m in d.members
                                           if m.assignment and (not latest or m.member_epoch == d.epoch))
        return self._admin(count)

    def start_offsets(self, group: str) -> dict[tuple[str, int], int]:
        return self._admin(lambda admin: admin.list_share_group_offsets(group))

    def lags(self, group: str) -> dict[tuple[str, int], int]:
        """(topic, partition) -> records not yet acknowledged or archived (DescribeShareGroupOffsets'
        lag). Every record accepted shows here as 0 at once, while the start offset the call
        reads trails one change, as in Kafka 4.4 (core/share_partition.py says why)."""
        async def lags(admin) -> dict[tuple[str, int], int]:
            return {k: lag for k, (_, lag) in (await admin.share_group_offsets(group)).items()}
        return self._admin(lags)


class MockCluster:
    """librdkafka's mock cluster with the same share-group settings."""

    name = "mock"

    def __init__(self) -> None:
        from tests.integration.rdkafka_mock import MockCluster as Mock

        self.mock = Mock(brokers=1)
        # The broker's session timeout and heartbeat too: with the mock's own (45 s), a frozen
        # member of a one-partition topic (which the mock gives to one member of two) held the
        # partition from the other for 45 s, where kgroup's session expires in 10.
        self.mock.share_groups(record_lock_ms=SHARE_SETTINGS["share_record_lock_duration_ms"],
                               delivery_limit=SHARE_SETTINGS["share_delivery_count_limit"], earliest=True,
                               session_timeout_ms=SHARE_SETTINGS["share_session_timeout_ms"],
                               heartbeat_interval_ms=SHARE_SETTINGS["share_heartbeat_interval_ms"])
        self.bootstrap = self.mock.bootstrap

    def create_topic(self, topic: str, partitions: int) -> None:
        self.mock.create_topic(topic, partitions)

    def members(self, group: str) -> int:
        return self.mock.share_members(group)

    def close(self) -> None:
        self.mock.close()


class RawShareClient:
    """Hand-built share-group requests over one connection (a share session lives on it), to
    send what no well-behaved client would; partition 0 of `topic` is the one fetched."""

    def __init__(self, bootstrap: str, topic: str, group: str) -> None:
        self.topic = topic
        self.group = group
        self.cluster = ClusterClient(bootstrap, client_id="raw-share")
        self.conn = None
        self.topic_id = ""

    async def __aenter__(self) -> "RawShareClient":
        md = await self.cluster.metadata([self.topic])
        self.topic_id = str(md.topics[self.topic].topic_id)
        self.conn = await self.cluster.node(await self.cluster.leader(self.topic, 0))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.cluster.close()

    async def call(self, api_key: int, **fields):
        """Any request, to the broker the connection is open to."""
        return await self.cluster.request(self.conn, api_key, request_fields(**fields), timeout=10)

    async def heartbeat(self, member_id: str, epoch: int, group: str | None = None,
                        topics: tuple[str, ...] | None = ()):
        """ShareGroupHeartbeat; `topics` () subscribes to `topic`, None leaves it unchanged."""
        return await self.cluster.request(self.conn, ApiKey.SHARE_GROUP_HEARTBEAT, request_fields(
            group_id=self.group if group is None else group, member_id=member_id, member_epoch=epoch, rack_id=None,
            subscribed_topic_names=None if topics is None else list(topics or (self.topic,))), timeout=10)

    async def join(self, member_id: str) -> None:
        """Join and heartbeat until the member is given the topic's partition."""
        resp = await self.heartbeat(member_id, 0)
        assert resp.error_code == 0, resp
        for _ in range(50):
            if resp.assignment is not None and resp.assignment.topic_partitions:
                return
            await asyncio.sleep(0.1)
            resp = await self.heartbeat(member_id, int(resp.member_epoch), topics=None)
            assert resp.error_code == 0, resp
        raise AssertionError("the member was never assigned the partition")

    def _partitions(self, acks, topic_id: str | None = None, partition: int = 0) -> list[dict]:
        batches = [dict(first_offset=f, last_offset=la, acknowledge_types=list(types)) for f, la, types in acks]
        return [dict(topic_id=uuid.UUID(topic_id or self.topic_id),
                     partitions=[dict(partition_index=partition, acknowledgement_batches=batches)])]

    async def fetch(self, member_id: str, epoch: int, acks=(), group: str | None = None):
        return await self.cluster.request(self.conn, ApiKey.SHARE_FETCH, request_fields(
            group_id=self.group if group is None else group, member_id=member_id, share_session_epoch=epoch,
            max_wait=0, min_bytes=1, max_bytes=1024 * 1024, max_records=100, batch_size=100, topics=self._partitions(acks),
            forgotten_topics_data=[]), timeout=10)

    async def acknowledge(self, member_id: str, epoch: int, acks, topic_id: str | None = None):
        return await self.cluster.request(self.conn, ApiKey.SHARE_ACKNOWLEDGE, request_fields(
            group_id=self.group, member_id=member_id, share_session_epoch=epoch,
            topics=self._partitions(acks, topic_id)), timeout=10)


def produce(bootstrap: str, topic: str, count: int, partitions: int) -> None:
    """`count` records spread round-robin over the partitions, all acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"value-{i}".encode(), partition=i % partitions)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def settle(seconds: float) -> None:
    """Let time pass for a lock or a poll loop (the scenarios are about time)."""
    hold(seconds, "a record lock or a poll loop runs its course")
