"""The server assignor's inputs kept between assignments (`ConsumerGroup.assignor_inputs`),
and what the group's members subscribe to (`ModernGroup.subscription_inputs`).

At every join the coordinator hands the assignor one MemberSpec per member. It keeps them
from one assignment to the next and rebuilds only those whose metadata or target changed,
or all of them when what topic ids are worked out from changed (the broker's topics, the
group's subscribed topics, its unresolved regexes). These tests hold it to that: a
coordinator that forgets what it kept before every request writes exactly the same records
and answers, over random joins, heartbeats, subscription changes, regexes, static members,
leaves and topic changes (deleted, re-created under a new id, grown).
"""

from __future__ import annotations

import random

import pytest

from kgroup.core.config import GroupConfig

from tests.unit.core.groupctx import GroupContext

CONFIG = GroupConfig(consumer_session_timeout_ms=45_000, consumer_min_session_timeout_ms=45_000)
SUBSCRIPTIONS = [dict(topics=("t",)), dict(topics=("t",)), dict(topics=("t", "u")), dict(topics=("u",)),
                 dict(topics=(), regex="t|u"), dict(topics=(), regex="v.*")]


def forget(ctx: GroupContext) -> None:
    for group in ctx.coord.consumer_groups.values():
        group.assignor_inputs = None
        group.subscription_inputs = None


def set_topics(ctx: GroupContext, topics: dict[str, tuple[str, int]]) -> None:
    ctx.apply(ctx.coord.update_topics(dict(topics), ctx.now))


def answer(pending) -> tuple:
    r = pending.response
    return (pending.raised, None if r is None else (r.error, r.member_epoch, r.assignment))


@pytest.mark.parametrize("seed", range(6))
def test_kept_assignor_inputs_write_what_fresh_ones_write(seed):
    rnd = random.Random(seed)
    kept, fresh = GroupContext(CONFIG), GroupContext(CONFIG)
    topics = {"t": ("id-t", 12), "u": ("id-u", 5)}
    for ctx in (kept, fresh):
        set_topics(ctx, topics)
    epochs: dict[str, int] = {}
    owned: dict[str, tuple] = {}
    reuses = 0
    for step in range(150):
        op = rnd.random()
        if op < 0.08:                       # the broker's topics change
            change = rnd.choice(["grow", "drop-u", "renew-u", "add-v"])
            if change == "grow":
                tid, n = topics["t"]
                topics["t"] = (tid, n + rnd.randint(1, 4))
            elif change == "drop-u":
                topics.pop("u", None)
            elif change == "renew-u":
                topics["u"] = (f"id-u-{step}", rnd.randint(1, 6))
            else:
                topics["v1"] = ("id-v1", 3)
            for ctx in (kept, fresh):
                set_topics(ctx, topics)
            continue
        if op < 0.15:
            ms = rnd.choice([0, 1, 500, 5_000])
            kept.advance(ms)
            forget(fresh)
            fresh.advance(ms)
            continue
        member = f"m{rnd.randrange(12)}"
        instance = f"i{member[1:]}" if member in ("m0", "m1", "m2") else None
        if member not in epochs or op < 0.30:
            sub = rnd.choice(SUBSCRIPTIONS)
            kwargs = dict(topics=sub["topics"], regex=sub.get("regex"), instance=instance,
                          assignor=rnd.choice([None, None, "uniform", "range"]))
            epoch = 0 if member not in epochs or rnd.random() < 0.5 else epochs[member]
        elif op < 0.38:
            epoch, kwargs = rnd.choice([-1, -2]) if instance else -1, dict(instance=instance)
        else:
            epoch, kwargs = epochs[member], dict(owned=owned.get(member, ()), instance=instance)
        before = kept.coord.consumer_groups.get("cg")
        before_specs = dict(before.assignor_inputs.specs) if before is not None and before.assignor_inputs else {}
        a = kept.cg_heartbeat(member, epoch, **kwargs)
        forget(fresh)
        b = fresh.cg_heartbeat(member, epoch, **kwargs)
        assert answer(a) == answer(b), (seed, step)
        assert kept.log == fresh.log, (seed, step)
        after = kept.coord.consumer_groups.get("cg")
        if after is not None and after.assignor_inputs is not None:
            reuses += sum(1 for mid, entry in after.assignor_inputs.specs.items()
                          if before_specs.get(mid, (None, None, None))[2] is entry[2])
        r = a.response
        if r is None or r.error:
            if epoch in (-1, -2) or (r is not None and r.error):
                epochs.pop(member, None)
                owned.pop(member, None)
            continue
        if r.member_epoch < 0:
            epochs.pop(member, None)
            owned.pop(member, None)
        else:
            epochs[member] = r.member_epoch
            if r.assignment is not None:
                owned[member] = r.assignment
    # The scenario is one where kept inputs were used, not only thrown away.
    assert reuses > 50, reuses


def test_a_join_rebuilds_only_the_joining_members_spec():
    ctx = GroupContext(CONFIG)
    ctx.set_topics(t=8, u=2)
    # Two subscriptions: every join runs the assignor over everyone (one subscription would
    # be followed join by join, without specs: the next test).
    for i in range(4):
        assert not ctx.cg_heartbeat(f"m{i}", 0, topics=("t",) if i % 2 else ("t", "u")).error
    group = ctx.cgroup()
    specs = {mid: entry[2] for mid, entry in group.assignor_inputs.specs.items()}
    assert set(specs) == {"m0", "m1", "m2", "m3"}
    targets_before = dict(group.target)
    assert not ctx.cg_heartbeat("m4", 0, topics=("t",)).error
    now = {mid: entry[2] for mid, entry in group.assignor_inputs.specs.items()}
    # Members whose target did not change since the last assignment keep their specs (the
    # assignor's input: the target each held before this join); the joiner gets a new one.
    moved = {mid for mid in specs if now[mid] is not specs[mid]}
    assert "m4" in now and len(moved) < 4
    assert all(now[mid].assignment == dict(targets_before.get(mid, ())) for mid in now if mid != "m4")
    # A change of the broker's topics drops them all.
    ctx.set_topics(t=9)
    assert not ctx.cg_heartbeat("m0", group.members["m0"].current.member_epoch).error
    assert all(entry[2] is not specs.get(mid) for mid, entry in group.assignor_inputs.specs.items())
    # A member that leaves is forgotten at the next assignment.
    assert not ctx.cg_heartbeat("m1", -1).error
    assert not ctx.cg_heartbeat("m0", group.members["m0"].current.member_epoch).error
    assert "m1" not in group.assignor_inputs.specs


def test_a_join_storm_on_one_subscription_is_followed_join_by_join(monkeypatch):
    """Members joining one at a time with the group's subscription: once the group is large
    enough that a join moves at most one partition per member's share, the coordinator works
    each join out from the last target (`JoinFollower`) instead of running the assignor over
    every member, and writes exactly what the assignor over everyone would; a leave, a new
    subscription or a change of topics goes back to the assignor over everyone."""
    from kgroup.assignors.uniform import UniformAssignor

    calls = []
    full = UniformAssignor.assign
    monkeypatch.setattr(UniformAssignor, "assign", lambda self, spec, topics: calls.append(1) or full(self, spec, topics))
    kept, fresh = GroupContext(CONFIG), GroupContext(CONFIG)
    for ctx in (kept, fresh):
        ctx.set_topics(t=100, u=7)
    rnd = random.Random(7)
    steps = [("join", f"m{rnd.randrange(10**6):06d}") for _ in range(60)]
    steps[30:30] = [("leave", None), ("join", "zz-last"), ("regex", "m-regex"), ("topics", None)]
    steps += [("join", f"n{i}") for i in range(10)]
    followed = 0
    for op, member in steps:
        before = len(calls)
        if op == "topics":
            for ctx in (kept, fresh):
                ctx.set_topics(t=101, u=7)
            member = next(iter(kept.cgroup().members))
            args = (member, kept.cgroup().members[member].current.member_epoch)
            kwargs = {}
        elif op == "leave":
            member = sorted(kept.cgroup().members)[5]
            args, kwargs = (member, -1), {}
        elif op == "regex":
            args, kwargs = (member, 0), dict(topics=(), regex="t")
        else:
            args, kwargs = (member, 0), dict(topics=("t",))
        a = kept.cg_heartbeat(*args, **kwargs)
        followed += op == "join" and len(calls) == before
        forget(fresh)
        b = fresh.cg_heartbeat(*args, **kwargs)
        if op == "regex":
            for ctx in (kept, fresh):
                ctx.advance(0)                  # its resolution: then it subscribes like the rest
        assert answer(a) == answer(b), (op, member)
        assert kept.log == fresh.log, (op, member)
    # 100 partitions: from about 10 members on a join takes at most one of each share.
    assert followed >= 50, followed
    assert len(kept.cgroup().members) == 71      # 72 joined, one left
