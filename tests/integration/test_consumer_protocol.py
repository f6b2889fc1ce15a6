"""Consumer-protocol groups (KIP-848) with librdkafka's `group.protocol=consumer`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, produce_keyed, wait_for
from tests.integration.waits import hold, pace

pytestmark = pytest.mark.integration

FAST_SESSIONS = {
    "consumer_min_session_timeout_ms": 6_000, "consumer_session_timeout_ms": 6_000,
    "consumer_min_heartbeat_interval_ms": 500, "consumer_heartbeat_interval_ms": 500,
}


@pytest.fixture
def cbroker(tmp_path):
    proc = BrokerProcess(tmp_path / "data", group=FAST_SESSIONS).start()
    yield proc
    print("---- broker log (tail) ----\n" + "\n".join(proc.log().splitlines()[-80:]))
    if proc.alive():
        assert proc.stop() == 0
    assert "Traceback" not in proc.log()


class Ownership:
    """Every assign/revoke callback of every consumer, timestamped, checked for overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owned: dict[str, set[tuple[str, int]]] = {}
        self.events: list[tuple[float, str, str, tuple]] = []
        self.overlaps: list[str] = []

    def assigned(self, name: str, partitions) -> None:
        with self.lock:
            for p in partitions:
                holders = [n for n, s in self.owned.items() if p in s and n != name]
                if holders:
                    self.overlaps.append(f"{name} got {p} while {holders} held it")
            self.owned.setdefault(name, set()).update(partitions)
            self.events.append((time.monotonic(), name, "assigned", tuple(sorted(partitions))))

    def revoked(self, name: str, partitions) -> None:
        with self.lock:
            self.owned.setdefault(name, set()).difference_update(partitions)
            self.events.append((time.monotonic(), name, "revoked", tuple(sorted(partitions))))

    def sizes(self) -> list[int]:
        with self.lock:
            return sorted(len(s) for s in self.owned.values())

    def union(self) -> set:
        with self.lock:
            return set().union(*self.owned.values()) if self.owned else set()


def tp(topic: str, count: int) -> set:
    return {(topic, p) for p in range(count)}


class Member(threading.Thread):
    def __init__(self, bootstrap: str, group: str, topics, name: str, ownership: Ownership, *,
                 commit_each: bool = False, **config) -> None:
        super().__init__(daemon=True, name=name)
        self.bootstrap, self.group, self.topics, self.ownership = bootstrap, group, topics, ownership
        self.config = config
        self.stopping = threading.Event()
        self.consumed: list[tuple[str, int, int]] = []
        # commit_each: a synchronous commit after every record; `acked` keeps, per partition,
        # the highest offset a commit answered without error.
        self.commit_each = commit_each
        self.acked: dict[tuple[str, int], int] = {}
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        from confluent_kafka import Consumer
        try:
            consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                                 "group.protocol": "consumer", "auto.offset.reset": "earliest",
                                 "client.id": self.name, **self.config})
            name = self.name
            consumer.subscribe(list(self.topics),
                               on_assign=lambda c, ps: self.ownership.assigned(name, [(p.topic, p.partition) for p in ps]),
                               on_revoke=lambda c, ps: self.ownership.revoked(name, [(p.topic, p.partition) for p in ps]))
            while not self.stopping.is_set():
                msg = consumer.poll(0.1)
                if msg is not None and msg.error() is None:
                    self.consumed.append((msg.topic(), msg.partition(), msg.offset()))
                    if self.commit_each:
                        self._commit(consumer, msg)
            consumer.close()
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    def _commit(self, consumer, msg) -> None:
        from confluent_kafka import KafkaException

        try:
            answered = consumer.commit(message=msg, asynchronous=False)
        except KafkaException:
            return                                   # not acknowledged: the test ignores it
        for tp in answered:
            if tp.error is None:
                key = (tp.topic, tp.partition)
                self.acked[key] = max(self.acked.get(key, -1), tp.offset)

    def stop(self) -> None:
        self.stopping.set()
        self.done.wait(30)


def test_fourth_member_takes_only_what_moves_and_no_partition_has_two_owners(cbroker):
    create_topic(cbroker.bootstrap, "t", 12)
    produce_keyed(cbroker.bootstrap, "t", 1_200)
    owners = Ownership()
    members = [Member(cbroker.bootstrap, "cg", ["t"], f"m{i}", owners) for i in range(3)]
    for m in members:
        m.start()
    wait_for(lambda: owners.sizes() == [4, 4, 4] and owners.union() == tp("t", 12), what="3 x 4")
    before = {name: set(s) for name, s in owners.owned.items()}
    mark = len(owners.events)
    fourth = Member(cbroker.bootstrap, "cg", ["t"], "m3", owners)
    fourth.start()
    members.append(fourth)
    wait_for(lambda: owners.sizes() == [3, 3, 3, 3] and owners.union() == tp("t", 12), what="4 x 3")
    for name, had in before.items():
        revoked = set().union(*[set(p) for _, n, kind, p in owners.events[mark:] if n == name and kind == "revoked"])
        now = owners.owned[name]
        # Incremental: only what moved to m3 was revoked; the rest never paused.
        assert revoked == had - now and len(had - now) == 1, (name, had, now, revoked)
    assert owners.overlaps == []
    for m in members:
        m.stop()
        assert m.error is None


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_remote_assignor_is_honoured(cbroker, assignor):
    create_topic(cbroker.bootstrap, "t", 6)
    owners = Ownership()
    members = [Member(cbroker.bootstrap, "cg", ["t"], f"m{i}", owners, **{"group.remote.assignor": assignor})
               for i in range(2)]
    for m in members:
        m.start()
    wait_for(lambda: owners.sizes() == [3, 3] and owners.union() == tp("t", 6), what="2 x 3")
    if assignor == "range":
        # Range hands out contiguous runs of partitions.
        assert sorted(tuple(sorted(p for _, p in s)) for s in owners.owned.values()) == [(0, 1, 2), (3, 4, 5)]
    for m in members:
        m.stop()
    assert owners.overlaps == []


def test_confluent_admin_describes_a_consumer_group_with_consumer_group_describe(cbroker):
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    create_topic(cbroker.bootstrap, "t", 4)
    owners = Ownership()
    members = [Member(cbroker.bootstrap, "cg", ["t"], f"m{i}", owners, **{"group.remote.assignor": "range"})
               for i in range(2)]
    for m in members:
        m.start()
    try:
        wait_for(lambda: owners.sizes() == [2, 2] and owners.union() == tp("t", 4), what="2 x 2")
        admin = AdminClient({"bootstrap.servers": cbroker.bootstrap})
        desc = admin.describe_consumer_groups(["cg"])["cg"].result(20)
        assert desc.type == ConsumerGroupType.CONSUMER and desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor == "range"
        described = {m.client_id: {(p.topic, p.partition) for p in m.assignment.topic_partitions}
                     for m in desc.members}
        assert described == {name: set(s) for name, s in owners.owned.items()}
        # Only ConsumerGroupDescribe carries the target assignment (DescribeGroups has none).
        for m in desc.members:
            assert ({(p.topic, p.partition) for p in m.target_assignment.topic_partitions}
                    == described[m.client_id])
        # `kgroup groups describe` shows the same, with kafka-consumer-groups.sh's columns.
        kgroup = [sys.executable.replace("python", "kgroup"), "--bootstrap-server", cbroker.bootstrap]
        out = subprocess.run([*kgroup, "groups", "describe", "cg", "--state"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines()[1].split()[-3:] == ["range", "Stable", "2"]
        out = subprocess.run([*kgroup, "groups", "describe", "cg", "--members", "--verbose"], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        shown = {line.split()[3]: line.split()[-1] for line in out.stdout.splitlines()[1:]}
        assert shown == {name: "t:" + ",".join(str(p) for _, p in sorted(s))
                         for name, s in owners.owned.items()}
    finally:
        for m in members:
            m.stop()


def test_killed_member_loses_its_partitions_after_the_session_timeout(cbroker):
    create_topic(cbroker.bootstrap, "t", 4)
    owners = Ownership()
    survivor = Member(cbroker.bootstrap, "cg", ["t"], "survivor", owners)
    survivor.start()
    wait_for(lambda: owners.sizes() == [4], what="survivor owns all")
    victim = subprocess.Popen([sys.executable, "-m", "tests.integration.consumer_protocol_process",
                               cbroker.bootstrap, "cg", "t"], stdout=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: owners.sizes() == [2], timeout=60, what="victim takes half")
        got = []
        for line in victim.stdout:
            event = json.loads(line)
            if event["event"] == "assigned" and event["partitions"]:
                got = event["partitions"]
                break
        assert len(got) == 2
        killed = time.monotonic()
        victim.kill()
        wait_for(lambda: owners.sizes() == [4], timeout=30, interval=0.05, what="takeover")
        took = time.monotonic() - killed
        assert 5.0 <= took < 12.0, f"took {took:.1f}s with a 6 s session"
    finally:
        if victim.poll() is None:
            victim.kill()
        survivor.stop()


def test_regex_subscription_picks_up_a_topic_created_later(cbroker):
    create_topic(cbroker.bootstrap, "logs-a", 2)
    owners = Ownership()
    member = Member(cbroker.bootstrap, "cg", ["^logs-.*"], "m", owners, **{"topic.metadata.refresh.interval.ms": 1000})
    member.start()
    wait_for(lambda: owners.sizes() == [2], what="logs-a assigned")
    create_topic(cbroker.bootstrap, "logs-b", 3)
    produce_keyed(cbroker.bootstrap, "logs-b", 30)
    wait_for(lambda: owners.sizes() == [5], timeout=60, what="logs-b assigned too")
    wait_for(lambda: any(t == "logs-b" for t, _, _ in member.consumed), timeout=30, what="logs-b consumed")
    member.stop()


def test_kill_9_of_the_broker_keeps_assignments_and_commits(cbroker):
    from confluent_kafka import Producer

    create_topic(cbroker.bootstrap, "t", 4)
    produce_keyed(cbroker.bootstrap, "t", 400)
    owners = Ownership()
    members = [Member(cbroker.bootstrap, "cg", ["t"], f"m{i}", owners, commit_each=True) for i in range(2)]
    for m in members:
        m.start()
    wait_for(lambda: owners.sizes() == [2, 2] and sum(len(m.consumed) for m in members) >= 400, what="consumed")
    before = {n: set(s) for n, s in owners.owned.items()}
    mark = len(owners.events)
    # Records keep coming, so the members are committing when the broker dies.
    stop_producing = threading.Event()
    produced = []

    def produce() -> None:
        producer = Producer({"bootstrap.servers": cbroker.bootstrap, "linger.ms": 0})
        while not stop_producing.is_set():
            producer.produce("t", key=str(len(produced)).encode(), value=b"during")
            produced.append(1)
            producer.poll(0)
            pace(0.01)
        assert producer.flush(60) == 0

    feeder = threading.Thread(target=produce, daemon=True)
    feeder.start()
    wait_for(lambda: sum(len(m.consumed) for m in members) >= 450, what="committing under load")
    cbroker.kill9()
    cbroker.start()
    hold(2, "records go on being produced into the restarted broker")
    stop_producing.set()
    feeder.join(90)
    total = 400 + len(produced)
    seen = lambda: len({(p, o) for m in members for _, p, o in m.consumed})  # noqa: E731
    wait_for(lambda: seen() >= total, timeout=60, what=f"all {total} records consumed after the restart")
    # Members kept their assignments: no partition was revoked or lost across the restart.
    assert [e for e in owners.events[mark:] if e[2] == "revoked"] == []
    assert {n: set(s) for n, s in owners.owned.items()} == before
    for m in members:
        m.stop()
        assert m.error is None, m.error
    acked = {tp: o for m in members for tp, o in m.acked.items()}
    assert len(acked) == 4
    from confluent_kafka import Consumer, TopicPartition
    probe = Consumer({"bootstrap.servers": cbroker.bootstrap, "group.id": "cg"})
    committed = {(tp.topic, tp.partition): tp.offset
                 for tp in probe.committed([TopicPartition("t", p) for p in range(4)], timeout=10)}
    probe.close()
    # Every commit the broker answered without error is there.
    for tp, offset in acked.items():
        assert committed[tp] >= offset, (tp, committed[tp], offset)


def test_mixed_group_upgrades_when_a_consumer_protocol_member_joins_and_downgrades_when_it_leaves(cbroker):
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    from tests.integration.clients import ConsumerThread

    create_topic(cbroker.bootstrap, "t", 6)
    classic = [ConsumerThread("kafka-python", cbroker.bootstrap, "mixed", "t", f"kp{i}",
                              partition_assignment_strategy=[RangePartitionAssignor]) for i in range(2)]
    for c in classic:
        c.start()
    wait_for(lambda: sorted(len(c.tally.assigned) for c in classic) == [3, 3], what="classic 3 + 3")
    owners = Ownership()
    newcomer = Member(cbroker.bootstrap, "mixed", ["t"], "ck", owners)
    newcomer.start()

    def disjoint_and_complete() -> bool:
        sets = [set(c.tally.assigned) for c in classic] + [{p for _, p in owners.owned.get("ck", set())}]
        return all(len(s) == 2 for s in sets) and set().union(*sets) == set(range(6))
    wait_for(disjoint_and_complete, timeout=60, what="three members, two partitions each")
    assert describe_type(cbroker.bootstrap, "mixed") == "consumer"
    newcomer.stop()
    wait_for(lambda: sorted(len(c.tally.assigned) for c in classic) == [3, 3]
             and set().union(*[c.tally.assigned for c in classic]) == set(range(6)),
             timeout=60, what="the two classic members take everything back")
    assert describe_type(cbroker.bootstrap, "mixed") == "classic"
    for c in classic:
        c.stop(commit=False)
        assert c.tally.error is None


def describe_type(bootstrap: str, group: str) -> str:
    import asyncio

    from kgroup.client.admin import AdminClient

    async def go():
        admin = AdminClient(bootstrap)
        try:
            return {g.group_id: g.group_type for g in await admin.list_groups()}.get(group, "")
        finally:
            await admin.close()
    return asyncio.run(go())


def test_kip848_consumer_member_reusing_a_classic_static_instance_id_is_refused_and_the_classic_group_carries_on(cbroker):
    """Two static kafka-python members hold a classic group; a librdkafka consumer-protocol
    member joins with one of their instance ids. It is refused (UNRELEASED_INSTANCE_ID, as in
    Kafka) and the classic group stays exactly as it was: same member ids and assignments,
    no rebalance."""
    import asyncio

    from confluent_kafka import Consumer, KafkaError
    from kafka.coordinator.assignors.range import RangePartitionAssignor

    from kgroup.client.admin import AdminClient
    from tests.integration.clients import ConsumerThread

    create_topic(cbroker.bootstrap, "t", 4)
    classic = [ConsumerThread("kafka-python", cbroker.bootstrap, "static-mix", "t", f"kp{i}",
                              group_instance_id=f"inst-{i}",
                              partition_assignment_strategy=[RangePartitionAssignor]) for i in range(2)]
    for c in classic:
        c.start()
    wait_for(lambda: sorted(len(c.tally.assigned) for c in classic) == [2, 2], what="classic 2 + 2")

    def described():
        async def go():
            admin = AdminClient(cbroker.bootstrap)
            try:
                return await admin.describe_group("static-mix")
            finally:
                await admin.close()
        group = asyncio.run(go())
        return group.state, {m.group_instance_id: (m.member_id, dict(m.assignment or {})) for m in group.members}

    before = described()
    assert before[0] == "Stable" and set(before[1]) == {"inst-0", "inst-1"}
    events_before = [list(c.tally.events) for c in classic]

    errors: list = []

    def refused() -> bool:
        # librdkafka treats UNRELEASED_INSTANCE_ID as fatal and reports it as _FATAL.
        return any(e.code() == KafkaError.UNRELEASED_INSTANCE_ID
                   or (e.code() == KafkaError._FATAL and "instance ID is still used" in e.str())
                   for e in errors)

    newcomer = Consumer({"bootstrap.servers": cbroker.bootstrap, "group.id": "static-mix",
                         "group.protocol": "consumer", "group.instance.id": "inst-0",
                         "error_cb": errors.append})
    try:
        newcomer.subscribe(["t"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not refused():
            msg = newcomer.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
        assert refused(), errors
    finally:
        newcomer.close()
    # Well past a session timeout (6 s) of heartbeats at 1 s: a torn-down group would have
    # made both members rejoin with new ids by now.
    hold(8, "past a session timeout: a torn-down group would have rejoined with new ids")
    assert described() == before
    assert [list(c.tally.events) for c in classic] == events_before
    assert describe_type(cbroker.bootstrap, "static-mix") == "classic"
    for c in classic:
        c.stop(commit=False)
        assert c.tally.error is None
