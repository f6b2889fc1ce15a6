"""Membership changes with real clients: join, leave, crash, static members, cooperative,
mixed client libraries, and a partition-count change."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time

import pytest

from kgroup.client.admin import AdminClient
from kgroup.testing.process import ChildProcess
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import ConsumerThread, create_topic, produce_keyed, wait_for
from tests.integration.waits import hold

pytestmark = pytest.mark.integration


LIVE: list["ConsumerProcess"] = []


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """One broker for the module (a start per test cost ~1.7 s): each test has its own topic
    and group (`names`)."""
    proc = BrokerProcess(tmp_path_factory.mktemp("membership") / "data").start()
    yield proc
    proc.finish()


@pytest.fixture
def names(request) -> tuple[str, str]:
    """This test's own topic and group on the shared broker."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", request.node.name.removeprefix("test_"))
    return f"t-{name}", f"g-{name}"


@pytest.fixture(autouse=True)
def _kill_consumer_processes():
    yield
    while LIVE:
        LIVE.pop().kill()


class ConsumerProcess:
    """A kafka-python consumer in its own process (consumer_process.py), through the one
    process helper; its JSON events are read on a thread. `session_ms`: its session timeout."""

    def __init__(self, bootstrap: str, group: str, topic: str, instance: str | None = None,
                 session_ms: int = 6000) -> None:
        LIVE.append(self)
        self.child = ChildProcess(
            [sys.executable, "-m", "tests.integration.consumer_process", bootstrap, group, topic, instance or "-",
             str(session_ms)], name=f"kafka-python consumer {instance or 'proc'}", stdout_pipe=True).start()
        self.proc = self.child.proc
        self.events: queue.Queue = queue.Queue()
        self.assigned: set[int] = set()
        self.generation: int | None = None          # of the latest assignment
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.child.lines():
            event = json.loads(line)
            if event["event"] == "assigned":
                self.assigned = set(event["partitions"])
                self.generation = event["generation"]
            elif event["event"] == "revoked":
                self.assigned -= set(event["partitions"])
            self.events.put(event)

    def wait_event(self, kind: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.1, deadline - time.monotonic()))
            if event["event"] == kind:
                return event

    def kill(self) -> None:
        self.child.kill()


def describe(bootstrap: str, group: str):
    import asyncio

    async def go():
        admin = AdminClient(bootstrap)
        try:
            return await admin.describe_group(group)
        finally:
            await admin.close()
    return asyncio.run(go())


def owned(consumers) -> list[set]:
    return [set(c.tally.assigned) for c in consumers]


def test_fourth_consumer_gets_partitions_and_a_closing_one_hands_them_over(broker, names):
    t, g = names
    create_topic(broker.bootstrap, t, 6)
    consumers = [ConsumerThread("kafka-python", broker.bootstrap, g, t, f"c{i}") for i in range(3)]
    for c in consumers:
        c.start()
    wait_for(lambda: all(len(a) == 2 for a in owned(consumers)), what="3 x 2 partitions")
    fourth = ConsumerThread("kafka-python", broker.bootstrap, g, t, "c3")
    fourth.start()
    consumers.append(fourth)
    wait_for(lambda: sorted(len(a) for a in owned(consumers)) == [1, 1, 2, 2]
             and set().union(*owned(consumers)) == set(range(6)), what="4 consumers sharing 6 partitions")
    consumers[0].stop(commit=False)                      # a clean close: LeaveGroup
    rest = consumers[1:]
    wait_for(lambda: sorted(len(a) for a in owned(rest)) == [2, 2, 2]
             and set().union(*owned(rest)) == set(range(6)), what="partitions handed to the others")
    for c in rest:
        c.stop(commit=False)
        assert c.tally.error is None


def test_killed_consumer_loses_its_partitions_after_the_session_timeout(broker, names):
    t, g = names
    create_topic(broker.bootstrap, t, 4)
    survivor = ConsumerThread("kafka-python", broker.bootstrap, g, t, "survivor")
    survivor.start()
    victim = ConsumerProcess(broker.bootstrap, g, t)
    wait_for(lambda: len(survivor.tally.assigned) == 2 and len(victim.assigned) == 2, what="2 x 2")
    killed_at = time.monotonic()
    victim.kill()                                        # SIGKILL: no LeaveGroup
    # Well before the rebalance timeout (kafka-python's 300 s), which a broker that forgot
    # the session would wait for; how much after the session depends on the machine's load.
    wait_for(lambda: len(survivor.tally.assigned) == 4, timeout=45, interval=0.05, what="takeover")
    took = time.monotonic() - killed_at
    survivor.stop(commit=False)
    # The session runs from the victim's last heartbeat, up to one heartbeat interval (1 s)
    # before the kill: not before 5 s after the kill.
    assert took >= 5.0, f"partitions moved {took:.1f}s after the kill (session timeout 6 s)"


def test_static_member_restart_keeps_its_partitions_without_a_rebalance(broker, names):
    t, g = names
    create_topic(broker.bootstrap, t, 4)
    other = ConsumerThread("kafka-python", broker.bootstrap, g, t, "other", group_instance_id="other")
    other.start()
    first = ConsumerProcess(broker.bootstrap, g, t, instance="static-1")
    wait_for(lambda: len(other.tally.assigned) == 2 and len(first.assigned) == 2, what="2 x 2")
    before = describe(broker.bootstrap, g)
    mine = set(first.assigned)
    events_before = len(other.tally.events)
    first.kill()                                          # gone, but back within 6 s
    restarted = ConsumerProcess(broker.bootstrap, g, t, instance="static-1")
    event = restarted.wait_event("assigned", timeout=30)
    assert set(event["partitions"]) == mine
    # Same generation: the coordinator handed the old assignment back without a rebalance.
    assert event["generation"] == first.generation, (event, first.generation)
    after = describe(broker.bootstrap, g)
    assert before.state == after.state == "Stable"
    assert ({m.group_instance_id for m in before.members} == {m.group_instance_id for m in after.members}
            == {"static-1", "other"})
    hold(2, "a rebalance would reach the other member by now")
    assert len(other.tally.events) == events_before, "the other member saw no rebalance"
    # A second process with the same instance id fences the first.
    duplicate = ConsumerProcess(broker.bootstrap, g, t, instance="static-1")
    duplicate.wait_event("assigned", timeout=30)
    fenced = restarted.wait_event("fenced", timeout=30)
    assert "Fenced" in fenced["error"] or "FENCED" in fenced["error"].upper()
    duplicate.kill()
    restarted.kill()
    other.stop(commit=False)


def test_remove_members_by_instance_id_rebalances_at_once(broker, names):
    t, g = names
    create_topic(broker.bootstrap, t, 4)
    keeper = ConsumerThread("kafka-python", broker.bootstrap, g, t, "keeper", group_instance_id="keeper")
    keeper.start()
    # A static member whose session (60 s) would keep it in the group long after this test:
    # only the removal can take it out in time.
    gone = ConsumerProcess(broker.bootstrap, g, t, instance="gone", session_ms=60_000)
    wait_for(lambda: len(keeper.tally.assigned) == 2 and len(gone.assigned) == 2, what="2 x 2")
    gone.kill()
    out = subprocess.run([sys.executable.replace("python", "kgroup"), "--bootstrap-server", broker.bootstrap,
                          "groups", "remove-members", g, "--instance-id", "gone"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    # Out at once: the group no longer has it, and the keeper takes its partitions well
    # before its session could have run out (the wait gives up at 45 s of the 60).
    assert {m.group_instance_id for m in describe(broker.bootstrap, g).members} == {"keeper"}
    wait_for(lambda: len(keeper.tally.assigned) == 4, timeout=45, interval=0.05, what="takeover")
    keeper.stop(commit=False)


@pytest.mark.parametrize("kind", ["kafka-python", "confluent-kafka"])
def test_cooperative_sticky_revokes_only_what_moves(broker, names, kind):
    t, g = names
    create_topic(broker.bootstrap, t, 6)
    produce_keyed(broker.bootstrap, t, 600)
    if kind == "kafka-python":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        strategy = {"partition_assignment_strategy": [CooperativeStickyAssignor]}
    else:
        strategy = {"partition.assignment.strategy": "cooperative-sticky"}
    a = ConsumerThread(kind, broker.bootstrap, g, t, "a", **strategy)
    b = ConsumerThread(kind, broker.bootstrap, g, t, "b", **strategy)
    a.start(), b.start()
    wait_for(lambda: len(a.tally.assigned) == 3 and len(b.tally.assigned) == 3, what="3 + 3")
    before = {"a": set(a.tally.assigned), "b": set(b.tally.assigned)}
    marks = {"a": len(a.tally.events), "b": len(b.tally.events)}
    c = ConsumerThread(kind, broker.bootstrap, g, t, "c", **strategy)
    c.start()
    wait_for(lambda: sorted(len(x.tally.assigned) for x in (a, b, c)) == [2, 2, 2]
             and set().union(a.tally.assigned, b.tally.assigned, c.tally.assigned) == set(range(6)),
             what="2 + 2 + 2")
    for name, consumer in (("a", a), ("b", b)):
        revoked = set().union(*[p for _, kind_, p in consumer.tally.events[marks[name]:] if kind_ == "revoked"])
        kept = before[name] & set(consumer.tally.assigned)
        # Only the partition that moved to c was revoked; the rest were never taken away.
        assert revoked == before[name] - set(consumer.tally.assigned), (name, revoked)
        assert len(kept) == 2 and len(revoked) <= 1
    for x in (a, b, c):
        x.stop(commit=False)
        assert x.tally.error is None


def test_one_group_mixing_three_client_libraries_gets_disjoint_complete_assignments(broker, names):
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRange
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    t, g = names
    create_topic(broker.bootstrap, t, 6)
    consumers = [   # each library's own range assignor (aiokafka defaults to roundrobin only)
        ConsumerThread("kafka-python", broker.bootstrap, g, t, "kp",
                       partition_assignment_strategy=[RangePartitionAssignor]),
        ConsumerThread("aiokafka", broker.bootstrap, g, t, "aio",
                       partition_assignment_strategy=(AioRange,)),
        ConsumerThread("confluent-kafka", broker.bootstrap, g, t, "ck",
                       **{"partition.assignment.strategy": "range"}),
    ]
    for c in consumers:
        c.start()

    def settled() -> bool:
        sets = owned(consumers)
        return all(len(s) == 2 for s in sets) and set().union(*sets) == set(range(6))
    wait_for(settled, timeout=90, what="each of three libraries owning 2 of 6 partitions")
    sets = owned(consumers)
    assert sum(len(s) for s in sets) == 6                 # disjoint
    for c in consumers:
        c.stop(commit=False)
        assert c.tally.error is None


def test_create_partitions_rebalances_and_new_partitions_are_consumed(broker, names):
    t, g = names
    create_topic(broker.bootstrap, t, 3)
    consumers = [ConsumerThread("kafka-python", broker.bootstrap, g, t, f"c{i}", metadata_max_age_ms=1000)
                 for i in range(3)]
    for c in consumers:
        c.start()
    wait_for(lambda: all(len(a) == 1 for a in owned(consumers)), what="3 x 1")
    from confluent_kafka.admin import AdminClient as CKAdmin, NewPartitions
    admin = CKAdmin({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(t, 6)])[t].result(10)
    # The leader sees the new count in its next metadata (1 s) and rejoins; its rejoin is the
    # one kafka-python could abandon mid-round under load (see kafka_python_pending_join.py).
    wait_for(lambda: all(len(a) == 2 for a in owned(consumers)), timeout=60, what="3 x 2 after growth")
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for p in range(3, 6):
        producer.produce(t, value=b"new", partition=p)
    producer.flush(10)
    wait_for(lambda: {p for c in consumers for p, *_ in c.tally.consumed} >= {3, 4, 5},
             timeout=30, what="new partitions consumed")
    for c in consumers:
        c.stop(commit=False)
        assert c.tally.error is None
