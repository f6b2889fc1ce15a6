"""Replication factors in a cluster (broker/data/replicas.py): what a topic may ask for, and the
replicas, in-sync replicas and offline replicas Metadata reports."""

from __future__ import annotations

from kgroup.broker.data.replicas import assignment_problem, inconsistent_factors, replica_set, replication_problem
from tests.unit.broker.datactx import DataCtx, run

NODES = (0, 1, 2)


def test_replication_factor_up_to_the_number_of_nodes_or_minus_one():
    assert [replication_problem(rf, 3) is None for rf in (-1, 1, 2, 3)] == [True] * 4
    assert "only 3 broker(s) are registered" in replication_problem(4, 3)
    assert replication_problem(0, 3) == replication_problem(-2, 3) == (
        "Replication factor must be larger than 0, or -1 to use the default value.")


def test_replicas_start_at_the_preferred_node_and_the_live_ones_are_in_sync():
    assert replica_set(4, NODES, {0, 1, 2}, 1, 3) == ((1, 2, 0), (1, 2, 0), ())
    assert replica_set(4, NODES, {0, 1, 2}, 1, 1) == ((1,), (1,), ())
    # Node 2 is down: still a replica, offline and out of sync.
    assert replica_set(5, NODES, {0, 1}, 0, 3) == ((2, 0, 1), (0, 1), (2,))
    # The partition moved off its replicas (rf 1, its node down): its leader leads the list.
    assert replica_set(2, NODES, {0, 1}, 0, 1) == ((0,), (0,), ())
    assert replica_set(2, NODES, {0, 1}, 1, 2) == ((1, 2), (1,), (2,))
    # While it moves (no leader) the list is the placement's.
    assert replica_set(0, NODES, {1, 2}, None, 2) == ((0, 1), (1,), (0,))


def test_a_manual_assignment_names_known_nodes_once_each_with_one_factor():
    assert assignment_problem([0, 2], NODES) is None
    assert assignment_problem([], NODES) == "The manual partition assignment includes an empty replica list."
    assert assignment_problem([0, 5], NODES) == (
        "The manual partition assignment includes broker 5, but no such broker is registered.")
    assert assignment_problem([1, 1], NODES) == "The manual partition assignment includes the broker 1 more than once."
    assert inconsistent_factors(2, [[0, 1], [1, 2]], 0) is None
    assert inconsistent_factors(2, [[0, 1], [1]], 3) == (
        "Inconsistent replication factor between partitions, partition 0 has 2 while partitions [4] have "
        "replication factors [1], respectively.")


def test_replication_factor_in_a_cluster_is_created_stored_and_reported(tmp_path):
    """A 3-node cluster's node 0 (alone up, as this test's cluster view says): RF 3 and a
    manual RF 2 assignment are accepted and kept, RF 4 refused; Metadata lists the replicas."""
    async def scenario(ctx: DataCtx):
        r = await ctx.create_topics(7, [{"name": "three", "partitions": 2, "replication": 3},
                                        {"name": "four", "replication": 4},
                                        {"name": "manual", "assignments": [[1, 2], [2, 0]]},
                                        {"name": "uneven", "assignments": [[1, 2], [2]]}])
        assert [(int(t.error_code), t.replication_factor) for t in r.topics] == [(0, 3), (38, -1), (0, 2), (39, -1)]
        assert ctx.data.topic("three").replication_factor == 3 and ctx.data.topic("manual").replication_factor == 2
        grown = await ctx.create_partitions(3, {"three": 3}, assignments={"three": [[0, 1]]})
        assert int(grown.results[0].error_code) == 39
        grown = await ctx.create_partitions(3, {"three": 3}, assignments={"three": [[2, 0, 1]]})
        assert int(grown.results[0].error_code) == 0 and ctx.data.topic("three").replication_factor == 3
        md = await ctx.metadata(12, ["three"])
        assert [(list(p.replica_nodes), list(p.isr_nodes), list(p.offline_replicas))
                for p in md.topics[0].partitions] == [([0, 1, 2], [0], [1, 2]), ([1, 2, 0], [0], [1, 2]),
                                                      ([2, 0, 1], [0], [2, 1])]

    run(tmp_path, scenario, node_id=0, cluster=((0, "127.0.0.1", 9092), (1, "127.0.0.1", 9093),
                                               (2, "127.0.0.1", 9094)))
