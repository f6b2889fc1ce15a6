"""The broker's group event stream (`__kgroup_events`) with a real `kgroup serve` and real
kafka-python clients: the events match what the broker told the members; the topic is
internal (no client writes); `group_events = false` turns it all off."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition

from kgroup.client.admin import AdminClient
from kgroup.error_codes import ErrorCode
from kgroup.lab.recorded import recording
from kgroup.lab.results import simulate
from kgroup.lab.scenario import scenario_from_dict
from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, wait_for
from kgroup.testing.kafka_python_pending_join import count_pending_join_as_rejoin
from tests.integration.test_membership import ConsumerProcess, _kill_consumer_processes  # noqa: F401 (autouse)

pytestmark = pytest.mark.integration

EVENTS = "__kgroup_events"


class MemberThread(threading.Thread):
    """A kafka-python consumer that records (generation, member id, partitions) per assignment
    and leaves the group cleanly (LeaveGroup) when told to stop."""

    def __init__(self, bootstrap: str, group: str, topic: str, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic
        self.assignments: list[tuple[int, str, set[int]]] = []
        self.error: BaseException | None = None
        self._quit = threading.Event()

    def run(self) -> None:
        try:
            consumer = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group,
                                     session_timeout_ms=6000, heartbeat_interval_ms=1000,
                                     enable_auto_commit=False, client_id=self.name)
            # Its first join is a local change: without this, a 100 ms poll that ends between
            # JoinGroup and SyncGroup leaves it REBALANCING for good, and the coordinator expels
            # it after its session (the flake: an extra member_expired, an extra generation).
            count_pending_join_as_rejoin(consumer)
            record = self.assignments

            class Listener(ConsumerRebalanceListener):
                def on_partitions_revoked(self, revoked):
                    pass

                def on_partitions_assigned(self, assigned):
                    generation = consumer._coordinator._generation
                    record.append((generation.generation_id, generation.member_id,
                                   {tp.partition for tp in assigned}))

            consumer.subscribe([self.topic], listener=Listener())
            while not self._quit.is_set():
                consumer.poll(timeout_ms=100)
            consumer.close()                                  # sends LeaveGroup
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def stop(self) -> None:
        self._quit.set()
        self.join(30)

    @property
    def latest(self) -> tuple[int, str, set[int]] | None:
        return self.assignments[-1] if self.assignments else None


def read_events(bootstrap: str) -> list[tuple[bytes, dict]]:
    """Every record of __kgroup_events (all its partitions: one per group-metadata
    partition), fetched with kafka-python: (key, decoded value), by time. A group's events
    are in one partition, in order; the sort is stable, so it keeps that order."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(EVENTS, p) for p in sorted(consumer.partitions_for_topic(EVENTS))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[tuple[bytes, dict]] = []
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    assert r.value == json.dumps(json.loads(r.value), sort_keys=True,
                                                 separators=(",", ":")).encode()  # compact, sorted
                    out.append((r.key, json.loads(r.value)))
        assert len(out) == sum(ends.values()), f"read {len(out)} of {sum(ends.values())} events"
        return sorted(out, key=lambda kv: kv[1]["time_ms"])
    finally:
        consumer.close()


def describe(bootstrap: str, group: str):
    async def go():
        async with AdminClient(bootstrap) as admin:
            return await admin.describe_group(group)
    return asyncio.run(go())


def metadata(bootstrap: str, *topics: str):
    async def go():
        async with AdminClient(bootstrap) as admin:
            return await admin.metadata(list(topics) if topics else None)
    return asyncio.run(go())


def test_events_follow_joins_a_leave_and_a_kill_as_the_members_saw_them(broker):
    create_topic(broker.bootstrap, "t", 4)
    group = "events-g"
    a = MemberThread(broker.bootstrap, group, "t", "member-a")
    a.start()
    wait_for(lambda: a.latest is not None, 60, what="a assigned")
    doomed = ConsumerProcess(broker.bootstrap, group, "t")      # kafka-python, client id "proc"
    b = MemberThread(broker.bootstrap, group, "t", "member-b")
    b.start()
    # Three members, one generation, every partition owned once.
    wait_for(lambda: a.latest and b.latest and doomed.generation == a.latest[0] == b.latest[0]
             and len(a.latest[2] | b.latest[2] | doomed.assigned) == 4, 90, what="three members stable")
    members = {m.client_id: m.member_id for m in describe(broker.bootstrap, group).members}
    assert set(members) == {"member-a", "member-b", "proc"}
    doomed_id = members["proc"]
    generations = {doomed.generation}
    # a leaves cleanly; then the process is killed: its session (6 s) runs out.
    a.stop()
    wait_for(lambda: b.latest[2] | doomed.assigned == {0, 1, 2, 3} and doomed.generation == b.latest[0]
             and doomed.generation > max(g for g, _, _ in a.assignments), 90, what="b and proc after a left")
    generations.add(doomed.generation)
    doomed.proc.kill()
    doomed.proc.wait()
    wait_for(lambda: b.latest[2] == {0, 1, 2, 3}, 90, what="b alone")
    final = describe(broker.bootstrap, group)
    assert [m.member_id for m in final.members] == [members["member-b"]] and final.state == "Stable"
    b_generation = b.latest[0]

    mine = [(k, e) for k, e in read_events(broker.bootstrap) if e["group"] == group]
    events = [e for _, e in mine]
    assert all(k == group.encode() for k, _ in mine)
    assert all(e["v"] == 1 and e["protocol"] == "classic" for e in events)
    kinds = [e["kind"] for e in events]

    # Rebalances: every generation a member was given is one the stream completed, in order.
    # (The stream may complete one more than the members saw: kafka-python drops the result
    # of a round it gave up on, see kafka_python_pending_join.py, and joins again.)
    completed = [e["generation"] for e in events if e["kind"] == "rebalance_completed"]
    seen = {g for t in (a, b) for g, _, _ in t.assignments} | generations
    assert seen <= set(completed) and completed == sorted(completed) and len(set(completed)) == len(completed)
    assert completed[-1] == b_generation
    assert kinds.count("rebalance_started") >= len(completed)

    # Members: three joined; a left (LeaveGroup) before the killed one expired.
    joined = {e["member"] for e in events if e["kind"] == "member_joined"}
    assert joined == set(members.values())
    left = [e for e in events if e["kind"] == "member_left"]
    expired = [e for e in events if e["kind"] == "member_expired"]
    assert [e["member"] for e in left] == [members["member-a"]] and left[0]["reason"] == "LeaveGroup"
    assert [e["member"] for e in expired] == [doomed_id] and expired[0]["reason"] == "session timeout"
    assert events.index(left[0]) < events.index(expired[0])

    # Assignments: each member's last reported assignment is what it was last given.
    last: dict[str, list] = {}
    for e in events:
        if e["kind"] == "assignment_changed":
            last[e["member"]] = e["partitions"]
    assert last[members["member-b"]] == [["t", p] for p in range(4)]
    for member_id in members.values():
        assert member_id in last
    # The stream's times never go backwards within the group.
    times = [e["time_ms"] for e in events]
    assert times == sorted(times)
    assert a.error is None and b.error is None
    b.stop()

    # The lab replays this recorded history: the same three members, one leaving cleanly and
    # one dying, on the recorded topic. The kill is always a measured disruption: the
    # survivors wait out the dead member's session (the lab default, 45 s) before taking its
    # partitions. The joins and the leave are measured too when the real run spread them
    # wider than the lab group takes to settle (its warm-up), as a loaded machine does.
    rec = recording(events, group)
    assert rec.members == 3 and rec.scenario["topics"] == {"t": 4}
    lifecycle = [next(iter(e)) for e in rec.scenario["events"]]
    assert lifecycle == ["start", "start", "start", "stop", "kill"]
    replayed = simulate(scenario_from_dict(rec.scenario)).summary
    assert replayed["rebalances"] >= 1 and replayed["double_ownership"] == 0
    assert replayed["events"] >= 1 and replayed["unconverged_events"] == 0
    # The session runs from the dead member's last heartbeat, up to one heartbeat interval
    # (3 s) before the kill.
    assert 45 - 3 <= replayed["converge_s_max"]
    # The same history with a 6 s session (simulated time): the dead member's share comes back
    # that much sooner.
    short = simulate(scenario_from_dict(recording(events, group, overrides={
        "session_timeout_ms": 6000}).scenario)).summary
    assert short["double_ownership"] == 0
    assert 6 - 3 <= short["converge_s_max"] < replayed["converge_s_max"] - 30


def test_the_events_topic_is_internal_and_clients_cannot_write_to_it(broker):
    topic = metadata(broker.bootstrap).topics[EVENTS]
    # One partition per group-metadata partition (a group's events go with its coordinator).
    assert topic.is_internal and len(topic.partitions) == 50
    create_topic(broker.bootstrap, "plain", 1)
    assert not metadata(broker.bootstrap, "plain").topics["plain"].is_internal

    # kafka-python will not even try (it keeps internal topics out of its partitioner);
    # librdkafka sends, and the broker refuses as Kafka does for __consumer_offsets.
    from confluent_kafka import KafkaError, Producer

    outcomes: list = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "message.send.max.retries": 0})
    producer.produce(EVENTS, b"forged", partition=0, on_delivery=lambda err, msg: outcomes.append(err))
    assert producer.flush(20) == 0
    (err,) = outcomes
    assert err is not None and err.code() == KafkaError.TOPIC_EXCEPTION      # INVALID_TOPIC_EXCEPTION (17)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        tp = TopicPartition(EVENTS, 0)
        assert consumer.end_offsets([tp])[tp] == 0                 # nothing got in
    finally:
        consumer.close()


def test_switched_off_there_is_no_topic_and_no_event(tmp_path):
    proc = BrokerProcess(tmp_path / "data", extra={"group_events": False}).start()
    try:
        create_topic(proc.bootstrap, "t", 1)
        member = MemberThread(proc.bootstrap, "quiet", "t", "m")
        member.start()
        wait_for(lambda: member.latest is not None, 60, what="assigned")
        member.stop()
        assert member.error is None
        assert EVENTS not in metadata(proc.bootstrap).topics
        # Asking for it by name does not create it either.
        assert metadata(proc.bootstrap, EVENTS).topics[EVENTS].error \
            is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert EVENTS not in metadata(proc.bootstrap).topics
        assert not list((tmp_path / "data").rglob(f"{EVENTS}*"))
    finally:
        assert proc.stop() == 0
    assert "Traceback" not in proc.log()
