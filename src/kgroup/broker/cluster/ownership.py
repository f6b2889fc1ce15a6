"""Ownership: which units this node serves, kept right by one poll loop.

How this works: every `poll_ms` the loop renews this node's lease (liveness.py), looks at
its peers and at topics.json, checks that every unit it holds is still its own, and then
decides per unit (storage/data_dir.py) from the epoch table and the desired owner
(placement.py) — on a single node only per unit it does not hold yet, as it hands nothing over:

- a unit it holds whose desired owner is another node that has been live for
  `HAND_BACK_DELAY_MS` is handed over (`hand_over`: the holder stops accepting, lets
  in-flight writes finish and their answers go out, fails parked requests with
  NOT_COORDINATOR, closes the logs and marks the unit released);
- a unit nobody holds — never owned, released, or owned by a node that is down — is taken
  by its desired owner (`take`: win the next ownership epoch, seal and open the logs, load
  the coordinator shard), answering COORDINATOR_LOAD_IN_PROGRESS meanwhile;
- a unit this node's earlier run held (killed and restarted before anyone took it) is
  resumed at the same epoch if it is desired here, and released otherwise.

The desired owner is the placement's (placement.py), unless the control API moved the unit
to a node (`move`, kept in the data dir's moves.json, storage/control_files.py): then it is
that node while it is live. A move is carried out by the same rounds as a hand-back — the
holder sees that another live node is desired and hands the unit over cleanly, the node it
was moved to takes it — so there is one way a unit changes hands between live nodes.

A unit whose fence no longer holds (a peer took it: this node was stopped past the node
timeout) is dropped at once (`losses` counts those, so the server closes connections that
were answered across such a loss). So is everything when this node learns at a renewal that
it was expelled; it then starts a new incarnation with no units and gets its preferred ones
back by hand-over.

Startup: for `STARTUP_GRACE_MS` a new node takes only the units it prefers, and units of
peers it has seen go down, so nodes of a cluster that start together do not grab each
other's units before the others are up; and for `ORPHAN_WAIT_MS` it does not resume units
its earlier run held (a peer that saw it down may be claiming them). The same holds after
an expulsion.

Two nodes may both believe they own a unit for a moment (a takeover that raced a restart):
only the latest epoch can write, and every request checks the fence before it is answered
(a memory read), so the one that lost answers NOT_COORDINATOR / NOT_LEADER_OR_FOLLOWER and
drops the unit at its next round.

Unit states (`UnitState`, one transition table): LOADING → SERVING → RELEASING, each of
them → (gone) when lost; RELEASING → (gone) when handed over.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from enum import Enum
from typing import Awaitable, Callable

from kgroup.broker.cluster.liveness import Liveness
from kgroup.broker.cluster.placement import desired_owner, preferred_owner
from kgroup.storage import DataDir, StorageError
from kgroup.storage.control_files import Moves
from kgroup.storage.epoch_table import DELETED

log = logging.getLogger("kgroup.broker.cluster")

HAND_BACK_DELAY_MS = 1000
STARTUP_GRACE_MS = 3000
# How long a node that (re)starts leaves the units of its earlier run alone (see _decide).
ORPHAN_WAIT_MS = 1000


class UnitState(Enum):
    LOADING = "loading"
    SERVING = "serving"
    RELEASING = "releasing"


# Allowed moves; None is "not held by this node".
TRANSITIONS: dict[UnitState | None, frozenset[UnitState | None]] = {
    None: frozenset({UnitState.LOADING}),
    UnitState.LOADING: frozenset({UnitState.SERVING, None}),
    UnitState.SERVING: frozenset({UnitState.RELEASING, None}),
    UnitState.RELEASING: frozenset({None}),
}


@dataclass
class UnitHooks:
    """What the server does when a unit arrives or leaves (see server.py)."""

    # A unit was opened in storage at an epoch: load what serves it (a coordinator shard),
    # given the node that held it before (None: nobody) and the monotonic time the move
    # started; returns a short description of what was loaded, for the log.
    opened: Callable[[int, int, int | None, float], str]
    # Stop serving a unit and let in-flight work finish, before its logs are closed; the
    # argument is the node expected to take it (None: none known).
    releasing: Callable[[int, int | None], Awaitable[None]]
    # Drop a unit at once (it is another node's now); nothing may be written for it.
    lost: Callable[[int], None]
    # topics.json changed (another node created, grew or deleted a topic).
    topics_changed: Callable[[], None]
    # A unit could not be loaded (corrupt data): the node cannot serve it; stop loudly.
    fatal: Callable[[], None]


class Ownership:
    """The units this node holds, and the loop that decides what it should hold."""

    def __init__(self, data: DataDir, liveness: Liveness, nodes: list[int], me: int,
                 hooks: UnitHooks, poll_ms: int) -> None:
        self.data = data
        self.liveness = liveness
        self.nodes = sorted(nodes)
        self.me = me
        self.hooks = hooks
        self.poll_ms = poll_ms
        self.units: dict[int, UnitState] = {}
        self.epochs: dict[int, int] = {}       # the epoch this node won, per held unit
        self.losses = 0
        self.started_ms = liveness.mono()
        self._work: asyncio.Queue[tuple[str, int, int | None]] | None = None
        self._queued: set[int] = set()
        self._tasks: list[asyncio.Task] = []
        self._stopping = False
        self._first_round = asyncio.Event()
        self._topics_seen = data.topics_version
        self.moves = Moves(data.path)

    # ---- state ----------------------------------------------------------------------------

    def _move(self, slot: int, to: UnitState | None) -> None:
        current = self.units.get(slot)
        if to not in TRANSITIONS[current]:
            raise RuntimeError(f"unit {slot}: illegal move {current} -> {to}")
        if to is None:
            self.units.pop(slot, None)
            self.epochs.pop(slot, None)
        else:
            self.units[slot] = to

    def state(self, slot: int) -> UnitState | None:
        return self.units.get(slot)

    def owner(self, slot: int) -> int | None:
        """The node clients should talk to for `slot` now, or None (nobody: being moved,
        or its owner is down)."""
        epoch, index = self.data.table.current(slot)
        if epoch == 0 or epoch >= DELETED:
            return None
        node = self.nodes[index]
        if node == self.me:
            state = self.units.get(slot)
            return self.me if state is not None and state is not UnitState.RELEASING and self.holds(slot) else None
        if self.liveness.down(node) or self.data.table.released(slot, index) == epoch:
            return None
        return node

    # ---- the loop -------------------------------------------------------------------------

    async def start(self) -> None:
        """Renew the lease, run a first round, and keep polling in the background."""
        self._work = asyncio.Queue()
        self.liveness.renew()
        self._tasks.append(asyncio.create_task(self._worker(), name="kgroup-ownership-moves"))
        self.tick()
        self._tasks.append(asyncio.create_task(self._poll(), name="kgroup-ownership-poll"))

    async def first_round_done(self) -> None:
        """Wait until the units taken in the first round are served (or given up)."""
        await self._first_round.wait()

    @property
    def first_round_finished(self) -> bool:
        return self._first_round.is_set()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_ms / 1000)
            try:
                self.tick()
            except Exception:
                log.exception("ownership round failed; trying again")

    def tick(self) -> None:
        """One round: lease, peers, topics, my units, decisions (see the module docstring)."""
        if not self.liveness.renew():
            self._expelled()
        self.liveness.poll()
        try:
            self.data.refresh_topics()
        except StorageError as exc:
            log.error("cannot read topics.json: %s", exc)
        if self.data.topics_version != self._topics_seen:
            # Changed by another node, or seen first by a request handler here.
            self._topics_seen = self.data.topics_version
            self.hooks.topics_changed()
        self.check_fences()
        if self._stopping:
            return
        live = self.liveness.live()
        grace = self.liveness.mono() - self.started_ms < STARTUP_GRACE_MS
        moves = self.moves.current()  # once a round, not once a unit (a stat each)
        units = self.data.units()
        if len(self.nodes) == 1:
            # A single node hands nothing over, so a unit it holds (in any state) needs no
            # decision: only the ones it does not hold yet. With thousands of partitions the
            # full pass, five times a second, cost a tenth of the broker's CPU.
            held = self.units
            todo = sorted((slot, index) for slot, index in units.items() if slot not in held)
        else:
            todo = sorted(units.items())
        for slot, index in todo:
            if slot not in self._queued:
                self._decide(slot, index, live, grace, moves)
        if self._work.empty() and not self._queued:
            self._first_round.set()

    def _decide(self, slot: int, index: int, live: set[int], grace: bool, moves: dict[int, int]) -> None:
        desired = self.desired(slot, index, live, moves)
        state = self.units.get(slot)
        if state is not None:
            if (state is UnitState.SERVING and desired is not None and desired != self.me
                    and self.liveness.live_for(desired) >= HAND_BACK_DELAY_MS):
                self._enqueue("hand_over", slot, desired)
            return
        table = self.data.table
        epoch, index_of_owner = table.current(slot)
        if epoch >= DELETED:
            return
        owner = self.nodes[index_of_owner] if epoch > 0 else None
        released = owner is not None and table.released(slot, index_of_owner) == epoch
        if owner == self.me and not released:
            # Left by an earlier run of this node (or by this one before it was expelled):
            # nobody else writes it. For a moment after a start a peer that saw this node
            # down may be claiming it (a peer claims right after the round that decided
            # it); resuming it then would only be fenced a moment later.
            if desired != self.me:
                table.release(slot, self.nodes.index(self.me), epoch)
            elif len(self.nodes) == 1 or self.liveness.mono() - self.started_ms >= ORPHAN_WAIT_MS:
                self._enqueue("take", slot)
            return
        if desired != self.me:
            return
        free = owner is None or released or self.liveness.down(owner)
        if not free:
            return
        if grace and preferred_owner(index, self.nodes) != self.me and (
                owner is None or owner not in self.liveness.seen_live):
            return  # its node may just be starting
        self._enqueue("take", slot)

    def desired(self, slot: int, index: int, live: set[int], moves: dict[int, int] | None = None) -> int | None:
        """Where unit `slot` (placement index `index`) should live, given the live nodes:
        where the control API moved it while that node is live (and is not this node on
        its way out), else where the placement puts it. `moves`: the round's, if read."""
        moved = (self.moves.current() if moves is None else moves).get(slot)
        if moved is not None and moved in live and not (moved == self.me and self._stopping):
            return moved
        return desired_owner(index, self.nodes, live)

    def move(self, slot: int, node: int) -> None:
        """Move unit `slot` to `node` (one of the cluster's) from now on: every node's next
        round sees it; the holder hands the unit over and `node` takes it. Moving a unit to
        its preferred node ends the move (it follows the placement again)."""
        self.moves.set(slot, None if node == preferred_owner(self.data.units()[slot], self.nodes) else node)
        self.tick()

    def _enqueue(self, kind: str, slot: int, to: int | None = None) -> None:
        self._queued.add(slot)
        self._work.put_nowait((kind, slot, to))

    async def _worker(self) -> None:
        while True:
            batch = [await self._work.get()]
            while not self._work.empty():
                batch.append(self._work.get_nowait())
            takes = [slot for kind, slot, _ in batch if kind == "take"]
            try:
                if takes:
                    await self._take_all(takes)
                for kind, slot, to in batch:
                    if kind == "hand_over":
                        await self.hand_over(slot, to)
            except Exception:
                log.exception("moving units %s failed", [slot for _, slot, _ in batch])
            finally:
                for _, slot, _ in batch:
                    self._queued.discard(slot)
            if self._work.empty():
                self._first_round.set()

    # ---- moves ----------------------------------------------------------------------------

    async def _take_all(self, slots: list[int]) -> None:
        units = self.data.units()
        slots = [s for s in slots if s not in self.units and s in units and not self._stopping]
        previous = {slot: self.data.table.current(slot) for slot in slots}
        won = self.data.acquire_many(slots)   # the others went to another node first
        for slot, epoch in won.items():
            self._move(slot, UnitState.LOADING)
            self.epochs[slot] = epoch
        for slot, epoch in won.items():
            await self._load(slot, epoch, previous[slot])
            await asyncio.sleep(0)  # requests and the poll loop run between units

    async def _load(self, slot: int, epoch: int, previous: tuple[int, int]) -> None:
        started = time.monotonic()
        prev_epoch, prev_index = previous
        previous_node = self.nodes[prev_index] if prev_epoch > 0 else None
        try:
            self.data.open_unit(slot, epoch)
            what = self.hooks.opened(slot, epoch, previous_node, started)
        except Exception:
            if self.units.get(slot) is not UnitState.LOADING:
                return  # lost while loading (this node was expelled): not the data's fault
            log.critical("cannot load %s at epoch %d; stopping", self.data.describe_unit(slot), epoch,
                         exc_info=True)
            if self.units.get(slot) is UnitState.LOADING:
                self._move(slot, None)
            self.data.close_unit(slot, release=True)
            self.hooks.fatal()
            return
        if self.units.get(slot) is not UnitState.LOADING:
            return  # lost while loading
        self._move(slot, UnitState.SERVING)
        took_over = 0 < prev_epoch < epoch
        source = (f"from node {self.nodes[prev_index]} at epoch {prev_epoch}" if took_over
                  else "resumed" if prev_epoch == epoch else "new")
        # A takeover or hand-back is news; a start resuming its own units is not.
        log.log(logging.INFO if took_over else logging.DEBUG, "took %s at epoch %d (%s): %s in %.3f s",
                self.data.describe_unit(slot), epoch, source, what, time.monotonic() - started)

    async def hand_over(self, slot: int, to: int | None = None) -> None:
        """Hand unit `slot` over cleanly: stop accepting, finish in-flight writes, release.
        The unit's desired owner (placement.py) then takes it; `to` is who that should be,
        as the caller sees it (recorded in the coordinator_unloaded events). A control that
        moves a unit to a node of its choosing needs a placement that names that node, then
        this same call."""
        if self.units.get(slot) is not UnitState.SERVING:
            return
        started = time.monotonic()
        self._move(slot, UnitState.RELEASING)
        self.data.stop_serving(slot)
        try:
            await self.hooks.releasing(slot, to)
        finally:
            if self.units.get(slot) is UnitState.RELEASING:
                fenced = not self.holds(slot)
                self._move(slot, None)
                self.data.close_unit(slot, release=not fenced)
                log.info("handed %s over in %.3f s", self.data.describe_unit(slot), time.monotonic() - started)

    def holds(self, slot: int) -> bool:
        """Whether the epoch this node won for `slot` is still the unit's latest."""
        epoch = self.epochs.get(slot)
        return epoch is not None and self.data.table.current(slot)[0] == epoch

    def check_fences(self) -> None:
        """Drop every held unit another node has taken (this node was paused), and every
        unit of a deleted topic."""
        for slot in list(self.units):
            if not self.holds(slot):
                if self.data.table.current(slot)[0] >= DELETED:
                    self._lose(slot, None)
                else:
                    self._lose(slot, "another node took it over")

    def _lose(self, slot: int, why: str | None) -> None:
        """Drop a unit at once; `why` None: its topic was deleted (not a loss)."""
        if why is not None:
            log.warning("lost %s: %s", self.data.describe_unit(slot), why)
            self.losses += 1
        self._move(slot, None)
        try:
            self.hooks.lost(slot)
        finally:
            self.data.close_unit(slot)

    def _expelled(self) -> None:
        log.warning("this node was expelled (its lease went stale: stopped or hung for over %d ms); "
                    "dropping %d units", self.liveness.node_timeout_ms, len(self.units))
        for slot in list(self.units):
            self._lose(slot, "this node was expelled")
        if not self.units:
            self.losses += 1
        self.liveness.rejoin()
        # Back as a new incarnation: its former units are its peers' to take now; it gets
        # its preferred ones back by hand-over once it has been live a while.
        self.started_ms = self.liveness.mono()

    def keepalive(self) -> None:
        """Renew the lease if a poll is due (long synchronous work, such as loading a big
        group-metadata partition, calls this so peers do not take it for a hung node)."""
        last = self.liveness.last_good_ms
        if last is None or self.liveness.mono() - last >= self.poll_ms:
            if not self.liveness.renew():
                self._expelled()

    # ---- the request path -------------------------------------------------------------------

    def gate(self) -> None:
        """Before answering for any unit: if this node's last good renewal is old (it was
        paused), renew now and drop whatever it lost. A memory read when all is well."""
        if not self.liveness.fresh():
            if not self.liveness.renew():
                self._expelled()
            self.check_fences()

    # ---- shutdown -------------------------------------------------------------------------

    async def leave(self, timeout_s: float) -> None:
        """SIGTERM: stop taking units, tell peers this node is leaving, and hand every unit
        over while another node is live to take it (bounded by `timeout_s`)."""
        self._stopping = True
        others = {n for n in self.liveness.live() if n != self.me}
        if not others or not self.units:
            return
        self.liveness.leaving = True
        self.liveness.renew()
        log.info("leaving: handing %d units over to nodes %s", len(self.units), sorted(others))
        try:
            async with asyncio.timeout(timeout_s):
                while self._queued:  # a move in progress finishes first
                    await asyncio.sleep(0.01)
                live = self.liveness.live()
                for slot in sorted(self.units):
                    await self.hand_over(slot, self.desired(slot, self.data.units().get(slot, 0), live))
        except TimeoutError:
            log.warning("leaving: %d units not handed over within %.0f s", len(self.units), timeout_s)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
