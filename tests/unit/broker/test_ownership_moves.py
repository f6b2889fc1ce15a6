"""Units moved by the control API (POST /groups/{g}/coordinator): the holder hands the unit
over and the chosen node takes it, it stays there, follows the placement while that node is
down and comes back to it afterwards; a move to the preferred node ends the move."""

from __future__ import annotations

import json
from pathlib import Path

from kgroup.broker.cluster.ownership import HAND_BACK_DELAY_MS, STARTUP_GRACE_MS
from tests.unit.broker.test_ownership import M, Clock, Node, advance, run, settle, three_settled


def test_a_moved_unit_is_handed_over_cleanly_to_the_node_named_and_stays_there(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        await advance(clock, HAND_BACK_DELAY_MS, a, b, c)  # live a while, as a running cluster
        a.own.move(1, 2)                       # asked on node 0, for a unit node 1 holds
        await settle(a, b, c)
        await settle(a, b, c)
        assert b.released == [1]               # handed over, not lost
        assert b.lost == [] and c.lost == []
        assert c.serving() == {1, 2, 5} and b.serving() == {4}
        await advance(clock, 3 * HAND_BACK_DELAY_MS, a, b, c)
        assert c.serving() == {1, 2, 5}        # no hand-back to its preferred node
        assert a.serving() | b.serving() | c.serving() == set(range(M))
    run(scenario())


def test_a_move_to_the_preferred_node_ends_it(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        await advance(clock, HAND_BACK_DELAY_MS, a, b, c)
        b.own.move(1, 0)
        await settle(a, b, c)
        await settle(a, b, c)
        assert a.serving() == {0, 1, 3}
        c.own.move(1, 1)
        assert json.loads((tmp_path / "cluster" / "moves.json").read_text())["units"] == {}
        await settle(a, b, c)
        await settle(a, b, c)
        assert b.serving() == {1, 4} and a.serving() == {0, 3}
    run(scenario())


def test_a_unit_moved_to_a_node_that_dies_follows_the_placement_then_returns(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        await advance(clock, HAND_BACK_DELAY_MS, a, b, c)
        a.own.move(0, 2)
        await settle(a, b, c)
        await settle(a, b, c)
        assert 0 in c.serving()
        c.kill()
        await settle(a, b)
        await settle(a, b)
        assert a.serving() | b.serving() == set(range(M))
        assert 0 in a.serving()                # its preferred node, while node 2 is down
        c2 = Node(tmp_path, 2, clock)
        await c2.own.start()
        await advance(clock, STARTUP_GRACE_MS + HAND_BACK_DELAY_MS, a, b, c2)
        assert c2.serving() == {0, 2, 5}
    run(scenario())
