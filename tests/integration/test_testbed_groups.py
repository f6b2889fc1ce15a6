"""The control API's group endpoints with real clients: wait, rebalance now, expire."""

from __future__ import annotations

import threading
import time

import pytest

from kgroup.testing import GroupWaitTimeout
from tests.integration.clients import ConsumerThread, wait_for
from tests.integration.testbed_support import (
    CONSUMER_PROTOCOL_FAST,
    consumer_protocol_member,
    names,
    wait_for_generation,
)
from tests.integration.waits import until

pytestmark = pytest.mark.integration


def start(kind: str, broker, group: str, topic: str, name: str, **options) -> ConsumerThread:
    consumer = ConsumerThread(kind, broker.bootstrap, group, topic, name, **options)
    consumer.start()
    return consumer


def test_wait_answers_as_soon_as_the_group_is_stable_with_n_members_and_408_otherwise(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("wait")
    broker.create_topic(topic, 4)
    answered: dict = {}

    def wait() -> None:
        answered["view"] = broker.wait_for_group(group, state="Stable", members=2, timeout_ms=60_000)
        answered["at"] = time.monotonic()

    waiter = threading.Thread(target=wait)
    waiter.start()
    first = start("confluent-kafka", broker, group, topic, "w1")
    # One member is not two: the wait is still waiting while the first member is Stable alone.
    broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
    assert "view" not in answered
    second = start("confluent-kafka", broker, group, topic, "w2")
    try:
        waiter.join(60)
        view = answered["view"]
        assert view["state"] == "Stable" and len(view["members"]) == 2
        assert sorted(m["client_id"] for m in view["members"]) == ["w1", "w2"]
        # It answered within one rebalance's bookkeeping of the group getting there: the
        # group it returned is the one the members were then assigned from.
        assigned = sorted(p for m in view["members"] for p in m["assignment"][topic])
        assert assigned == [0, 1, 2, 3]
        with pytest.raises(GroupWaitTimeout) as timed_out:
            broker.wait_for_group(group, state="Stable", members=3, timeout_ms=500)
        assert timed_out.value.status == 408
        assert timed_out.value.group["state"] == "Stable" and len(timed_out.value.group["members"]) == 2
    finally:
        first.stop(commit=False)
        second.stop(commit=False)


def test_rebalance_makes_a_classic_group_rebalance_as_a_new_member_would(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("rebalance")
    broker.create_topic(topic, 4)
    consumers = [start("confluent-kafka", broker, group, topic, f"r{i}") for i in range(2)]
    try:
        wait_for(lambda: sorted(len(c.tally.assigned) for c in consumers) == [2, 2], timeout=30, what="2 x 2")
        before = broker.wait_for_group(group, state="Stable", members=2)
        marks = [len(c.tally.events) for c in consumers]
        started = broker.rebalance(group)
        assert started["state"] == "PreparingRebalance"
        after = wait_for_generation(broker, group, before["generation"] + 1)
        # The same members rejoined into the next generation; each saw the rebalance.
        assert sorted(m["member_id"] for m in after["members"]) == sorted(m["member_id"] for m in before["members"])
        for consumer, mark in zip(consumers, marks):
            wait_for(lambda c=consumer, m=mark: [k for _, k, _ in c.tally.events[m:]] == ["revoked", "assigned"],
                     timeout=30, what=f"{consumer.name} revoked and assigned")
    finally:
        for c in consumers:
            c.stop(commit=False)


@pytest.mark.kgroup(group=CONSUMER_PROTOCOL_FAST)
def test_rebalance_of_a_consumer_group_bumps_its_epoch_and_members_follow(kgroup_broker):
    broker = kgroup_broker
    with consumer_protocol_member(broker, "cg-rebalance", 2) as (member, topic, group):
        before = broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)
        started = broker.rebalance(group)
        assert started["group_epoch"] == before["group_epoch"] + 1
        view = until(lambda: (v := broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000))
                     ["members"][0]["member_epoch"] == before["group_epoch"] + 1 and v, 60,
                     what="the member at the new group epoch")
        assert view["assignment_epoch"] == view["group_epoch"] == before["group_epoch"] + 1
        # Nothing to move: the member kept its partitions without losing or revoking them.
        assert member.events == [("assigned", (0, 1))]


def test_expire_removes_a_classic_member_as_its_session_timeout_would_and_it_rejoins(kgroup_broker_session):
    broker = kgroup_broker_session
    topic, group = names("expire")
    broker.create_topic(topic, 4)
    consumers = [start("kafka-python", broker, group, topic, f"e{i}", heartbeat_interval_ms=300) for i in range(2)]
    try:
        wait_for(lambda: sorted(len(c.tally.assigned) for c in consumers) == [2, 2], timeout=30, what="2 x 2")
        before = broker.wait_for_group(group, state="Stable", members=2)
        victim = next(m for m in before["members"] if m["client_id"] == "e1")
        expired = broker.expire_member(group, victim["member_id"])
        assert expired["expired"] == victim["member_id"]
        assert victim["member_id"] not in [m["member_id"] for m in expired["members"]]
        # Its next heartbeat gets UNKNOWN_MEMBER_ID: it joins again with a new member id.
        wait_for(lambda: rejoined(broker, group, victim["member_id"]), timeout=30, what="e1 back with a new id")
        wait_for(lambda: sorted(len(c.tally.assigned) for c in consumers) == [2, 2], timeout=30, what="2 x 2 again")
    finally:
        for c in consumers:
            c.stop(commit=False)


def rejoined(broker, group: str, old_member_id: str) -> bool:
    view = broker.group(group)
    ids = [m["member_id"] for m in view["members"]]
    return view["state"] == "Stable" and len(ids) == 2 and old_member_id not in ids


@pytest.mark.kgroup(group=CONSUMER_PROTOCOL_FAST)
def test_expire_fences_a_consumer_protocol_member_which_loses_its_partitions_and_rejoins(kgroup_broker):
    broker = kgroup_broker
    with consumer_protocol_member(broker, "cg-expire", 2) as (member, topic, group):
        before = broker.group(group)
        (m,) = before["members"]
        expired = broker.expire_member(group, m["member_id"])
        assert expired["members"] == [] and expired["group_epoch"] == before["group_epoch"] + 1
        wait_for(lambda: member.events[1:] == [("lost", (0, 1)), ("assigned", (0, 1))], timeout=30,
                 what=f"lost and assigned again, got {member.events}")
        assert len(broker.wait_for_group(group, state="Stable", members=1, timeout_ms=30_000)["members"]) == 1
