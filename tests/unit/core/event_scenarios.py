"""Scripted group-event scenarios: op lists run on a manual clock, with the events they bring.

A scenario is a list of ops (JSON-able lists such as ``["cjoin", 2]``) over one shard with
groups of every kind: classic ``g`` (dynamic and static members), consumer ``cg``, share
``sg``, a classic group ``mg`` that migrates to the consumer protocol and back, offsets of a
simple group ``o`` and transactional offsets of ``g``. `run` plays the ops and returns each
event as the JSON value the broker writes to ``__kgroup_events``. The fixtures in
``fixtures/group_events/`` hold op lists with the events the coordinator gave for them when
they were recorded: test_group_event_fixtures.py runs the ops again and compares the bytes,
so the event stream a group's history is read from stays what it was.

`random_ops(seed, n)` draws an op list (the fixtures were drawn this way; the ops are kept,
so a fixture does not depend on the draw).
"""

from __future__ import annotations

import random
from typing import Any

from kgroup.assignors.consumer_protocol import encode_assignment, encode_subscription
from kgroup.assignors.spec import Assignment, Subscription
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard, counter_producer_ids
from kgroup.core.host import CoordinatorHost
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest, LeavingMember
from kgroup.core.share_messages import ShareGroupHeartbeatRequest
from kgroup.core.transactions.config import TransactionConfig

from tests.unit.core.txnctx import TxnContext

# Recorded with target assignments at once (KIP-1263's intervals at 0).
CONFIG = GroupConfig(initial_rebalance_delay_ms=0, share_session_timeout_ms=10_000,
                     share_heartbeat_interval_ms=1_000, consumer_assignment_interval_ms=0,
                     share_assignment_interval_ms=0)
SLOTS = 4


class EventScenario(TxnContext):
    """A TxnContext that keeps the encoded events of every Result it applies."""

    def __post_init__(self) -> None:
        self.encoded: list[bytes] = []
        self.members: dict[str, dict[int, str]] = {"g": {}, "cg": {}, "sg": {}, "mg": {}}
        CoordinatorHost.__init__(self, GroupCoordinatorShard(self.config, txn_config=self.txn_config,
                                                             new_producer_id=counter_producer_ids()), self.log)
        self.apply(self.coord.update_topics({"t": ("id-t", 4), "u": ("id-u", 2)}, self.now))
        self.apply(self.coord.load_complete(self.now))

    def apply(self, result) -> None:
        super().apply(result)
        self.encoded += [e.to_json() for e in self.events_of(result)]

    def events_of(self, result) -> list:
        """The group events a Result carries."""
        return list(result.events)


# ---- the ops ---------------------------------------------------------------------------------

def _assignment(*partitions: tuple[str, int]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    return encode_assignment(Assignment(tuple((t, tuple(ps)) for t, ps in by_topic.items())), 0)


SUBSCRIPTION = encode_subscription(Subscription(("t",)), 0)


def _classic(ctx: EventScenario, group: str, op: str, i: int) -> None:
    g = ctx.coord.groups.get(group)
    live = dict(g.members) if g is not None else {}
    ids = ctx.members[group]
    mid = ids.get(i)
    protocols = (("range", SUBSCRIPTION),)
    if op in ("join", "static") and mid not in live:
        instance = f"i-{i}" if op == "static" else None
        ctx.join(group, instance=instance, version=3, protocols=protocols)
        now = ctx.coord.groups.get(group)
        added = [m for m in (now.members if now is not None else {}) if m not in live]
        if added:
            ids[i] = added[-1]
    elif op == "join2" and mid not in live:
        first = ctx.join(group, protocols=protocols)
        if first.done and first.raised is None and first.response.error.name == "MEMBER_ID_REQUIRED":
            ids[i] = first.response.member_id
            ctx.join(group, first.response.member_id, protocols=protocols)
    elif op == "rejoin" and mid in live:
        ctx.join(group, mid, instance=live[mid].group_instance_id, version=3, protocols=protocols)
    elif op == "sync" and g is not None and g.state.value == "CompletingRebalance":
        plan = {m: _assignment(("t", (k + g.generation + i) % 4)) for k, m in enumerate(live)}
        order = [g.leader] + [m for m in live if m != g.leader]
        for m in order:
            ctx.sync(group, m, g.generation, plan if m == g.leader else None,
                     instance=live[m].group_instance_id)
    elif op == "settle" and g is not None:
        # Let the join phase end, then everyone syncs: a rebalance completed.
        ctx.advance(1)
        if g.state.value == "CompletingRebalance":
            _classic(ctx, group, "sync", i)
    elif op == "beat" and g is not None:
        for m, member in live.items():
            ctx.heartbeat(group, m, g.generation, instance=member.group_instance_id)
    elif op == "leave" and mid in live:
        ctx.leave(group, LeavingMember(mid, live[mid].group_instance_id))
    elif op == "leave_static":
        statics = [LeavingMember("", m.group_instance_id) for m in live.values() if m.group_instance_id]
        if statics:
            ctx.leave(group, *statics)


def _consumer(ctx: EventScenario, group: str, op: str, i: int) -> None:
    cgroup = ctx.coord.consumer_groups.get(group)
    ids = ctx.members[group]
    mid = ids.get(i)
    member = cgroup.members.get(mid) if cgroup is not None and mid else None
    static = f"ci-{i}" if i % 2 else None

    def beat(k: int) -> None:
        m = cgroup.members.get(ids.get(k)) if cgroup is not None and ids.get(k) else None
        if m is not None and m.epoch >= 0 and not m.meta.is_classic:
            ctx.cg_heartbeat(m.member_id, m.epoch, group=group, owned=m.current.assigned,
                             instance=m.meta.instance_id)

    if op == "join" and (member is None or member.epoch == -2):
        new = f"{group}-m{i}-{len(ctx.log)}"
        if ctx.cg_heartbeat(new, 0, group=group, topics=["t"], instance=static).raised is None:
            ids[i] = new
    elif op == "beat":
        beat(i)
    elif op == "all":
        for k in sorted(ids):
            beat(k)
    elif op == "stuck" and member is not None and member.epoch >= 0 and not member.meta.is_classic:
        # It heartbeats but never gives back what it must revoke.
        held = dict(member.current.assigned)
        for t, ps in member.current.pending_revocation:
            held[t] = tuple(sorted(set(held.get(t, ())) | set(ps)))
        ctx.cg_heartbeat(mid, member.epoch, group=group, owned=tuple(sorted(held.items())), instance=static)
    elif op == "leave" and member is not None and member.epoch >= 0 and not member.meta.is_classic:
        ctx.cg_heartbeat(mid, -1, group=group, instance=static)
    elif op == "away" and member is not None and static is not None and member.epoch >= 0 \
            and not member.meta.is_classic:
        ctx.cg_heartbeat(mid, -2, group=group, instance=static)


def _share(ctx: EventScenario, op: str, i: int) -> None:
    group = ctx.coord.share_groups.get("sg")
    ids = ctx.members["sg"]
    mid = ids.get(i)
    member = group.members.get(mid) if group is not None and mid else None

    def hb(member_id: str, epoch: int, topics=None):
        return ctx.call(ctx.coord.share_group_heartbeat, ShareGroupHeartbeatRequest(
            "sg", member_id, epoch, subscribed_topic_names=topics))

    if op == "join" and member is None:
        new = f"s{i}-{len(ctx.log)}"
        if hb(new, 0, ("t",) if i % 2 else ("t", "u")).raised is None:
            ids[i] = new
    elif op == "beat" and member is not None:
        hb(mid, member.epoch)
    elif op == "all" and group is not None:
        for m in list(group.members.values()):
            hb(m.member_id, m.epoch)
    elif op == "leave" and member is not None:
        hb(mid, -1)


def _other(ctx: EventScenario, op: str, i: int) -> None:
    if op == "wait":
        ctx.advance(4_000)
    elif op == "long":
        ctx.advance(11_000 + 35_000 * (i % 2))
    elif op == "tick":
        ctx.advance(1)
    elif op == "grow":
        t = ctx.coord.shard.topics["t"][1] + 1
        ctx.apply(ctx.coord.update_topics({"t": ("id-t", t), "u": ("id-u", 2)}, ctx.now))
    elif op == "delete":
        ctx.delete_groups(("g", "cg", "sg", "mg", "o")[i % 5])
    elif op == "rebalance":
        ctx.call(ctx.coord.rebalance_group, GroupControlRequest(("g", "cg", "mg")[i % 3]))
    elif op == "expire":
        group = ("g", "cg", "mg")[i % 3]
        mid = ctx.members[group].get(i)
        if mid is not None:
            ctx.call(ctx.coord.expire_member, ExpireMemberRequest(group, mid))
    elif op == "commit":
        ctx.commit("o", "", -1, {("t", i % 4): len(ctx.log)})
    elif op == "txn":
        pid, epoch = ctx.producer("tx")
        ctx.add_offsets("tx", pid, epoch, "g")
        ctx.txn_commit("g", "tx", pid, epoch, {("t", i % 4): len(ctx.log)})
        ctx.end("tx", pid, epoch, commit=i % 3 != 0)
        ctx.write_markers()


def apply_op(ctx: EventScenario, op: list[Any]) -> None:
    what, name, i = op[0], op[1], op[2]
    if what == "c":
        _classic(ctx, "g", name, i)
    elif what == "m":                        # the migrating group: classic ops, consumer ops
        if name.startswith("cg_"):
            _consumer(ctx, "mg", name[3:], i)
        else:
            _classic(ctx, "mg", name, i)
    elif what == "k":
        _consumer(ctx, "cg", name, i)
    elif what == "s":
        _share(ctx, name, i)
    else:
        _other(ctx, name, i)


def run(ops: list[list[Any]]) -> list[bytes]:
    """Play `ops` on a fresh shard; the encoded events, in order."""
    ctx = EventScenario(config=CONFIG, txn_config=TransactionConfig())
    for op in ops:
        apply_op(ctx, op)
    return ctx.encoded


_VOCABULARY = {
    "c": ["join", "static", "join2", "rejoin", "sync", "settle", "settle", "beat", "leave", "leave_static"],
    "m": ["join", "static", "rejoin", "sync", "settle", "beat", "leave", "cg_join", "cg_beat", "cg_all",
          "cg_leave", "cg_away", "cg_stuck"],
    "k": ["join", "join", "beat", "all", "all", "leave", "away", "stuck"],
    "s": ["join", "beat", "all", "leave"],
    "o": ["wait", "wait", "long", "tick", "tick", "grow", "delete", "rebalance", "expire", "commit", "txn"],
}


def random_ops(seed: int, n: int, kinds: str = "cmkso") -> list[list[Any]]:
    """`n` ops drawn with `seed`, over the groups `kinds` names (c, m, k, s; o: clock and admin)."""
    rng = random.Random(seed)
    ops = []
    for _ in range(n):
        what = rng.choice(kinds)
        ops.append([what, rng.choice(_VOCABULARY[what]), rng.randrange(SLOTS)])
    return ops
