"""What the lab measures about one simulated group, and the invariants it checks.

How this works: ownership is taken from the members' own rebalance callbacks, exactly as
a user's application would see it: a member *holds* a partition from the moment its driver
runs ``on_partitions_assigned`` until ``on_partitions_revoked`` / ``on_partitions_lost``
(or its process dies). The engine calls ``assign`` / ``release`` / ``crash`` as it performs
those actions and ``tick`` whenever virtual time moves, so time-weighted figures
(unowned partition-seconds, stop-the-world seconds) are exact integrals, not samples.

Counting starts once the group first converges (every partition held once, every running
member steady, the coordinator's group Stable); the start-up rebalance is reported apart.
Each disruptive scenario action opens a *window* that closes at the first convergence after
the disruption ends; per-window figures answer "what did this restart cost".

A member whose process closes or dies for good (the scenario never starts it again) is
*gone*: while every member that ever ran is gone, the group has nobody to own its
partitions, so that stretch adds no unowned partition-seconds (a recorded consumer that
held its partitions for a second and left is not charged for the rest of the recording).

Invariants (must stay zero for a correct coordinator, member and assignor):
- double ownership: two running members hold one partition at once while the coordinator
  counts both as members of the group. A member the coordinator already removed (session
  expiry, fencing) is a zombie whose commits are fenced, so it is not counted; a zombie that
  the coordinator still counts (a static member kept through a rebalance while cut off or
  frozen) is, because Kafka's guarantee really is broken there.
- a committed offset that goes backwards for a partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

Partition = tuple[str, int]


@dataclass(slots=True)
class Window:
    """One disruptive action and what it cost, until the group converged again."""

    event: int
    kind: str
    member: int
    start_ms: int
    disrupted_until_ms: int
    held_at_start: dict[str, int]                 # member name -> partitions held
    target_held: frozenset[Partition]              # what the hit member held at the start
    generation_at_start: int
    moved_at_start: int
    unowned_ms_at_start: float
    converged_ms: int = -1
    ended: bool = False                            # the disruption's end action has run
    rounds: int = 0
    moved: int = 0
    min_moved: int = 0
    unowned_partition_ms: float = 0.0
    max_unowned_ms: int = 0
    unowned_other: set[Partition] = field(default_factory=set)
    stopped_members: set[str] = field(default_factory=set)

    def row(self) -> dict:
        return {
            "event": self.event, "kind": self.kind, "member": self.member,
            "start_s": self.start_ms / 1000,
            "converge_s": (self.converged_ms - self.start_ms) / 1000 if self.converged_ms >= 0 else None,
            "rounds": self.rounds, "moved": self.moved, "min_moved": self.min_moved,
            "unowned_partition_s": self.unowned_partition_ms / 1000,
            "max_unowned_s": self.max_unowned_ms / 1000,
            "unowned_other": len(self.unowned_other),
            "members_stopped": len(self.stopped_members),
        }


class Metrics:
    """Ownership, time integrals, windows and invariant counters for one group."""

    def __init__(self, partitions: list[Partition], *, record_timeline: bool = False) -> None:
        self.now = 0
        self.holders: dict[Partition, list[int]] = {p: [] for p in partitions}
        self.unowned: set[Partition] = set(partitions)
        self.shared = 0                               # partitions held by two or more members
        self.unowned_since: dict[Partition, int] = {p: 0 for p in partitions}
        self.first_owned_ms: dict[Partition, int] = {}
        self.last_owner: dict[Partition, str] = {}
        self.consumed_high: dict[Partition, float] = {}
        self.last_committed: dict[Partition, int] = {}
        self.warm = False
        self.warm_at_ms = -1
        # totals after warm-up
        self.rebalances = 0
        self.moved = 0
        self.unowned_partition_ms = 0.0
        self.stop_ms: dict[str, float] = {}
        self.duplicates = 0.0
        self.double_ownership = 0
        self.offset_regressions = 0
        self.fatal = 0
        self.windows: list[Window] = []
        self.open: list[Window] = []
        self._stopped: dict[str, int] = {}            # member name -> stopped since
        self.timeline: list[tuple[str, str, int, int, int]] | None = [] if record_timeline else None
        self._held_since: dict[tuple[str, Partition], int] = {}
        self.generations: list[tuple[int, int]] = []  # (time, generation/epoch) seen
        self.present: set[int] = set()                # member indexes started and not gone for good
        self.gone_at: dict[str, int] = {}             # member name -> when it left for good

    # ---- time --------------------------------------------------------------------------

    def tick(self, now: int) -> None:
        """Advance the integrals to ``now``."""
        dt = now - self.now
        if dt <= 0:
            return
        n = len(self.unowned)
        if n and self.present:
            if self.warm:
                self.unowned_partition_ms += n * dt
            for w in self.open:
                w.unowned_partition_ms += n * dt
        self.now = now

    # ---- ownership ---------------------------------------------------------------------

    def assign(self, member: int, name: str, parts, committed: dict[Partition, int],
               conflicts: Callable[[int, Partition], int]) -> None:
        """``name`` (member index ``member``) ran its assigned callback for ``parts``;
        ``committed`` is where each partition's consumption starts again."""
        now = self.now
        warm = self.warm
        for p in (sorted(parts) if len(parts) > 1 else parts):
            holders = self.holders.get(p)
            if holders is None:          # a partition added since: known from now on
                holders = self.holders[p] = []
            if member in holders:
                continue
            self.double_ownership += conflicts(member, p)
            if not holders:
                self._owned_again(p)
            elif len(holders) == 1:
                self.shared += 1
            holders.append(member)
            prev = self.last_owner.get(p)
            if prev is not None and prev != name and warm:
                self.moved += 1
                for w in self.open:
                    w.moved += 1
            self.last_owner[p] = name
            if p not in self.first_owned_ms:
                self.first_owned_ms[p] = now
            if warm:
                high = self.consumed_high.get(p, 0.0)
                start = committed.get(p, 0)
                if high > start:
                    self.duplicates += high - start
            if self.timeline is not None:
                self._held_since[(name, p)] = now

    def release(self, member: int, name: str, parts) -> None:
        """``name`` revoked or lost ``parts`` (or its process went away holding them)."""
        for p in sorted(parts):
            holders = self.holders.get(p)
            if not holders or member not in holders:
                continue
            holders.remove(member)
            if len(holders) == 1:
                self.shared -= 1
            if not holders:
                self.unowned.add(p)
                self.unowned_since[p] = self.now
                for w in self.open:
                    if p not in w.target_held:
                        w.unowned_other.add(p)
            if self.timeline is not None:
                start = self._held_since.pop((name, p), self.now)
                self.timeline.append((name, p[0], p[1], start, self.now))

    def _owned_again(self, p: Partition) -> None:
        self.unowned.discard(p)
        since = self.unowned_since.pop(p, self.now)
        length = self.now - since
        for w in self.open:
            if since >= w.start_ms or w.start_ms - since < length:
                w.max_unowned_ms = max(w.max_unowned_ms, self.now - max(since, w.start_ms))

    def add_partitions(self, parts: list[Partition]) -> None:
        for p in parts:
            if p not in self.holders:
                self.holders[p] = []
                self.unowned.add(p)
                self.unowned_since[p] = self.now

    def consumed(self, p: Partition, position: float) -> None:
        if position > self.consumed_high.get(p, 0.0):
            self.consumed_high[p] = position

    def committed(self, p: Partition, offset: int) -> None:
        """An offset commit record for ``p`` was appended to the group-metadata log."""
        prev = self.last_committed.get(p)
        if prev is not None and offset < prev:
            self.offset_regressions += 1
        self.last_committed[p] = offset

    # ---- members -----------------------------------------------------------------------

    def member_started(self, member: int) -> None:
        self.present.add(member)

    def member_gone(self, member: int, name: str) -> None:
        """``name``'s process closed or died and the scenario never starts it again."""
        self.present.discard(member)
        self.gone_at[name] = self.now

    def stopped(self, name: str, is_stopped: bool) -> None:
        """Whether ``name`` is stopped by a rebalance now (running, unsteady, holding nothing)."""
        since = self._stopped.get(name)
        if is_stopped and since is None:
            self._stopped[name] = self.now
            for w in self.open:
                w.stopped_members.add(name)
        elif not is_stopped and since is not None:
            del self._stopped[name]
            if self.warm:
                self.stop_ms[name] = self.stop_ms.get(name, 0.0) + (self.now - since)

    def generation(self, gen: int, previous: int) -> None:
        if gen > previous:
            if self.warm:
                self.rebalances += gen - previous
            for w in self.open:
                w.rounds += gen - previous
            self.generations.append((self.now, gen))

    # ---- windows -----------------------------------------------------------------------

    def open_window(self, event: int, kind: str, member: int, until_ms: int, target: frozenset,
                    held: dict[str, int], generation: int, timed: bool) -> None:
        """A disruption began; ``timed`` ones (a bounce, a pause...) end with ``disruption_over``."""
        w = Window(event, kind, member, self.now, max(self.now, until_ms), held, target,
                   generation, self.moved, self.unowned_partition_ms, ended=not timed)
        self.windows.append(w)
        self.open.append(w)
        for name in self._stopped:
            w.stopped_members.add(name)

    def disruption_over(self, event: int, member: int) -> None:
        for w in self.open:
            if w.event == event and w.member == member and not w.ended:
                w.ended = True
                w.disrupted_until_ms = self.now
                return

    def converged(self, live: dict[str, None], partition_count: int) -> None:
        """The group is converged now: warm up, and close windows whose disruption ended."""
        if not self.warm:
            self.warm = True
            self.warm_at_ms = self.now
            for name, since in list(self._stopped.items()):
                self._stopped[name] = self.now
        still = []
        for w in self.open:
            if w.ended:
                w.converged_ms = self.now
                # Partitions the hit member ends up with are its own business (a dynamic
                # member that rejoins takes them from others); the rest should never have
                # been without an owner.
                w.unowned_other = {p for p in w.unowned_other if w.member not in self.holders.get(p, ())}
                # Partitions owned for the first time in the window (added ones) had
                # nothing to move from.
                new = sum(1 for t in self.first_owned_ms.values() if t >= w.start_ms)
                w.min_moved = min_moves(w.held_at_start, live, partition_count, new)
            else:
                still.append(w)
        self.open = still

    def close(self, now: int) -> None:
        """End of the run: stop integrals; windows still open stay unconverged."""
        self.tick(now)
        for name in list(self._stopped):
            self.stopped(name, False)
        if self.timeline is not None:
            for (name, p), start in sorted(self._held_since.items()):
                self.timeline.append((name, p[0], p[1], start, now))
            self._held_since.clear()


def min_moves(held: dict[str, int], live: dict[str, None], partitions: int, new: int = 0) -> int:
    """The fewest partitions any balanced assignment over ``live`` must move, starting from
    ``held`` (partitions held per member name); ``new`` partitions never had an owner.

    A balanced assignment gives ``partitions // n`` or one more to each of n members
    (``partitions % n`` get one more). Each member keeps at most its quota of what it holds;
    giving the larger quotas to the members holding most keeps the most.
    """
    n = len(live)
    if n == 0:
        return 0
    base, extra = divmod(partitions, n)
    counts = sorted((held.get(name, 0) for name in live), reverse=True)
    kept = sum(min(c, base + 1 if i < extra else base) for i, c in enumerate(counts))
    return max(0, partitions - kept - new)
