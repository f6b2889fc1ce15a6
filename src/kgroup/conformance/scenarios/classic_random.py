"""Random JoinGroup / SyncGroup / Heartbeat / LeaveGroup / OffsetCommit sequences of a
classic group: the classic protocol's counterpart of the consumer protocol's random
sequences (`python -m kgroup.conformance.explore --kind classic`).

Four members of one group, each on its own connection: m0 and m1 dynamic (a join without an
id is answered MEMBER_ID_REQUIRED and joins again with the id given, as clients do), m2 and
m3 static (group.instance.id). Each step is a join (a new member, or a member rejoining with
its metadata), a rejoin with other protocols or metadata (a protocol only some offer, both
in another order, another subscription), a SyncGroup (the leader hands every member of its
roster the partition numbered like the member, so a follower's answer says whose
assignment it got) or one at the generation before, a heartbeat at the member's generation
or the one before, an offset commit with its generation, a leave, (static members) a
restart: a join with the instance id and no member id, which replaces the member, or the
group described.

How the sequences stay comparable. A JoinGroup waits for the rebalance and a follower's
SyncGroup for the leader, so those are started and not awaited. Each step's answer is
written at once; after each step, every waiting request that must have been answered by
then is awaited and written, in member order: the group's state (DescribeGroups, not
written) says whether a join is still held (PreparingRebalance and some member of the group
not rejoined) or a sync (CompletingRebalance). So what is written, and in what order, never
depends on timing. A step for a member still waiting is written as such.

What is not compared. Kafka keeps a classic group's members in a hash map keyed by their
random ids and, when the leader goes, makes the first of that map the leader: which member
leads next is random on Kafka. A step that would make the leader leave a group of three or
more is skipped (and written as skipped); a leader that leaves one other member hands the
lead to it on both brokers.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import assignment, heartbeat, join, leave, subscription, sync
from kgroup.conformance.target import Target

_MEMBERS = 4
_STATIC = (2, 3)
_TIMEOUT_MS = 30_000        # session and rebalance: no member expires while a sequence runs
_WAIT = 15.0                # a request that must have been answered (the group's state says so)
_SEEN = 0.3                 # a held request that changes nothing visible reaches the group within this
# Error codes that end a membership: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID.
_GONE = (25, 82)
_MEMBER_ID_REQUIRED = 79


def _protocols(kind: str, topic: str, other: str) -> tuple[tuple[str, bytes], ...]:
    """The protocols a member offers: "range" (the group's usual), "both" (roundrobin first,
    range second), "rr" (roundrobin only) or "range2" (range, subscribed to two topics)."""
    one = subscription(topic)
    return {"range": (("range", one),), "both": (("roundrobin", one), ("range", one)),
            "rr": (("roundrobin", one),), "range2": (("range", subscription(topic, other)),)}[kind]


def random_classic_sequence(seed: int, length: int = 30) -> list[tuple]:
    """The operations of sequence `seed`: (kind, member) and, for a join or a rejoin with
    other protocols, the protocols' kind."""
    rng = random.Random(seed)
    kinds = ["join", "join", "join", "sync", "sync", "sync", "beat", "stale", "commit", "leave", "other",
             "restart", "stale-sync", "describe"]
    ops: list[tuple] = []
    for _ in range(length):
        kind, i = rng.choice(kinds), rng.randrange(_MEMBERS)
        if kind == "join":
            ops.append((kind, i, rng.choice(("range", "range", "range", "both", "rr"))))
        elif kind == "other":
            ops.append((kind, i, rng.choice(("both", "rr", "range2"))))
        else:
            ops.append((kind, i))
    return ops


def _joined_or_held(task: asyncio.Future) -> bool:
    """Whether a join's task is still held, or was answered as joined (not refused)."""
    return not task.done() or (task.exception() is None and int(task.result().error_code) == 0)


@dataclass
class _ClassicMember:
    """What one member knows: its id, generation, whether it led the generation it joined
    (and its roster), and the request it is waiting on."""

    raw: Any
    instance: str | None
    member_id: str = ""
    generation: int = -1
    protocol: str | None = None
    protocols: str = "range"
    leader: bool = False
    roster: tuple[str, ...] = ()
    waiting: tuple[str, asyncio.Future, Any, str] | None = None    # (kind, task, request, label)

    @property
    def joined(self) -> bool:
        return self.generation >= 0


class _ClassicSequence:
    def __init__(self, t: Target, seed: int, group: str, control: Any, members: list[_ClassicMember],
                 topic: str, other: str) -> None:
        self.t, self.seed, self.group, self.control = t, seed, group, control
        self.ms, self.topic, self.other = members, topic, other

    def label(self, n: int | str, what: str) -> str:
        return f"sequence {self.seed} step {n} {what}"

    def write(self, label: str, response: Any) -> None:
        """A response into the transcript, whole (member ids, metadata and assignments are
        normalized by the transcript)."""
        self.t.add(label, response)

    async def held(self, m: _ClassicMember) -> bool:
        """Whether `m`'s waiting request is still held by the group, and so not answered."""
        kind, task, _, _ = m.waiting
        if task.done():
            return False
        d = await observe.describe(self.control, self.group)
        if task.done():             # answered while the group was described
            return False
        if kind == "join" and d.group_state == "PreparingRebalance":
            # A static member is known by its instance id: its first join's answer names it.
            waiting = {x.instance or x.member_id for x in self.ms
                       if x.waiting is not None and x.waiting[0] == "join" and _joined_or_held(x.waiting[1])}
            return any((g.group_instance_id or g.member_id) not in waiting for g in d.members)
        return kind == "sync" and d.group_state == "CompletingRebalance"

    async def settle(self) -> None:
        """Write every waiting answer that must have come (in member order): after each
        step, so that when a held request is released never depends on timing (Kafka
        completes even a lone member's join on a timer of its own)."""
        for m in self.ms:
            if m.waiting is not None and not await self.held(m):
                await self.collect(m)

    async def collect(self, m: _ClassicMember) -> None:
        """Write `m`'s waiting request's answer (it must come) and take it in."""
        kind, task, _, label = m.waiting
        m.waiting = None
        response = await asyncio.wait_for(task, _WAIT)
        self.write(f"{label} answered", response)
        self.take(m, kind, response)

    def take(self, m: _ClassicMember, kind: str, r: Any) -> None:
        """What `m` learns from an answer to its `kind` request."""
        code = int(r.error_code)
        if kind == "join":
            if code == 0:
                m.member_id, m.generation = r.member_id, int(r.generation_id)
                m.protocol = r.protocol_name
                m.leader = r.leader == r.member_id
                m.roster = tuple(x.member_id for x in r.members)
            elif code == _MEMBER_ID_REQUIRED:
                m.member_id = r.member_id
        if code in _GONE:
            self.forget(m)

    @staticmethod
    def forget(m: _ClassicMember) -> None:
        m.member_id, m.generation, m.leader, m.roster, m.protocol = "", -1, False, (), None

    async def start(self, m: _ClassicMember, kind: str, req: Any, label: str) -> None:
        """Send a request that may wait, and go on once the group has seen it: its answer came,
        or the group's state or members changed (the next request, on another connection,
        must not overtake it); a request the group holds without a visible change (a
        follower's sync, a rejoin while others are still awaited) is given `_SEEN` seconds."""
        before = self.view(await observe.describe(self.control, self.group))
        task = m.raw.start(req, timeout=_TIMEOUT_MS / 1000)
        m.waiting = (kind, task, req, label)
        deadline = asyncio.get_running_loop().time() + _SEEN
        while not task.done() and asyncio.get_running_loop().time() < deadline:
            if self.view(await observe.describe(self.control, self.group)) != before:
                return
            await asyncio.sleep(0.02)

    @staticmethod
    def view(d: Any) -> tuple:
        return d.group_state, tuple(sorted(g.member_id for g in d.members))

    def join_request(self, m: _ClassicMember, member_id: str) -> Any:
        return join(9, self.group, member_id, instance=m.instance, session_ms=_TIMEOUT_MS,
                    rebalance_ms=_TIMEOUT_MS, protocols=_protocols(m.protocols, self.topic, self.other))

    async def join(self, n: int, i: int, m: _ClassicMember, member_id: str) -> None:
        """A JoinGroup: a new dynamic member's first one is answered at once (with the id to
        join with), then it joins again; every other one may wait for the rebalance."""
        label = self.label(n, f"join m{i}")
        if not member_id and m.instance is None:
            r = await self.t.ask(m.raw, label, self.join_request(m, ""))
            self.take(m, "join", r)
            if int(r.error_code) != _MEMBER_ID_REQUIRED:
                return
            member_id, label = r.member_id, self.label(n, f"join again m{i}")
        await self.start(m, "join", self.join_request(m, member_id), label)

    def others_in_group(self, d: Any, m: _ClassicMember) -> int:
        return sum(1 for g in d.members if g.member_id != m.member_id)

    async def step(self, n: int, op: tuple) -> None:
        kind, i = op[0], op[1]
        m = self.ms[i]
        if kind == "describe":
            self.t.add(self.label(n, "describe"), await observe.describe(self.control, self.group))
            return
        if m.waiting is not None:
            self.t.add(self.label(n, f"{kind} m{i}"), f"m{i} is still waiting ({m.waiting[0]})")
            return
        if kind in ("join", "other"):
            if kind == "join" and not m.member_id:
                m.protocols = op[2]
            elif kind == "other":
                if not m.member_id:
                    return
                m.protocols = op[2]
            await self.join(n, i, m, m.member_id)
        elif kind == "restart":
            if m.instance is None or not m.member_id:
                return
            await self.join(n, i, m, "")
        elif not m.joined:
            return
        elif kind == "sync":
            roster = {x.member_id: j for j, x in enumerate(self.ms) if x.member_id}
            given = {mid: assignment(self.topic, roster.get(mid, 9)) for mid in m.roster} if m.leader else {}
            req = sync(5, self.group, m.generation, m.member_id, instance=m.instance, assignments=given,
                       protocol_name=m.protocol)
            await self.start(m, "sync", req, self.label(n, f"sync m{i}"))
        elif kind == "stale-sync":
            r = await self.t.ask(m.raw, self.label(n, f"stale-sync m{i}"), sync(
                5, self.group, m.generation - 1, m.member_id, instance=m.instance, protocol_name=m.protocol))
            self.take(m, kind, r)
        elif kind in ("beat", "stale"):
            generation = m.generation if kind == "beat" else m.generation - 1
            r = await self.t.ask(m.raw, self.label(n, f"{kind} m{i}"),
                                 heartbeat(4, self.group, generation, m.member_id, m.instance))
            self.take(m, kind, r)
        elif kind == "commit":
            r = await self.t.ask(m.raw, self.label(n, f"commit m{i}"), request(
                "OffsetCommit", 9, group_id=self.group, generation_id_or_member_epoch=m.generation,
                member_id=m.member_id, group_instance_id=m.instance, topics=[{"name": self.topic, "partitions": [
                    {"partition_index": i % 2, "committed_offset": n, "committed_leader_epoch": -1,
                     "committed_metadata": ""}]}]))
            codes = {int(p.error_code) for tp in r.topics for p in tp.partitions}
            if codes & set(_GONE):
                self.forget(m)
        else:                               # leave
            d = await observe.describe(self.control, self.group)
            if m.leader and self.others_in_group(d, m) >= 2:
                self.t.add(self.label(n, f"leave m{i}"), "skipped: the next leader would be Kafka's hash order")
                return
            r = await self.t.ask(m.raw, self.label(n, f"leave m{i}"), leave(
                5, self.group, members=[{"member_id": m.member_id, "group_instance_id": m.instance, "reason": None}]))
            if int(r.error_code) == 0:
                self.forget(m)

    async def finish(self) -> None:
        """Describe the group, then every member leaves and every waiting request is
        answered (all at once, so that no leader leaves two or more members behind, whose
        next leader would be Kafka's hash order). Members waiting on a sync leave last:
        Kafka 4.4 never answers the held
        SyncGroup of a member that leaves (kgroup answers it UNKNOWN_MEMBER_ID; a client
        cannot send both on its one connection), so the others leave first, which starts a
        rebalance that answers those syncs."""
        self.t.add(self.label("end", "describe"), await observe.describe(self.control, self.group))
        syncing = [m for m in self.ms if m.waiting is not None and m.waiting[0] == "sync"]
        for label, leaving in (("everyone leaves", [m for m in self.ms if m not in syncing]),
                               ("the members that were syncing leave", syncing)):
            # A static member is named by its instance id too: one whose first join is held
            # has no member id yet, and leaves by the instance id alone.
            present = [m for m in leaving if m.member_id or m.instance]
            if present:
                await self.t.ask(self.control, self.label("end", label), leave(5, self.group, members=[
                    {"member_id": m.member_id, "group_instance_id": m.instance, "reason": None} for m in present]))
            await self.settle()
        for m in self.ms:
            if m.waiting is not None:
                await self.collect(m)
        self.t.add(self.label("end", "describe after"), await observe.describe(self.control, self.group))


async def classic_sequences_ready(t: Target) -> tuple[Any, str, str]:
    """A raw connection with the topics T (two partitions) and U created; their names."""
    group = t.names.group("c0")
    raw = await t.raw()
    await observe.coordinator(raw, group)
    topic, other = t.names.topic(), t.names.topic("u")
    await observe.create_topic(raw, topic, 2)
    await observe.create_topic(raw, other, 1)
    return raw, topic, other


async def play_random_classic_sequence(t: Target, control: Any, seed: int, topic: str, other: str) -> None:
    """Play sequence `seed` on its own classic group, every answer into the transcript."""
    group = t.names.group(f"cl{seed}")
    await observe.coordinator(control, group)
    members = [_ClassicMember(await t.raw(f"cl{seed}-m{i}"), f"cl{seed}-i{i}" if i in _STATIC else None)
               for i in range(_MEMBERS)]
    sequence = _ClassicSequence(t, seed, group, control, members, topic, other)
    for n, op in enumerate(random_classic_sequence(seed)):
        await sequence.step(n, op)
        await sequence.settle()
    await sequence.finish()


# Seeds the differential suite plays (`explore --kind classic`).
RANDOM_CLASSIC_SEQUENCES = tuple(range(8))


@scenario("classic", "random sequences of four classic members",
          rule="seeded random sequences of JoinGroup (new, rejoining, with other protocols, a static member's "
               "restart), SyncGroup, heartbeats at the member's generation and the one before, offset commits "
               "and leaves get the same answers, the held ones released by the same steps, and leave the same "
               "group", timeout=150.0)
async def classic_random_sequences(t: Target) -> None:
    control, topic, other = await classic_sequences_ready(t)
    for seed in RANDOM_CLASSIC_SEQUENCES:
        await play_random_classic_sequence(t, control, seed, topic, other)
