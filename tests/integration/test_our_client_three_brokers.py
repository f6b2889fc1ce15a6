"""Our client on librdkafka's mock cluster of three brokers (``test.mock.num.brokers=3``).

The topic's partitions lead on different brokers and the group is coordinated by yet
another; the mock answers NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR to a request sent to
the wrong broker, so every request has to be routed right. Then leaders and the coordinator
move while our clients run, and a broker goes away (its connections closed, new ones
refused): producer, consumer and commits follow them.
"""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("confluent_kafka")

from kgroup.cli.main import main  # noqa: E402
from kgroup.client import (  # noqa: E402
    AdminClient,
    Consumer,
    ConsumerRebalanceListener,
    Producer,
    TopicPartition,
)
from kgroup.wire.api_keys import ApiKey
from tests.integration.rdkafka_mock import MockCluster  # noqa: E402

pytestmark = pytest.mark.integration

PARTITIONS = 6
PER_PARTITION = 50
GROUP_COORDINATOR = 2
FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "request.timeout.ms": 10_000, "retry.backoff.ms": 50}
PROTOCOLS = {"classic": {"group.protocol": "classic"},
             "consumer": {"group.protocol": "consumer"}}


@pytest.fixture
def mock():
    cluster = MockCluster(3)
    cluster.track_requests()
    yield cluster
    cluster.close()


def spread(mock: MockCluster, topic: str, group: str) -> None:
    """Partition p leads on broker p % 3 + 1; the group is coordinated by broker 2."""
    mock.create_topic(topic, PARTITIONS)
    for p in range(PARTITIONS):
        mock.set_leader(topic, p, p % 3 + 1)
    mock.set_coordinator(group, GROUP_COORDINATOR)


async def produce(bootstrap: str, topic: str, start: int, count: int) -> list:
    async with Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "retries": 10,
                         "retry.backoff.ms": 50}) as producer:
        futures = [await producer.send(topic, f"{start + i}".encode(), partition=p)
                   for i in range(count) for p in range(PARTITIONS)]
        return [await f for f in futures]


async def consume(consumer: Consumer, want: int, seen: set, timeout: float = 60) -> None:
    """Poll until ``seen`` holds ``want`` distinct (partition, offset) pairs."""
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        for records in (await consumer.getmany(timeout_ms=300)).values():
            seen.update((r.partition, r.offset) for r in records)
    assert len(seen) == want, f"consumed {len(seen)} of {want}"


def describe(capsys, bootstrap: str, group: str) -> list[list[str]]:
    """``kgroup groups describe`` rows of the offsets table, from the TOPIC column on."""
    status = main(["groups", "describe", group, "--bootstrap-server", bootstrap,
                   "--request-timeout-ms", "5000"])
    out, err = capsys.readouterr()
    assert status == 0, err
    return [line.split()[1:] for line in out.splitlines() if line.startswith(f"{group} ")]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_partitions_on_three_brokers_and_a_coordinator_on_another(mock, capsys, protocol):
    topic, group = f"t-{protocol}", f"g-{protocol}"
    spread(mock, topic, group)

    async def run() -> None:
        metas = await produce(mock.bootstrap, topic, 0, PER_PARTITION)
        for p in range(PARTITIONS):
            offsets = sorted(m.offset for m in metas if m.partition == p)
            assert offsets == list(range(PER_PARTITION))
        cfg = {"bootstrap.servers": mock.bootstrap, "group.id": group, **FAST,
               **PROTOCOLS[protocol]}
        async with Consumer(cfg) as consumer:
            consumer.subscribe([topic])
            seen: set = set()
            await consume(consumer, PARTITIONS * PER_PARTITION, seen)
            await consumer.commit()
            assert await consumer.committed(TopicPartition(topic, 4)) == PER_PARTITION
            coordinator = consumer.cluster.coordinator_connection(group)
            assert coordinator is not None
            assert coordinator.port == consumer.cluster.broker(GROUP_COORDINATOR).port
        async with AdminClient(mock.bootstrap) as admin:
            assert (await admin.find_coordinator(group)).node_id == GROUP_COORDINATOR
            assert await admin.list_group_offsets(group, {topic: list(range(PARTITIONS))}) \
                == {(topic, p): PER_PARTITION for p in range(PARTITIONS)}

    asyncio.run(run())
    # Data went to each partition's leader, group requests to the coordinator only.
    assert mock.brokers_for(ApiKey.PRODUCE) == {1, 2, 3}
    assert mock.brokers_for(ApiKey.FETCH) == {1, 2, 3}
    assert mock.brokers_for(ApiKey.OFFSET_COMMIT) == {GROUP_COORDINATOR}
    if protocol == "classic":
        assert mock.brokers_for(ApiKey.JOIN_GROUP) == {GROUP_COORDINATOR}
    rows = describe(capsys, mock.bootstrap, group)
    assert sorted(r[:5] for r in rows) == [
        [topic, str(p), str(PER_PARTITION), str(PER_PARTITION), "0"] for p in range(PARTITIONS)]


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_leaders_and_the_coordinator_move_and_a_broker_goes_away_mid_run(mock, protocol):
    topic, group = f"t-move-{protocol}", f"g-move-{protocol}"
    spread(mock, topic, group)
    total = PARTITIONS * PER_PARTITION

    async def run() -> None:
        await produce(mock.bootstrap, topic, 0, PER_PARTITION)
        cfg = {"bootstrap.servers": mock.bootstrap, "group.id": group, **FAST,
               **PROTOCOLS[protocol]}
        taken: list[set] = []

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                taken.append(revoked)

        async with Consumer(cfg) as consumer:
            consumer.subscribe([topic], listener=Listener())
            seen: set = set()
            await consume(consumer, total, seen)
            await consumer.commit()
            generation = consumer.group.member.generation
            mock.requests(clear=True)

            # 1. The coordinator moves to broker 3: heartbeats and commits follow it, with
            #    the member's generation / epoch (the group lives on).
            mock.set_coordinator(group, 3)
            heartbeat = ApiKey.HEARTBEAT if protocol == "classic" else ApiKey.CONSUMER_GROUP_HEARTBEAT
            deadline = time.monotonic() + 20
            while 3 not in mock.brokers_for(heartbeat) and time.monotonic() < deadline:
                await consumer.getmany(timeout_ms=200)
            await consumer.commit()
            assert mock.brokers_for(ApiKey.OFFSET_COMMIT) == {3}
            assert mock.brokers_for(ApiKey.FIND_COORDINATOR)

            # 2. Partition 0 moves from broker 1 to broker 2: the producer and the
            #    consumer's fetches follow it.
            mock.set_leader(topic, 0, 2)
            await produce(mock.bootstrap, topic, PER_PARTITION, PER_PARTITION)
            await consume(consumer, 2 * total, seen)

            # 3. Broker 1 goes away; its partitions (3) move to broker 3. Requests to 1 are
            #    refused: metadata comes from another broker and the clients go on.
            mock.set_leader(topic, 3, 3)
            mock.broker_down(1)
            mock.requests(clear=True)
            await produce(mock.bootstrap, topic, 2 * PER_PARTITION, PER_PARTITION)
            await consume(consumer, 3 * total, seen)
            await consumer.commit()
            assert await consumer.committed(TopicPartition(topic, 3)) == 3 * PER_PARTITION
            assert len(consumer.assignment()) == PARTITIONS
            assert mock.brokers_for(ApiKey.FETCH) == {2, 3} and mock.brokers_for(ApiKey.PRODUCE) == {2, 3}
            # The member kept its generation (epoch) and its partitions throughout.
            assert consumer.group.member.generation == generation and taken == []

    asyncio.run(run())
