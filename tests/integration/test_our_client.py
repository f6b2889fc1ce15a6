"""kgroup's own asyncio Consumer and Producer against real brokers and real peer clients.

- a real `kgroup serve`: produce/consume with every codec, rebalance listener, close leaving
  the group, static membership, commits;
- one group shared with kafka-python and confluent-kafka consumers (disjoint, complete);
- librdkafka's built-in mock cluster, with a confluent-kafka consumer in the same group.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from kgroup.client import CommitFailedError, Consumer, ConsumerRebalanceListener, Producer, TopicPartition
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import mock_cluster_with_topic, ConsumerThread, create_topic, produce_keyed, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One `kgroup serve` for the module (a start per test was a third of its time): every
    test has topics and groups of its own; the restart test kills and restarts it, data kept."""
    proc = BrokerProcess(tmp_path_factory.mktemp("our-client") / "data").start()
    yield proc
    proc.finish()

FAST = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest"}


class OurConsumerThread(threading.Thread):
    """Our Consumer on its own event loop and thread, recording assignments and records."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str, **settings) -> None:
        super().__init__(name=name, daemon=True)
        self.config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                       "enable.auto.commit": False, **FAST, **settings}
        self.topic = topic
        self.assigned: set[int] = set()
        self.events: list[tuple[str, set[int]]] = []
        self.consumed: list[tuple[int, int]] = []
        self.error: BaseException | None = None
        self.commit_failures: list[str] = []
        self._stop_event = threading.Event()
        self.closed = threading.Event()

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:
            self.error = exc
        finally:
            self.closed.set()

    async def _main(self) -> None:
        me = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                me.events.append(("revoked", {tp.partition for tp in revoked}))
                me.assigned -= {tp.partition for tp in revoked}

            def on_partitions_assigned(self, assigned):
                me.events.append(("assigned", {tp.partition for tp in assigned}))
                me.assigned |= {tp.partition for tp in assigned}

        async with Consumer(self.config) as consumer:
            consumer.subscribe([self.topic], listener=Listener())
            while not self._stop_event.is_set():
                for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                    assert tp.partition in self.assigned, "record of a partition we do not own"
                    self.consumed.extend((tp.partition, r.offset) for r in records)
                    try:
                        await consumer.commit({tp: records[-1].offset + 1})
                    except CommitFailedError as exc:
                        # A rebalance began after the poll (another member joined): the
                        # commit is refused, as Java's commitSync throws; an application
                        # polls on, and the partition's next owner reads from the last commit.
                        self.commit_failures.append(str(exc))

    def stop(self, timeout: float = 30) -> None:
        self._stop_event.set()
        self.closed.wait(timeout)


def _stable(owners, partitions: int) -> bool:
    sets = [o() for o in owners]
    union = set().union(*sets)
    return union == set(range(partitions)) and sum(len(s) for s in sets) == partitions


# -- against a real kgroup serve -----------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_every_codec(broker, codec):
    topic = f"codec-{codec}"
    create_topic(broker.bootstrap, topic, 2)

    async def main():
        async with Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec,
                             "linger.ms": 2}) as producer:
            futs = [await producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
                    for i in range(200)]
            metas = [await f for f in futs]
        assert all(m.offset >= 0 for m in metas)
        from kgroup.client.partitioner import partition_for_key

        assert all(m.partition == partition_for_key(f"k{i}".encode(), 2) for i, m in enumerate(metas))
        async with Consumer({"bootstrap.servers": broker.bootstrap,
                             "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
            got = []
            deadline = time.monotonic() + 20
            while len(got) < 200 and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
        assert sorted(got) == sorted(f"v{i}".encode() for i in range(200))

    asyncio.run(main())


@pytest.mark.parametrize("codec", ["snappy", "lz4", "zstd"])
def test_consume_batches_compressed_by_librdkafka(broker, codec):
    from confluent_kafka import Producer as CProducer

    topic = f"rd-{codec}"
    create_topic(broker.bootstrap, topic, 1)
    p = CProducer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 5})
    for i in range(500):
        p.produce(topic, value=b"x" * 50 + str(i).encode())
    assert p.flush(10) == 0

    async def main():
        async with Consumer({"bootstrap.servers": broker.bootstrap,
                             "auto.offset.reset": "earliest"}) as consumer:
            consumer.assign([(topic, 0)])
            n = 0
            while n < 500:
                got = await consumer.getmany(timeout_ms=5000)
                assert got, "no records"
                n += sum(len(v) for v in got.values())
            assert await consumer.position((topic, 0)) == 500

    asyncio.run(main())


def test_group_commit_seek_pause_and_close_leaves(broker):
    topic = "ours"
    create_topic(broker.bootstrap, topic, 4)
    produce_keyed(broker.bootstrap, topic, 400)

    async def main():
        events: list = []

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_assigned(self, assigned):
                events.append(("a", frozenset(assigned)))

            def on_partitions_revoked(self, revoked):
                events.append(("r", frozenset(revoked)))

        cfg = {"bootstrap.servers": broker.bootstrap, "group.id": "g1", **FAST,
               "partition.assignment.strategy": "cooperative-sticky"}
        a = Consumer(cfg, client_id="a")
        await a.start()
        a.subscribe([topic], listener=Listener())
        n = 0
        while n < 400:
            n += sum(len(v) for v in (await a.getmany(timeout_ms=1000)).values())
        assert len(a.assignment()) == 4
        await a.commit()
        tp0 = TopicPartition(topic, 0)
        assert await a.committed(tp0) == await a.position(tp0)
        # seek back and re-read partition 0
        a.seek(tp0, 0)
        again = []
        while len(again) < 5:
            again += (await a.getmany(timeout_ms=1000)).get(tp0, [])
        assert again[0].offset == 0
        # pause: nothing of a paused partition comes back
        a.pause(*a.assignment())
        assert await a.getmany(timeout_ms=300) == {}
        a.resume(*a.assignment())
        # a second (cooperative) member takes half, a keeps the rest without a revoke-all
        b = Consumer(cfg, client_id="b")
        await b.start()
        b.subscribe([topic])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(b.assignment()) != 2:
            await a.getmany(timeout_ms=100)
            await b.getmany(timeout_ms=100)
        assert len(a.assignment()) == 2 and not (a.assignment() & b.assignment())
        revoked = [e for e in events if e[0] == "r"]
        assert revoked and all(len(e[1]) == 2 for e in revoked)  # only what moved
        # b closes: it leaves, so a gets everything back well before a session timeout
        t0 = time.monotonic()
        await b.close()
        while time.monotonic() - t0 < 5 and len(a.assignment()) != 4:
            await a.getmany(timeout_ms=100)
        assert len(a.assignment()) == 4, "b's close did not leave the group"
        await a.close()

    asyncio.run(main())


def test_static_member_close_does_not_leave(broker):
    topic = "static"
    create_topic(broker.bootstrap, topic, 2)

    async def main():
        cfg = {"bootstrap.servers": broker.bootstrap, "group.id": "gs", **FAST,
               "group.instance.id": "i-1"}
        c = Consumer(cfg)
        await c.start()
        c.subscribe([topic])
        while len(c.assignment()) != 2:
            await c.getmany(timeout_ms=200)
        await c.close()
        from kgroup.client import AdminClient

        async with AdminClient(broker.bootstrap) as admin:
            desc = await admin.describe_group("gs")
        assert [m.group_instance_id for m in desc.members] == ["i-1"]

    asyncio.run(main())


def test_one_group_with_kafka_python_and_confluent_kafka(broker):
    topic = "mixed"
    partitions = 6
    create_topic(broker.bootstrap, topic, partitions)
    produce_keyed(broker.bootstrap, topic, 3000)
    group = "mixed-group"
    ours = OurConsumerThread(broker.bootstrap, group, topic, "ours")
    kp = ConsumerThread("kafka-python", broker.bootstrap, group, topic, "kp")
    ck = ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, "ck")
    for t in (ours, kp, ck):
        t.start()
    try:
        owners = [lambda: set(ours.assigned), lambda: set(kp.tally.assigned),
                  lambda: set(ck.tally.assigned)]
        wait_for(lambda: _stable(owners, partitions) and all(o() for o in owners), 60,
                 what="a disjoint, complete assignment over all three clients")
        seen = lambda: ({(p, o) for p, o in ours.consumed}
                        | {(p, o) for p, o, *_ in kp.tally.consumed}
                        | {(p, o) for p, o, *_ in ck.tally.consumed})
        wait_for(lambda: len(seen()) == 3000, 60, what="every record consumed")
        assert ours.error is None and kp.tally.error is None and ck.tally.error is None
    finally:
        ours.stop()
        kp.stop(commit=False)
        ck.stop(commit=False)
    assert ours.error is None, ours.error


# -- against librdkafka's mock cluster -----------------------------------------------------


def _mock_members(bootstrap: str, group: str, topic: str) -> tuple[OurConsumerThread, ConsumerThread]:
    """Ours and a confluent-kafka consumer, both static; ours leads (the mock elects the
    smallest group.instance.id when every member has one)."""
    ours = OurConsumerThread(bootstrap, group, topic, "ours", **{"session.timeout.ms": 10000,
                                                                 "group.instance.id": "a-ours"})
    ck = ConsumerThread("confluent-kafka", bootstrap, group, topic, "ck",
                        **{"session.timeout.ms": 10000, "group.instance.id": "b-ck"})
    return ours, ck


def _wait_split(ours: OurConsumerThread, ck: ConsumerThread, partitions: int, what: str) -> None:
    """Until the two own every partition between them, each some; a timeout names both
    members' assignment events and errors."""
    owners = [lambda: set(ours.assigned), lambda: set(ck.tally.assigned)]
    try:
        wait_for(lambda: _stable(owners, partitions) and all(o() for o in owners), 60, what=what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; ours: events {ours.events} error {ours.error!r}; "
                             f"confluent-kafka: events {ck.tally.events} error {ck.tally.error!r}") from None


def test_shares_a_group_with_confluent_kafka_on_librdkafka_mock_cluster():
    holder, bootstrap, topic, partitions = mock_cluster_with_topic(100)
    group = "mock-group"
    # Our client leads, so the assignment librdkafka installs is ours. It must: the mock
    # completes a sync as soon as the leader's SyncGroup arrives and answers a follower's
    # later SyncGroup INVALID_REQUEST (state Up), which a real broker never does; with
    # confluent-kafka leading, our (slower, Python) follower lost that race under load and
    # each lost round cost a rebalance of ~9 s. The mock elects the member with the
    # smallest group.instance.id when every member has one.
    ours, ck = _mock_members(bootstrap, group, topic)
    ours.start()
    ck.start()
    try:
        _wait_split(ours, ck, partitions, "a disjoint, complete assignment on the mock cluster")
        assert ours.error is None and ck.tally.error is None
    finally:
        ours.stop()
        ck.stop(commit=False)
        del holder
    assert ours.error is None, ours.error


def test_a_commit_refused_by_a_rebalance_does_not_end_our_consumer_on_the_mock_cluster():
    """A member joins while ours consumes a steady stream and commits after each poll: the
    commit that lands in the rebalance is refused (REBALANCE_IN_PROGRESS), and the consumer
    polls on into the new generation. (CI once timed out in the test above: a refusal had
    ended the consumer loop, leaving its last partitions counted as its own.)"""
    from confluent_kafka import Producer as CkProducer

    holder, bootstrap, topic, partitions = mock_cluster_with_topic(100)
    flowing = threading.Event()

    def produce() -> None:
        producer = CkProducer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        i = 0
        while not flowing.is_set():
            producer.produce(topic, key=str(i).encode(), value=b"v")
            producer.poll(0)
            i += 1
            flowing.wait(0.005)
        producer.flush(5)

    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    group = "mock-commit-group"
    ours, ck = _mock_members(bootstrap, group, topic)
    ours.start()
    try:
        wait_for(lambda: ours.assigned and len(ours.consumed) > 50 or ours.error, 30,
                 what="our consumer reading and committing alone")
        ck.start()
        _wait_split(ours, ck, partitions, "a disjoint, complete assignment after the join")
    finally:
        flowing.set()
        ours.stop()
        ck.stop(commit=False)
        del holder
    assert ours.error is None, ours.error


def test_pattern_subscription_poll_async_for_auto_commit_and_commit_async(broker):
    create_topic(broker.bootstrap, "logs-a", 2)
    produce_keyed(broker.bootstrap, "logs-a", 20)

    async def positions_committed(consumer: Consumer) -> bool:
        return all([await consumer.committed(tp) == await consumer.position(tp) for tp in consumer.assignment()])

    async def main():
        cfg = {"bootstrap.servers": broker.bootstrap, "group.id": "pat", **FAST,
               "metadata.max.age.ms": 500, "auto.commit.interval.ms": 200}
        async with Consumer(cfg, enable_auto_commit=True) as c:
            c.subscribe(pattern=r"logs-.*")
            got = []
            deadline = time.monotonic() + 30
            while len(got) < 20 and time.monotonic() < deadline:
                record = await c.poll(timeout_ms=200)           # one record at a time
                if record is not None:
                    got.append(record)
            assert len(got) == 20 and {r.topic for r in got} == {"logs-a"}
            # A matching topic created later joins the subscription; another one does not.
            create_topic(broker.bootstrap, "logs-b", 1)
            create_topic(broker.bootstrap, "other", 1)
            produce_keyed(broker.bootstrap, "logs-b", 10)
            produce_keyed(broker.bootstrap, "other", 5)
            later = []
            async for record in c:
                later.append(record)
                if len(later) == 10:
                    break
            assert {r.topic for r in later} == {"logs-b"}
            assert {(tp.topic, tp.partition) for tp in c.assignment()} == {("logs-a", 0), ("logs-a", 1), ("logs-b", 0)}
            # enable.auto.commit: the positions get committed by polling alone.
            deadline = time.monotonic() + 10
            while not await positions_committed(c) and time.monotonic() < deadline:
                await c.getmany(timeout_ms=100)
            assert await positions_committed(c), "auto-commit did not commit the positions"
        # A new member of the group starts at the committed offsets: nothing old comes back.
        produce_keyed(broker.bootstrap, "logs-b", 3)
        async with Consumer(cfg, enable_auto_commit=False) as d:
            d.subscribe(pattern=r"logs-.*")
            fresh = []
            deadline = time.monotonic() + 20
            while len(fresh) < 3 and time.monotonic() < deadline:
                for records in (await d.getmany(timeout_ms=200)).values():
                    fresh.extend(records)
            await d.getmany(timeout_ms=500)
            assert [(r.topic, r.offset) for r in fresh] == [("logs-b", 10), ("logs-b", 11), ("logs-b", 12)]
            await d.commit_async()                               # the task carries the outcome
            assert await d.committed(TopicPartition("logs-b", 0)) == 13

    asyncio.run(main())


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_our_consumer_carries_on_after_the_broker_is_killed_and_restarted(broker, protocol):
    topic = f"restart-{protocol}"
    create_topic(broker.bootstrap, topic, 2)
    produce_keyed(broker.bootstrap, topic, 100)
    ours = OurConsumerThread(broker.bootstrap, f"rg-{protocol}", topic, "ours", **{"group.protocol": protocol})
    ours.start()
    try:
        wait_for(lambda: len(set(ours.consumed)) == 100, 60, what="first 100 records")
        broker.kill9()
        broker.start()      # the coordinator is gone, then loading: the client rediscovers it
        produce_keyed(broker.bootstrap, topic, 100)
        wait_for(lambda: len(set(ours.consumed)) == 200 or ours.error is not None, 90,
                 what="the records produced after the restart")
        assert ours.error is None, ours.error
        assert ours.assigned == {0, 1}
    finally:
        ours.stop()
    assert ours.error is None, ours.error
    assert len(set(ours.consumed)) == 200       # each record once: commits survived the restart


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_producer_acks(broker, acks):
    topic = f"acks-{acks}"
    create_topic(broker.bootstrap, topic, 1)

    async def main():
        async with Producer({"bootstrap.servers": broker.bootstrap, "acks": acks, "linger.ms": 20}) as p:
            futs = [await p.send(topic, f"v{i}".encode(), partition=0) for i in range(50)]
            metas = [await f for f in futs]
        if acks == 0:
            assert {m.offset for m in metas} == {-1}          # no answer, so no offsets
        else:
            assert [m.offset for m in metas] == list(range(50))
        async with Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"}) as c:
            c.assign([TopicPartition(topic, 0)])
            got = []
            deadline = time.monotonic() + 20
            while len(got) < 50 and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=500)).values():
                    got.extend(r.value for r in records)
        assert got == [f"v{i}".encode() for i in range(50)]

    asyncio.run(main())


def test_producer_with_several_batches_of_a_partition_ready_at_once(broker):
    # 20,000 records fill many 16 KB batches per partition faster than they are sent, so
    # one dispatch holds several batches of one partition: each must reach the log once.
    topic = "many-batches"
    create_topic(broker.bootstrap, topic, 4)

    async def main():
        async with Producer({"bootstrap.servers": broker.bootstrap}) as p:
            futs = [await p.send(topic, f"v{i}".encode(), f"k{i}".encode()) for i in range(20_000)]
            await p.flush()
            assert all(f.done() for f in futs)
            metas = [f.result() for f in futs]
        placed = {(m.partition, m.offset) for m in metas}
        assert len(placed) == 20_000
        async with Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"}) as c:
            c.assign([TopicPartition(topic, p) for p in range(4)])
            got = {}
            deadline = time.monotonic() + 60
            while len(got) < 20_000 and time.monotonic() < deadline:
                for tp, records in (await c.getmany(timeout_ms=500)).items():
                    got.update(((tp.partition, r.offset), r.value) for r in records)
        assert set(got) == placed
        assert sorted(got.values()) == sorted(f"v{i}".encode() for i in range(20_000))

    asyncio.run(main())


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_commit_inside_on_partitions_revoked_uses_the_owning_generation(broker, protocol):
    # As in Kafka, a listener commits what it processed of revoked partitions: during an
    # eager rebalance (the member is already rejoining) and when the consumer closes.
    topic = f"revoke-commit-{protocol}"
    create_topic(broker.bootstrap, topic, 2)
    group = f"revoke-commit-{protocol}"
    settings = {"bootstrap.servers": broker.bootstrap, "group.id": group,
                "group.protocol": protocol, "enable.auto.commit": False, **FAST}
    if protocol == "classic":
        settings["partition.assignment.strategy"] = "range"
    outcomes: list[str] = []

    async def main():
        a = Consumer(settings, client_id="a")
        b = Consumer(settings, client_id="b")

        class CommitOnRevoke(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                try:
                    await a.commit({tp: 10 + tp.partition for tp in revoked})
                    outcomes.append("committed")
                except Exception as exc:  # CommitFailedError before the fix
                    outcomes.append(type(exc).__name__)

        await a.start()
        a.subscribe([topic], listener=CommitOnRevoke())
        deadline = time.monotonic() + 30
        while len(a.assignment()) < 2 and time.monotonic() < deadline:
            await a.getmany(timeout_ms=100)
        assert len(a.assignment()) == 2
        await b.start()
        b.subscribe([topic])
        deadline = time.monotonic() + 30
        while not outcomes or len(b.assignment()) != 1 or len(a.assignment()) != 1:
            assert time.monotonic() < deadline, (outcomes, a.assignment(), b.assignment())
            await asyncio.gather(a.getmany(timeout_ms=100), b.getmany(timeout_ms=100))
        await a.close()
        committed = {tp.partition: await b.committed(tp) for tp in
                     (TopicPartition(topic, 0), TopicPartition(topic, 1))}
        await b.close()
        return committed

    committed = asyncio.run(main())
    assert outcomes and set(outcomes) == {"committed"}, outcomes
    # Both partitions were committed by a's listener: the rebalance revoked at least one,
    # and closing revoked the one a kept.
    assert committed == {0: 10, 1: 11}
