"""Liveness: this node's lease, its view of its peers, and the self-fencing gate.

How this works: every poll (a few hundred ms) the node renews its lease and looks at each
peer's files (storage/node_registry.py):

- its lock is free → DOWN (killed, or never started): its units may be taken at once;
- it holds its lock but has written no lease yet → STARTING;
- its lease is fresh → LIVE (since when is remembered: a node gets units handed back only
  once it has been live for a while, so a flapping node does not pull them back and forth),
  or LEAVING if it says it is shutting down (no unit is placed on it; it hands its own
  over, so they are not taken from it);
- its lease is older than `node_timeout_ms` while it holds its lock (stopped, hung) → this
  node writes the expulsion mark for that incarnation and reads the lease again: still
  stale → DOWN (the node will see the mark before it serves again), otherwise EXPELLING
  until the node renews and notices the mark (then it comes back as a new incarnation).

Self-fencing: a node may answer for its units only while its last renewal that was not
expelled is recent (`fresh`: less than half the timeout ago by the monotonic clock). After
a pause the broker renews first (`renew`), and if it was expelled it drops every unit
before answering anything. Peers wait a whole timeout, so a node that is not fresh has
stopped answering before anyone may take its units.

Clocks are injected (`wall_ms` for leases, which other processes read; `mono_ms` for this
process's own intervals), so tests drive it without sleeping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Protocol

from kgroup.storage.node_registry import LEAVING, Lease


class Registry(Protocol):
    def renew(self, now_ms: int, incarnation: int, flags: int = 0) -> bool: ...
    def lock_free(self, node: int) -> bool: ...
    def lease(self, node: int) -> Lease | None: ...
    def expelled(self, node: int) -> int | None: ...
    def expel(self, node: int, incarnation: int) -> None: ...


class PeerStatus(Enum):
    STARTING = "starting"
    LIVE = "live"
    LEAVING = "leaving"
    EXPELLING = "expelling"
    DOWN = "down"


@dataclass(slots=True)
class PeerView:
    status: PeerStatus
    since_ms: int                 # monotonic ms when it entered this status
    incarnation: int | None = None


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def mono_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Liveness:
    """This node's lease and its view of the other nodes (see the module docstring)."""

    def __init__(self, registry: Registry, nodes: list[int], me: int, node_timeout_ms: int,
                 wall: Callable[[], int] = wall_ms, mono: Callable[[], int] = mono_ms) -> None:
        self.registry = registry
        self.nodes = sorted(nodes)
        self.me = me
        self.node_timeout_ms = node_timeout_ms
        self.wall = wall
        self.mono = mono
        self.incarnation = max(wall() * 1000, 1)
        self.last_good_ms: int | None = None    # monotonic time of the last renewal not expelled
        self.leaving = False
        now = mono()
        self.peers = {n: PeerView(PeerStatus.DOWN, now) for n in self.nodes if n != me}
        # Peers this node has seen LIVE at least once since it started.
        self.seen_live: set[int] = set()

    # ---- this node ------------------------------------------------------------------------

    def renew(self) -> bool:
        """Renew the lease; False if this incarnation was expelled (the caller must drop
        every unit, then call `rejoin`)."""
        started = self.mono()
        if not self.registry.renew(self.wall(), self.incarnation, LEAVING if self.leaving else 0):
            return False
        self.last_good_ms = started
        return True

    def rejoin(self) -> None:
        """After an expulsion: a new incarnation, with a fresh lease."""
        self.incarnation += 1
        self.last_good_ms = None
        self.renew()

    def fresh(self) -> bool:
        """May this node answer for its units now (its last good renewal is recent)?"""
        last = self.last_good_ms
        return last is not None and self.mono() - last < self.node_timeout_ms // 2

    # ---- peers ----------------------------------------------------------------------------

    def poll(self) -> bool:
        """Look at every peer; True if any status changed."""
        changed = False
        for node, peer in self.peers.items():
            status, incarnation = self._observe(node)
            if status is not peer.status or incarnation != peer.incarnation:
                changed = changed or status is not peer.status
                if status is not peer.status:
                    peer.since_ms = self.mono()
                peer.status, peer.incarnation = status, incarnation
            if status is PeerStatus.LIVE:
                self.seen_live.add(node)
        return changed

    def _observe(self, node: int) -> tuple[PeerStatus, int | None]:
        registry = self.registry
        if registry.lock_free(node):
            return PeerStatus.DOWN, None
        lease = registry.lease(node)
        if lease is None:
            return PeerStatus.STARTING, None
        if self.wall() - lease.time_ms <= self.node_timeout_ms:
            return (PeerStatus.LEAVING if lease.leaving else PeerStatus.LIVE), lease.incarnation
        # Stale while holding its lock: mark it, then read the lease again (the order is
        # what makes the handshake safe; see storage/node_registry.py).
        if registry.expelled(node) != lease.incarnation:
            registry.expel(node, lease.incarnation)
        again = registry.lease(node)
        if again is not None and (again.incarnation != lease.incarnation
                                  or self.wall() - again.time_ms <= self.node_timeout_ms):
            return PeerStatus.EXPELLING, lease.incarnation
        if registry.lock_free(node):
            return PeerStatus.DOWN, None
        return PeerStatus.DOWN, lease.incarnation

    def status(self, node: int) -> PeerStatus:
        if node == self.me:
            return PeerStatus.LIVE
        return self.peers[node].status

    def live(self) -> set[int]:
        """The nodes units may be placed on: this one (unless it is leaving) and every
        LIVE peer."""
        mine = set() if self.leaving else {self.me}
        return mine | {n for n, p in self.peers.items() if p.status is PeerStatus.LIVE}

    def reachable(self) -> set[int]:
        """The nodes clients may talk to (Metadata lists them): all but the DOWN ones."""
        return {self.me} | {n for n, p in self.peers.items() if p.status is not PeerStatus.DOWN}

    def down(self, node: int) -> bool:
        """May `node`'s units be taken without its hand-over?"""
        return node != self.me and self.peers[node].status is PeerStatus.DOWN

    def live_for(self, node: int) -> int:
        """How long `node` has been LIVE without a break, in ms (0 if it is not)."""
        if node == self.me:
            return 1 << 62
        peer = self.peers[node]
        return self.mono() - peer.since_ms if peer.status is PeerStatus.LIVE else 0
