"""kgroup's own Consumer with group.protocol=consumer (KIP-848) against real brokers.

- a real `kgroup serve`: two of ours share a topic, a third joins and only what moves is
  revoked; close leaves at once; a static member's close keeps its membership (epoch -2);
- one group shared with confluent-kafka on the consumer protocol (disjoint, complete);
- librdkafka's built-in mock cluster (it speaks ConsumerGroupHeartbeat v1).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from kgroup.client import AdminClient, Consumer, ConsumerRebalanceListener, TopicPartition
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import mock_cluster_with_topic, create_topic, produce_keyed, wait_for
from tests.integration.test_consumer_protocol import FAST_SESSIONS, Member, Ownership
from tests.integration.test_our_client import OurConsumerThread, _stable

pytestmark = pytest.mark.integration

KIP848 = {"group.protocol": "consumer"}


@pytest.fixture
def cbroker(tmp_path, request):
    group = {**FAST_SESSIONS, **getattr(request, "param", {})}
    proc = BrokerProcess(tmp_path / "data", group=group).start()
    yield proc
    print("---- broker log (tail) ----\n" + "\n".join(proc.log().splitlines()[-80:]))
    if proc.alive():
        assert proc.stop() == 0
    assert "Traceback" not in proc.log()


def _revoked_since(thread: OurConsumerThread, mark: int) -> set[int]:
    return set().union(*[ps for kind, ps in thread.events[mark:] if kind == "revoked"])


# The test brokers assign at once (interval 0); Kafka's default interval (1 s, KIP-1263)
# leaves the first member holding every partition, with fetches in flight, before it gives
# half up: nothing of those may be handed out after the revocation.
@pytest.mark.parametrize("cbroker", [{}, {"consumer_assignment_interval_ms": 1000}],
                         ids=["interval-0", "interval-1000"], indirect=True)
def test_third_member_takes_only_what_moves(cbroker):
    topic, partitions = "t", 6
    create_topic(cbroker.bootstrap, topic, partitions)
    produce_keyed(cbroker.bootstrap, topic, 600)
    a = OurConsumerThread(cbroker.bootstrap, "cg", topic, "a", **KIP848)
    b = OurConsumerThread(cbroker.bootstrap, "cg", topic, "b", **KIP848)
    a.start()
    b.start()
    c = None
    try:
        wait_for(lambda: _stable([lambda: set(a.assigned), lambda: set(b.assigned)], partitions)
                 and len(a.assigned) == 3, 30, what="a and b own 3 each")
        wait_for(lambda: len({(p, o) for p, o in a.consumed + b.consumed}) == 600, 30,
                 what="every record consumed")
        before = {"a": set(a.assigned), "b": set(b.assigned)}
        marks = {"a": len(a.events), "b": len(b.events)}
        c = OurConsumerThread(cbroker.bootstrap, "cg", topic, "c", **KIP848)
        c.start()
        owners = [lambda: set(a.assigned), lambda: set(b.assigned), lambda: set(c.assigned)]
        wait_for(lambda: _stable(owners, partitions) and all(len(o()) == 2 for o in owners), 30,
                 what="2 each")
        for name, t in (("a", a), ("b", b)):
            revoked = _revoked_since(t, marks[name])
            # Incremental: exactly the one partition that moved to c, nothing else paused.
            assert revoked == before[name] - t.assigned and len(revoked) == 1, (name, t.events)
        assert not (a.assigned & b.assigned) and not (c.assigned & (a.assigned | b.assigned))
        # c closes: it leaves (epoch -1), so its partitions come back well before a session
        c._stop_event.set()
        wait_for(lambda: len(a.assigned) + len(b.assigned) == partitions, 5,
                 what="c's partitions back within 5 s")
    finally:
        for t in (a, b, c):
            if t is not None:
                t.stop()
    for t in (a, b, c):
        assert t is None or t.error is None, t.error


def test_static_member_close_keeps_its_membership_and_commit_with_epoch(cbroker):
    create_topic(cbroker.bootstrap, "s", 2)
    produce_keyed(cbroker.bootstrap, "s", 50)

    async def main():
        cfg = {"bootstrap.servers": cbroker.bootstrap, "group.id": "gs", **KIP848,
               "group.instance.id": "i-1", "auto.offset.reset": "earliest",
               "group.remote.assignor": "range"}
        c = Consumer(cfg)
        await c.start()
        c.subscribe(["s"])
        n = 0
        deadline = time.monotonic() + 20
        while n < 50 and time.monotonic() < deadline:
            n += sum(len(v) for v in (await c.getmany(timeout_ms=200)).values())
        assert n == 50 and len(c.assignment()) == 2
        assert c.group.member.state.name == "STABLE" and c.group.member.member_epoch > 0
        await c.commit()  # OffsetCommit v9 with the member epoch
        assert sum([await c.committed(tp) for tp in c.assignment()]) == 50
        await c.close()
        assert c.group.member.state.name == "UNSUBSCRIBED"
        async with AdminClient(cbroker.bootstrap) as admin:
            desc = await admin.describe_group("gs")
        # epoch -2: the static member stays (with its assignment) until its session ends
        assert [m.group_instance_id for m in desc.members] == ["i-1"]

    asyncio.run(main())


def test_one_group_with_confluent_kafka_on_the_consumer_protocol(cbroker):
    topic, partitions = "mixed", 6
    create_topic(cbroker.bootstrap, topic, partitions)
    produce_keyed(cbroker.bootstrap, topic, 1200)
    ours = OurConsumerThread(cbroker.bootstrap, "mixed", topic, "ours", **KIP848)
    owners = Ownership()
    ck = Member(cbroker.bootstrap, "mixed", [topic], "ck", owners)
    ours.start()
    ck.start()
    try:
        theirs = lambda: {p for _, p in owners.owned.get("ck", set())}  # noqa: E731
        wait_for(lambda: _stable([lambda: set(ours.assigned), theirs], partitions)
                 and ours.assigned and theirs(), 40,
                 what="a disjoint, complete assignment over both clients")
        seen = lambda: ({(p, o) for p, o in ours.consumed}  # noqa: E731
                        | {(p, o) for _, p, o in ck.consumed})
        wait_for(lambda: len(seen()) == 1200, 40, what="every record consumed")
    finally:
        ours.stop()
        ck.stop()
    assert ours.error is None, ours.error
    assert ck.error is None, ck.error


def test_librdkafka_mock_cluster_with_confluent_kafka_in_the_same_group():
    holder, bootstrap, topic, partitions = mock_cluster_with_topic(100)
    ours = OurConsumerThread(bootstrap, "mock-cg", topic, "ours", **KIP848)
    ours.start()
    owners = Ownership()
    ck = None
    try:
        wait_for(lambda: ours.assigned == set(range(partitions)) or ours.error is not None, 30,
                 what="ours owns every partition on the mock cluster")
        assert ours.error is None, ours.error
        wait_for(lambda: len(set(ours.consumed)) == 100, 30, what="every record consumed")
        ck = Member(bootstrap, "mock-cg", [topic], "ck", owners, log_level=0)
        ck.start()
        theirs = lambda: {q for _, q in owners.owned.get("ck", set())}  # noqa: E731
        wait_for(lambda: _stable([lambda: set(ours.assigned), theirs], partitions)
                 and ours.assigned and theirs(), 40,
                 what="a disjoint, complete assignment with confluent-kafka on the mock")
    finally:
        ours.stop()
        if ck is not None:
            ck.stop()
        del holder
    assert ours.error is None, ours.error


def test_poll_timeout_goes_stale_loses_partitions_and_rejoins_on_poll(cbroker):
    create_topic(cbroker.bootstrap, "p", 2)

    async def main():
        lost: list = []

        class Listener(ConsumerRebalanceListener):
            def on_partitions_lost(self, partitions):
                lost.append(set(partitions))

        cfg = {"bootstrap.servers": cbroker.bootstrap, "group.id": "gp", **KIP848,
               "max.poll.interval.ms": 1500}
        async with Consumer(cfg) as c:
            c.subscribe(["p"], listener=Listener())
            deadline = time.monotonic() + 20
            while len(c.assignment()) != 2 and time.monotonic() < deadline:
                await c.getmany(timeout_ms=100)
            assert len(c.assignment()) == 2
            await asyncio.sleep(2.5)  # no poll: STALE, lost, left with epoch -1
            assert c.group.member.state.name == "STALE" and lost and c.assignment() == set()
            async with AdminClient(cbroker.bootstrap) as admin:
                assert (await admin.describe_group("gp")).members == ()
            deadline = time.monotonic() + 20
            while len(c.assignment()) != 2 and time.monotonic() < deadline:
                await c.getmany(timeout_ms=100)  # polling again rejoins at epoch 0
            assert len(c.assignment()) == 2 and c.group.member.state.name == "STABLE"

    asyncio.run(main())


def test_a_commit_with_a_stale_epoch_is_resent_with_the_epoch_the_member_learns(cbroker):
    create_topic(cbroker.bootstrap, "e", 1)
    produce_keyed(cbroker.bootstrap, "e", 5)

    async def main():
        cfg = {"bootstrap.servers": cbroker.bootstrap, "group.id": "ge", **KIP848,
               "auto.offset.reset": "earliest", "enable.auto.commit": False}
        async with Consumer(cfg) as c:
            c.subscribe(["e"])
            deadline = time.monotonic() + 20
            while len(c.assignment()) != 1 and time.monotonic() < deadline:
                await c.getmany(timeout_ms=100)
            async with AdminClient(cbroker.bootstrap) as admin:     # epoch 1 -> 2
                await admin.create_partitions("e", 2)
            member = c.group.member
            while not (len(c.assignment()) == 2 and member.state.name == "STABLE") and time.monotonic() < deadline:
                await c.getmany(timeout_ms=100)
            epoch = member.member_epoch
            assert member.state.name == "STABLE" and epoch >= 2
            # As between the coordinator bumping this member's epoch and the member reading
            # the heartbeat answer that says so: the member's epoch is behind the broker's.
            member.member_epoch = epoch - 1
            asyncio.get_running_loop().call_later(0.3, setattr, member, "member_epoch", epoch)
            await c.commit({TopicPartition("e", 0): 3})         # STALE_MEMBER_EPOCH, then resent
            assert await c.committed(TopicPartition("e", 0)) == 3

    asyncio.run(main())
