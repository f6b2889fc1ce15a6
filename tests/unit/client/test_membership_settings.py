"""Membership, LeaderElection and TaskAssignment check what they are given before any I/O;
the consumer's partition.assignment.strategy takes names and assignor objects."""

from __future__ import annotations

import pytest

from kgroup.assignors import EAGER, Assignment
from kgroup.client import Consumer, LeaderElection, Membership, TaskAssignment


class Custom:
    name = "custom"
    supported_protocols = (EAGER,)

    def assign(self, members, partitions_per_topic, partition_racks=None):
        return {m: Assignment() for m in members}


def test_membership_settings_by_kafka_names_with_connect_like_defaults():
    m = Membership({"group.id": "g"}, protocol_type="jobs", session_timeout_ms=6000)
    assert m.config.session_timeout_ms == 6000 and m.config.rebalance_timeout_ms == 60_000
    assert m.config.protocol_type == "jobs" and m.config.lose_before_expiry
    assert m.config.rebalance_protocol == "eager" and not m.config.auto_commit


@pytest.mark.parametrize("kwargs, message", [
    ({"protocol_type": "jobs"}, "group.id"),
    ({"protocol_type": "", "group_id": "g"}, "protocol_type"),
    ({"protocol_type": "jobs", "group_id": "g", "rebalance": "lazy"}, "rebalance"),
    ({"protocol_type": "jobs", "group_id": "g", "protocols": []}, "at least one"),
    ({"protocol_type": "jobs", "group_id": "g", "max_poll_records": 5}, "unknown setting"),
])
def test_membership_refuses_what_cannot_work(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Membership(**kwargs)


def test_helpers_pick_their_protocol_types_and_rebalance_protocols():
    election = LeaderElection("sched", {"session.timeout.ms": 6000})
    assert election.membership.config.protocol_type == "kgroup-leader"
    assert election.membership.config.rebalance_protocol == "eager"
    tasks = TaskAssignment("w", ["a", "b", "a"])
    assert tasks.all_tasks == ("a", "b")
    assert tasks.membership.config.protocol_type == "kgroup-tasks"
    assert tasks.membership.config.rebalance_protocol == "cooperative"
    with pytest.raises(ValueError, match="empty"):
        TaskAssignment("w", ["a", ""])


def test_consumer_takes_assignor_objects_beside_names():
    custom = Custom()
    c = Consumer({"group.id": "g", "partition.assignment.strategy": [custom, "range"]})
    assert c._assignors == (custom, "range")
    assert Consumer({"group.id": "g"})._assignors == ("range", "cooperative-sticky")
    with pytest.raises(ValueError, match="neither"):
        Consumer({"group.id": "g", "partition.assignment.strategy": [object()]})
