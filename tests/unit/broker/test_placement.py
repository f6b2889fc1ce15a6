"""Desired owners: preferred p mod N, a down node's units dealt over the live ones."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from kgroup.broker.cluster.placement import desired_owner, preferred_owner

NODES = (0, 1, 2)


def test_every_node_up_means_p_mod_n() -> None:
    assert [desired_owner(p, NODES, set(NODES)) for p in range(7)] == [0, 1, 2, 0, 1, 2, 0]
    assert preferred_owner(50, (3, 7)) == 3


def test_a_down_nodes_units_are_dealt_over_the_live_nodes_in_turn() -> None:
    # Node 0 prefers 0, 3, 6, 9, ...: its k-th goes to the k-th live node, in turn.
    owners = [desired_owner(p, NODES, {1, 2}) for p in range(0, 12, 3)]
    assert owners == [1, 2, 1, 2]
    # The others keep theirs.
    assert [desired_owner(p, NODES, {1, 2}) for p in (1, 2, 4, 5)] == [1, 2, 1, 2]


def test_nobody_live_means_no_owner() -> None:
    assert desired_owner(4, NODES, set()) is None


@given(st.integers(1, 7), st.data())
def test_the_spread_is_even_and_only_live_nodes_own(n: int, data) -> None:
    nodes = tuple(range(n))
    live = data.draw(st.sets(st.sampled_from(nodes), min_size=1))
    # A multiple of N x live units: each down node's share divides evenly over the live.
    counts = Counter(desired_owner(p, nodes, live) for p in range(n * len(live) * 12))
    assert set(counts) == live
    assert len(set(counts.values())) == 1
