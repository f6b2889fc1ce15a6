"""Ownership decisions on one shared data dir, two or three nodes in this process, manual
clocks: who takes what at start, hand-back, takeover of a killed or a stopped node, and a
node that learns it was expelled."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kgroup.broker.cluster.liveness import Liveness
from kgroup.broker.cluster.ownership import (
    HAND_BACK_DELAY_MS,
    ORPHAN_WAIT_MS,
    STARTUP_GRACE_MS,
    Ownership,
    UnitHooks,
    UnitState,
)
from kgroup.storage.data_dir import DataDir, NodeMembership

NODES = (0, 1, 2)
TIMEOUT = 3000
M = 6   # group-metadata partitions: units 0..5, preferred p mod 3


class Clock:
    def __init__(self) -> None:
        self.ms = 10_000_000

    def __call__(self) -> int:
        return self.ms


class Node:
    opened: list[Node] = []   # closed by `run`

    def __init__(self, path: Path, me: int, clock: Clock) -> None:
        Node.opened.append(self)
        self.data = DataDir(path, metadata_partitions=M, membership=NodeMembership(NODES, me, exclusive=False))
        self.opened: list[int] = []
        self.lost: list[int] = []
        self.released: list[int] = []
        hooks = UnitHooks(opened=self._opened, releasing=self._releasing, lost=self.lost.append,
                          topics_changed=lambda: None, fatal=self._fatal)
        self.liveness = Liveness(self.data.nodes, list(NODES), me, TIMEOUT, wall=clock, mono=clock)
        self.own = Ownership(self.data, self.liveness, list(NODES), me, hooks, poll_ms=10**9)

    def _opened(self, slot, epoch, previous, started) -> str:
        self.opened.append(slot)
        return "loaded"

    async def _releasing(self, slot, to) -> None:
        self.released.append(slot)

    def _fatal(self) -> None:
        raise AssertionError("a load failed")

    def serving(self) -> set[int]:
        """What it answers for: units it serves whose fence still holds (every request
        checks that before it is answered)."""
        return {s for s, state in self.own.units.items() if state is UnitState.SERVING and self.own.holds(s)}

    def kill(self) -> None:
        """What kill -9 leaves: the lock released, nothing else done."""
        self.data.nodes.close()


async def advance(clock: Clock, ms: int, *nodes: Node) -> None:
    """Let `ms` pass in steps, each node running its rounds (renewing its lease) meanwhile."""
    for _ in range(0, ms, 500):
        clock.ms += 500
        await settle(*nodes)
    await settle(*nodes)   # and the round after, which sees the last moves


async def settle(*nodes: Node) -> None:
    """One ownership round on each node, then until their moves are done."""
    for node in nodes:
        node.own.tick()
    for _ in range(200):
        await asyncio.sleep(0)
        if not any(n.own._queued for n in nodes):
            return
    raise AssertionError("moves did not finish")


async def three_settled(path: Path, clock: Clock) -> list[Node]:
    """Nodes 0, 1, 2 started together, each serving its preferred units."""
    nodes = [Node(path, i, clock) for i in NODES]
    for n in nodes:
        await n.own.start()
    await settle(*nodes)
    assert [n.serving() for n in nodes] == [{0, 3}, {1, 4}, {2, 5}]
    return nodes


def run(coro):
    """Run a scenario; close every DataDir it opened (their files and locks) afterwards."""
    try:
        return asyncio.run(coro)
    finally:
        while Node.opened:
            Node.opened.pop().data.close()


def test_nodes_starting_together_take_only_what_they_prefer_then_the_rest(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a = Node(tmp_path, 0, clock)
        await a.own.start()
        await settle(a)
        assert a.serving() == {0, 3}                   # its own; nodes 1 and 2 may be starting
        b = Node(tmp_path, 1, clock)
        await b.own.start()
        await settle(a, b)
        assert b.serving() == {1, 4}
        await advance(clock, STARTUP_GRACE_MS, a, b)
        # Node 2 never came: its units are dealt over the two live nodes.
        assert a.serving() | b.serving() == set(range(M)) and not a.serving() & b.serving()
        assert {2, 5} & a.serving() and {2, 5} & b.serving()
    run(scenario())


def test_a_returning_node_gets_its_units_back_by_hand_over_after_being_live_a_while(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b = Node(tmp_path, 0, clock), Node(tmp_path, 1, clock)
        for n in (a, b):
            await n.own.start()
        await advance(clock, STARTUP_GRACE_MS, a, b)
        held_for_c = (a.serving() | b.serving()) & {2, 5}
        assert held_for_c == {2, 5}
        c = Node(tmp_path, 2, clock)
        await c.own.start()
        await settle(a, b, c)
        assert c.serving() == set()                    # live, but not for long enough
        await advance(clock, HAND_BACK_DELAY_MS, a, b, c)   # the holders hand over, c takes them
        assert c.serving() == {2, 5}
        assert sorted(a.released + b.released) == [2, 5]
        assert all(n.data.table.current(s)[1] == n.data.membership.index for n in (a, b, c) for s in n.serving())
    run(scenario())


def test_a_killed_node_loses_its_units_at_the_next_round(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        b.kill()
        await settle(a, c)
        await settle(a, c)
        assert a.serving() | c.serving() == set(range(M))
        assert a.serving() & {1, 4} and c.serving() & {1, 4}   # dealt in turn
        epoch, index = a.data.table.current(1)
        assert epoch == 2 and index in (0, 2)
    run(scenario())


def test_a_stopped_node_is_expelled_and_drops_everything_when_it_resumes(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        clock.ms += TIMEOUT + 1                        # b is stopped: no rounds, no renewals
        for n in (a, c):
            n.liveness.renew()
        await settle(a, c)
        await settle(a, c)
        assert a.serving() | c.serving() == set(range(M))
        assert set(b.own.units) == {1, 4}               # it does not know yet...
        assert b.serving() == set()                     # ...but its fences fail: it answers nothing
        b.own.gate()                                    # resumes: the first request renews
        assert b.serving() == set() and sorted(b.lost) == [1, 4] and b.own.losses >= 2
        assert not b.data.metadata_log.partitions       # its logs are closed
        assert b.liveness.fresh()                       # a new incarnation, with no units
    run(scenario())


def test_every_unit_has_one_owner_whatever_the_order_of_rounds(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        nodes = await three_settled(tmp_path, clock)
        await advance(clock, STARTUP_GRACE_MS + HAND_BACK_DELAY_MS, *nodes)
        for order in ([0, 1, 2], [2, 1, 0], [1, 0, 2], [2, 0, 1]):
            await settle(*(nodes[i] for i in order))
            held = [n.serving() for n in nodes]
            for i in range(3):
                for j in range(i + 1, 3):
                    assert not held[i] & held[j]
        assert [n.serving() for n in nodes] == [{0, 3}, {1, 4}, {2, 5}]
    run(scenario())


def test_a_node_restarted_while_a_peer_takes_its_units_does_not_fight_for_them(tmp_path: Path) -> None:
    async def scenario():
        clock = Clock()
        a, b, c = await three_settled(tmp_path, clock)
        b.kill()
        a.own.tick()                                   # a sees b down and decides to take its units
        again = Node(tmp_path, 1, clock)               # b restarts before a's moves run
        await again.own.start()
        await settle(a, again, c)
        assert again.serving() == set()                # it does not resume what a is taking...
        assert a.serving() >= {0, 1, 3}                # ...a took its share of b's units
        await advance(clock, ORPHAN_WAIT_MS, a, again, c)
        # c never saw b down; unit 4, b's own, is resumed once the wait is over (and a
        # may have handed unit 1 back by then).
        assert 4 in again.serving() and not (a.serving() & c.serving() or again.serving() & a.serving())
        await advance(clock, STARTUP_GRACE_MS + HAND_BACK_DELAY_MS, a, again, c)
        assert [n.serving() for n in (a, again, c)] == [{0, 3}, {1, 4}, {2, 5}]   # handed back
    run(scenario())
