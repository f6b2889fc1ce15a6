"""One simulated consumer process: a real member state machine and what its driver does.

The state machine (``ClassicMemberMachine`` or ``ConsumerMemberMachine`` from ``kgroup.member``) is the
one our asyncio client runs; here the engine plays its driver. This module holds what a
consumer process has besides its group state: its link to the coordinator (delay, jitter,
cuts, FIFO like a TCP connection), its poll loop (rebalance work waits for the end of the
batch being processed, as in a real consumer where callbacks and rejoins run inside
``poll``), and its consumption positions. A restart is a new incarnation: replies meant for
an older one are dropped, as a new process never sees its predecessor's responses.
"""

from __future__ import annotations

import random

from kgroup.lab.scenario import MemberSettings, NetworkSettings
from kgroup.member import ClassicMemberMachine, ConsumerMemberMachine, MemberConfig

Partition = tuple[str, int]
GROUP_ID = "lab"


class Process:
    """A consumer process in the lab; the engine drives it."""

    __slots__ = ("index", "name", "spec", "incarnation", "up", "paused_until", "deferred",
                 "cut", "delay", "jitter", "link_out", "link_in", "sm", "tick_at", "bundle",
                 "bundle_at", "phase", "positions", "since", "holding", "find_backoff",
                 "finding", "is_consumer", "rng", "steady", "stopped", "last_commit", "commit_seq",
                 "commit_at")

    def __init__(self, index: int, spec: MemberSettings, network: NetworkSettings, rng: random.Random) -> None:
        self.index = index
        self.name = f"m{index:03d}"
        self.spec = spec
        self.is_consumer = spec.kind.by_epoch           # a consumer-protocol member (KIP-848)
        self.incarnation = 0
        self.up = False
        self.paused_until = -1
        self.deferred: list = []
        self.cut = False
        self.delay = network.delay_ms
        self.jitter = network.jitter_ms
        self.link_out = 0
        self.link_in = 0
        self.sm: ClassicMemberMachine | ConsumerMemberMachine | None = None
        self.tick_at: int | None = None
        self.bundle: list | None = None
        self.bundle_at = -1
        self.phase = 0
        self.positions: dict[Partition, float] = {}
        self.since = 0
        self.holding: set[Partition] = set()
        self.find_backoff = 100
        self.finding = False
        self.rng = rng
        self.steady = False
        self.stopped = False
        self.last_commit: dict[Partition, int] = {}
        self.commit_seq = 0          # bumps when a fast-forward reschedules the auto-commit
        self.commit_at = 0           # when the next auto-commit is due

    # ---- lifecycle ---------------------------------------------------------------------

    def start(self, now: int) -> None:
        """A new process: a fresh state machine (static members keep their instance id)."""
        self.incarnation += 1
        self.up = True
        self.paused_until = -1
        self.deferred = []
        self.cut = False
        self.bundle = None
        self.tick_at = None
        self.positions = {}
        self.holding = set()
        self.since = now
        self.find_backoff = 100
        self.finding = False
        self.steady = False
        self.last_commit = {}
        self.phase = now + self.rng.randrange(max(1, self.spec.processing_ms))
        config = self.config()
        if self.is_consumer:
            self.sm = ConsumerMemberMachine(config, f"{self.name}~{self.incarnation}", now)
        else:
            self.sm = ClassicMemberMachine(config, now)

    def config(self) -> MemberConfig:
        s = self.spec
        return MemberConfig(
            group_id=GROUP_ID,
            group_instance_id=self.name if s.static else None,
            session_timeout_ms=s.session_timeout_ms,
            heartbeat_interval_ms=s.heartbeat_interval_ms,
            max_poll_interval_ms=s.rebalance_timeout_ms,
            assignors=s.assignor if not self.is_consumer else ("range",),
            auto_commit=True,
            server_assignor=s.server_assignor,
        )

    @property
    def running(self) -> bool:
        """Up and neither frozen nor cut off: it consumes and answers."""
        return self.up and self.paused_until < 0 and not self.cut

    # ---- the link ----------------------------------------------------------------------

    def _latency(self) -> int:
        if self.jitter:
            return self.delay + self.rng.randrange(self.jitter + 1)
        return self.delay

    def to_coordinator(self, now: int) -> int:
        """When a message sent now reaches the coordinator (in order with earlier ones)."""
        t = max(now + self._latency(), self.link_out)
        self.link_out = t
        return t

    def to_member(self, now: int) -> int:
        t = max(now + self._latency(), self.link_in)
        self.link_in = t
        return t

    # ---- the poll loop -----------------------------------------------------------------

    def next_poll(self, now: int) -> int:
        """The end of the batch being processed now: where rebalance work can run."""
        step = self.spec.processing_ms
        if step <= 1:
            return now
        passed = (now - self.phase) % step
        return now if passed == 0 else now + step - passed

    # ---- consumption -------------------------------------------------------------------

    def settle(self, now: int) -> None:
        """Bring positions up to ``now`` (records consumed while running)."""
        if self.running and self.positions:
            advance = self.spec.records_per_s * (now - self.since) / 1000
            if advance:
                for p in self.positions:
                    self.positions[p] += advance
        self.since = now
