"""Liveness on manual clocks: kill -9 is seen at once, a stopped node after the timeout and
only through the expulsion handshake, and a node may answer only while its lease is fresh."""

from __future__ import annotations

from pathlib import Path

from kgroup.broker.cluster.liveness import Liveness, PeerStatus
from kgroup.storage.node_registry import NodeRegistry

from tests.unit.closing import closed_after_test

TIMEOUT = 6000


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def pair(tmp_path: Path):
    """Nodes 0 and 1 on real registry files, sharing one manual clock."""
    clock = Clock()
    regs = [closed_after_test(NodeRegistry(tmp_path, [0, 1], i)) for i in (0, 1)]
    for r in regs:
        r.lock_self()
    views = [Liveness(regs[i], [0, 1], i, TIMEOUT, wall=clock, mono=clock) for i in (0, 1)]
    for v in views:
        v.renew()
    for v in views:
        v.poll()
    return clock, regs, views


def test_a_renewing_peer_is_live_and_counts_for_placement(tmp_path: Path) -> None:
    clock, _, (a, b) = pair(tmp_path)
    assert a.status(1) is PeerStatus.LIVE
    assert a.live() == {0, 1}
    clock.ms += 1500
    b.renew()
    a.poll()
    assert a.live_for(1) == 1500


def test_a_killed_peer_is_down_at_the_next_poll(tmp_path: Path) -> None:
    _, regs, (a, _) = pair(tmp_path)
    regs[1].close()                            # what kill -9 does to its lock
    assert a.poll()
    assert a.down(1) and a.live() == {0}


def test_a_stopped_peer_is_expelled_after_the_timeout_and_drops_everything_on_resume(tmp_path: Path) -> None:
    clock, regs, (a, b) = pair(tmp_path)
    clock.ms += TIMEOUT                         # b stopped: no renewal
    a.poll()
    assert a.status(1) is PeerStatus.LIVE       # not yet past the timeout
    clock.ms += 1
    a.poll()
    assert a.down(1)                            # marked, and still stale when read again
    assert regs[0].expelled(1) == b.incarnation
    assert not b.fresh()                        # b must renew before it answers
    assert not b.renew()                        # and learns it was expelled
    old = b.incarnation
    b.rejoin()
    assert b.incarnation == old + 1 and b.fresh()
    a.poll()
    assert a.status(1) is PeerStatus.LIVE and a.live_for(1) == 0


def test_a_peer_that_renews_between_the_mark_and_the_second_read_is_not_taken_over(tmp_path: Path) -> None:
    clock, regs, (a, b) = pair(tmp_path)
    clock.ms += TIMEOUT + 1

    class RenewsAfterTheMark:
        """b's renewal lands between a's mark and a's second read of the lease."""

        def __init__(self, real):
            self.real = real

        def __getattr__(self, name):
            return getattr(self.real, name)

        def expel(self, node, incarnation):
            self.real.expel(node, incarnation)
            assert b.renew() is False           # b reads the mark after its write: it stops

    a.registry = RenewsAfterTheMark(regs[0])
    a.poll()
    assert a.status(1) is PeerStatus.EXPELLING  # fresh lease seen again: not down
    b.rejoin()
    a.poll()
    assert a.status(1) is PeerStatus.LIVE


def test_freshness_lasts_half_the_timeout(tmp_path: Path) -> None:
    clock, _, (a, _) = pair(tmp_path)
    assert a.fresh()
    clock.ms += TIMEOUT // 2 - 1
    assert a.fresh()
    clock.ms += 1
    assert not a.fresh()
    assert a.renew() and a.fresh()


def test_a_node_with_its_lock_but_no_lease_is_starting(tmp_path: Path) -> None:
    clock = Clock()
    reg = closed_after_test(NodeRegistry(tmp_path, [0, 1], 0))
    reg.lock_self()
    peer = closed_after_test(NodeRegistry(tmp_path, [0, 1], 1))
    peer.lock_self()                            # locked, not renewed yet
    view = Liveness(reg, [0, 1], 0, TIMEOUT, wall=clock, mono=clock)
    view.poll()
    assert view.status(1) is PeerStatus.STARTING
    assert view.live() == {0} and not view.down(1)


def test_a_leaving_peer_gets_no_units_but_keeps_its_own_until_it_hands_them_over(tmp_path: Path) -> None:
    _, _, (a, b) = pair(tmp_path)
    b.leaving = True
    b.renew()
    a.poll()
    assert a.status(1) is PeerStatus.LEAVING
    assert a.live() == {0} and not a.down(1)
    assert a.reachable() == {0, 1}
    assert b.live() == {0}                      # it places nothing on itself either
