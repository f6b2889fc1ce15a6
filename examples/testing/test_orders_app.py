"""Tests of the orders app against kgroup, with the pytest plugin's fixtures.

Run them with `pytest examples/testing` where kgroup and confluent-kafka are installed.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from orders_app import OrdersApp


def produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        producer.produce("orders", key=f"order-{i}".encode(), value=f"{i} x widget".encode())
    assert producer.flush(10) == 0


def eventually(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_fenced_commit_loses_no_order(kgroup_broker):
    kgroup_broker.create_topic("orders", 3)
    app = OrdersApp(kgroup_broker.bootstrap)
    app.start()
    try:
        kgroup_broker.wait_for_group("orders-app", state="Stable", members=1)
        produce(kgroup_broker.bootstrap, 0, 50)
        eventually(lambda: len(app.orders) == 50)
        # The next commit is refused as from an old generation, as after a rebalance the app
        # did not see yet; the app must rejoin and lose nothing.
        fault = kgroup_broker.add_fault("OffsetCommit", "ILLEGAL_GENERATION", group="orders-app")
        produce(kgroup_broker.bootstrap, 50, 50)
        eventually(lambda: len(app.orders) == 100 and not kgroup_broker.faults())
        assert app.failed_commits == ["ILLEGAL_GENERATION"]
        group = kgroup_broker.wait_for_group("orders-app", state="Stable", members=1)
        assert group["members"][0]["assignment"] == {"orders": [0, 1, 2]}
        assert fault not in [f["id"] for f in kgroup_broker.faults()]
    finally:
        app.stop()


def test_a_coordinator_that_goes_away_costs_no_order(kgroup_broker):
    kgroup_broker.create_topic("orders", 3)
    app = OrdersApp(kgroup_broker.bootstrap)
    app.start()
    try:
        before = kgroup_broker.wait_for_group("orders-app", state="Stable", members=1)
        # Heartbeats and commits told "not the coordinator" three times each: the app must
        # find the coordinator again and go on, in the same generation.
        kgroup_broker.add_fault("Heartbeat", "NOT_COORDINATOR", group="orders-app", count=3)
        kgroup_broker.add_fault("OffsetCommit", "NOT_COORDINATOR", group="orders-app", count=3)
        produce(kgroup_broker.bootstrap, 0, 100)
        eventually(lambda: len(app.orders) == 100 and not kgroup_broker.faults())
        after = kgroup_broker.wait_for_group("orders-app", state="Stable", members=1)
        assert after["generation"] == before["generation"]
    finally:
        app.stop()


@pytest.mark.kgroup(nodes=3)
def test_a_real_coordinator_move_and_a_dead_node_cost_no_order(kgroup_cluster):
    kgroup_cluster.create_topic("orders", 3)
    app = OrdersApp(kgroup_cluster.bootstrap)
    app.start()
    try:
        before = kgroup_cluster.wait_for_group("orders-app", state="Stable", members=1)
        produce(kgroup_cluster.bootstrap, 0, 50)
        eventually(lambda: len(app.orders) == 50)
        # A clean hand-over of the group's coordinator to another node: no rebalance.
        target = (before["coordinator"] + 1) % 3
        assert kgroup_cluster.move_coordinator("orders-app", target)["coordinator"] == target
        produce(kgroup_cluster.bootstrap, 50, 50)
        eventually(lambda: len(app.orders) == 100)
        # Now the coordinator dies (kill -9): another node loads the group, the app finds it.
        kgroup_cluster.kill_node(target)
        produce(kgroup_cluster.bootstrap, 100, 50)
        eventually(lambda: len(app.orders) == 150, timeout=90)
        after = kgroup_cluster.wait_for_group("orders-app", state="Stable", members=1)
        assert after["generation"] == before["generation"] and after["coordinator"] != target
    finally:
        app.stop()
