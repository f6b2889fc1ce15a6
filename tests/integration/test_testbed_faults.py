"""Faults on demand with real clients: what each client does when its requests are refused,
delayed, or its connection closed, through the pytest plugin's fixtures.

A fault with `delay_ms=1` and a large count is a spy: its `hits` count the matching
requests (a client rediscovering its coordinator, rejoining) without changing them.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.integration.clients import ConsumerThread, produce_keyed, wait_for
from tests.integration.testbed_support import (
    CONSUMER_PROTOCOL_FAST,
    armed,
    consumer_protocol_member,
    hits,
    names,
    wait_for_generation,
)
from tests.integration.waits import pace

pytestmark = pytest.mark.integration



def assigned_events(consumer: ConsumerThread) -> list[str]:
    return [kind for _, kind, _ in consumer.tally.events]


def test_confluent_consumer_rediscovers_its_coordinator_after_three_not_coordinator_heartbeats(
        kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("notcoord")
    broker.create_topic(topic, 2)
    consumer = ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, "rdk-notcoord",
                              **{"heartbeat.interval.ms": 300, "session.timeout.ms": 10_000})
    consumer.start()
    try:
        before = broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        spy = broker.add_fault("FindCoordinator", delay_ms=1, group=group, count=10_000)
        fault = broker.add_fault("Heartbeat", "NOT_COORDINATOR", group=group, count=3)
        wait_for(lambda: not armed(broker, fault), timeout=30, what="three heartbeats refused")
        # Each refusal sends librdkafka back to FindCoordinator; then it heartbeats on.
        assert hits(broker, spy) >= 1
        produce_keyed(broker.bootstrap, topic, 20)
        wait_for(lambda: len(consumer.tally.consumed) >= 20, timeout=30, what="consumption after the faults")
        after = broker.group(group)
        # Rediscovered, not rejoined: same member, same generation, never revoked.
        assert after["state"] == "Stable" and after["generation"] == before["generation"]
        assert [m["member_id"] for m in after["members"]] == [m["member_id"] for m in before["members"]]
        assert assigned_events(consumer) == ["assigned"]
    finally:
        consumer.stop(commit=False)
    assert consumer.tally.error is None


def test_kafka_python_sees_rebalance_in_progress_and_rejoins(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("rip")
    broker.create_topic(topic, 2)
    consumer = ConsumerThread("kafka-python", broker.bootstrap, group, topic, "kp-rip", heartbeat_interval_ms=300)
    consumer.start()
    try:
        # kafka-python's leader may first assign nothing (it joined before it knew the
        # topic) and rejoin at once: wait for the partitions, not only for Stable.
        wait_for(lambda: consumer.tally.assigned == {0, 1}, timeout=30, what="the first assignment")
        before = broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        mark = len(consumer.tally.events)
        joins = broker.add_fault("JoinGroup", delay_ms=1, group=group, count=10_000)
        broker.add_fault("Heartbeat", "REBALANCE_IN_PROGRESS", group=group, count=1)
        wait_for(lambda: hits(broker, joins) >= 1, timeout=30, what="kafka-python rejoining")
        # Its rejoin (as the group's leader) makes a new generation, with the same member.
        after = wait_for_generation(broker, group, before["generation"] + 1)
        assert [m["member_id"] for m in after["members"]] == [m["member_id"] for m in before["members"]]
        wait_for(lambda: assigned_events(consumer)[mark:] == ["revoked", "assigned"], timeout=30,
                 what="revoke and assign again")
        assert consumer.tally.assigned == {0, 1}
    finally:
        consumer.stop(commit=False)
    assert consumer.tally.error is None


@pytest.mark.kgroup(group=CONSUMER_PROTOCOL_FAST)
def test_fenced_member_epoch_makes_a_consumer_protocol_member_lose_its_partitions_and_rejoin(kgroup_broker):
    broker = kgroup_broker
    with consumer_protocol_member(broker, "fenced", 3) as (member, topic, group):
        wait_for(lambda: member.events == [("assigned", (0, 1, 2))], timeout=30, what="first assignment")
        fault = broker.add_fault("ConsumerGroupHeartbeat", "FENCED_MEMBER_EPOCH", group=group, count=1)
        wait_for(lambda: not armed(broker, fault), timeout=30, what="the fenced heartbeat")
        # Fenced: the partitions are lost (not revoked: they may be someone else's), then the
        # member joins again from epoch 0 and gets them back.
        wait_for(lambda: member.events[1:] == [("lost", (0, 1, 2)), ("assigned", (0, 1, 2))], timeout=30,
                 what=f"lost and assigned again, got {member.events}")
        view = broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        assert view["kind"] == "consumer" and view["members"][0]["assignment"] == {topic: [0, 1, 2]}


def test_a_two_second_fetch_delay_is_a_gap_in_consumption_and_nothing_else(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("slowfetch")
    broker.create_topic(topic, 1)
    consumer = ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, "rdk-slow",
                              **{"fetch.wait.max.ms": 100})
    consumer.start()
    arrivals: list[float] = []
    stop = threading.Event()

    def produce() -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        i = 0
        while not stop.is_set():
            producer.produce(topic, value=str(i).encode())
            producer.flush(10)
            i += 1
            pace(0.05)
        producer.flush(10)

    producer = threading.Thread(target=produce, daemon=True)
    try:
        before = broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        producer.start()
        wait_for(lambda: len(consumer.tally.consumed) >= 20, timeout=30, what="steady consumption")
        watcher = threading.Thread(target=lambda: watch_arrivals(consumer, arrivals, stop), daemon=True)
        watcher.start()
        wait_for(lambda: len(arrivals) >= 5, timeout=30, what="arrivals watched")
        seen = len(consumer.tally.consumed)
        fault = broker.add_fault("Fetch", delay_ms=2_000, topic=topic, count=1)
        wait_for(lambda: not armed(broker, fault), timeout=30, what="the delayed fetch")
        wait_for(lambda: len(consumer.tally.consumed) >= seen + 80, timeout=30, what="consumption after the delay")
    finally:
        stop.set()
        producer.join(30)
    wait_for(lambda: caught_up_with_producer(consumer), timeout=30, what="every record consumed")
    events = assigned_events(consumer)
    generation = broker.group(group)["generation"]
    consumer.stop(commit=False)
    assert consumer.tally.error is None
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    # The one long pause is the delayed fetch; nothing else was slow...
    assert max(gaps) >= 1.8
    assert sorted(gaps)[-2] < 1.0
    # ...and nothing else happened: every record once, in order, no rebalance.
    values = [int(v) for _, _, _, v in consumer.tally.consumed]
    assert values == list(range(len(values)))
    assert events == ["assigned"]
    assert generation == before["generation"]


def watch_arrivals(consumer: ConsumerThread, arrivals: list[float], stop: threading.Event) -> None:
    """When each new record shows up in the consumer's tally (sampled every 10 ms)."""
    count = len(consumer.tally.consumed)
    while not stop.is_set():
        now = len(consumer.tally.consumed)
        if now > count:
            arrivals.append(time.monotonic())
            count = now
        pace(0.01)


def caught_up_with_producer(consumer: ConsumerThread) -> bool:
    values = [int(v) for _, _, _, v in consumer.tally.consumed]
    return bool(values) and values[-1] == len(values) - 1 and len(values) == _produced_count(consumer)


def _produced_count(consumer: ConsumerThread) -> int:
    from confluent_kafka import Consumer, TopicPartition

    probe = Consumer({"bootstrap.servers": consumer.bootstrap, "group.id": "probe-" + uuid.uuid4().hex[:6]})
    try:
        return probe.get_watermark_offsets(TopicPartition(consumer.topic, 0), timeout=10)[1]
    finally:
        probe.close()


def test_kafka_python_retries_a_join_while_the_coordinator_loads(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("loading")
    broker.create_topic(topic, 2)
    refused = broker.add_fault("JoinGroup", "COORDINATOR_LOAD_IN_PROGRESS", group=group, count=3)
    consumer = ConsumerThread("kafka-python", broker.bootstrap, group, topic, "kp-loading")
    consumer.start()
    try:
        wait_for(lambda: consumer.tally.assigned == {0, 1}, timeout=60, what="assigned after three refusals")
        assert not armed(broker, refused)
        assert broker.wait_for_group(group, state="Stable", members=1)["members"][0]["client_id"] == "kp-loading"
    finally:
        consumer.stop(commit=False)
    assert consumer.tally.error is None


def test_a_closed_fetch_connection_is_reopened_and_nothing_is_lost(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("closed")
    broker.create_topic(topic, 1)
    produce_keyed(broker.bootstrap, topic, 50)
    consumer = ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, "rdk-closed",
                              **{"fetch.wait.max.ms": 100})
    consumer.start()
    try:
        wait_for(lambda: len(consumer.tally.consumed) == 50, timeout=30, what="the first 50")
        closed = broker.add_fault("Fetch", close_connection=True, topic=topic, count=2)
        wait_for(lambda: not armed(broker, closed), timeout=30, what="two fetches cut off")
        produce_keyed(broker.bootstrap, topic, 50)
        wait_for(lambda: len(consumer.tally.consumed) >= 100, timeout=30, what="the next 50")
        offsets = [offset for _, offset, *_ in consumer.tally.consumed]
        assert offsets == list(range(100))               # each record once, in order
        assert [k for _, k, _ in consumer.tally.events] == ["assigned"]
    finally:
        consumer.stop(commit=False)
    assert consumer.tally.error is None
