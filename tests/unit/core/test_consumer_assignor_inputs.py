"""The server assignor's inputs kept between assignments (`ConsumerGroup.assignor_inputs`).

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
    ctx.set_topics(t=8)
    for i in range(4):
        assert not ctx.cg_heartbeat(f"m{i}", 0, topics=("t",)).error
    group = ctx.cgroup()
    specs = {mid: entry[2] for mid, entry in group.assignor_inputs.specs.items()}
    assert set(specs) == {"m0", "m1", "m2", "m3"}
    assert not ctx.cg_heartbeat("m4", 0, topics=("t",)).error
    now = {mid: entry[2] for mid, entry in group.assignor_inputs.specs.items()}
    # The three members whose target the fifth one's join did not change keep their specs;
    # the joiner and any member that gave up a partition get new ones.
    moved = {mid for mid in specs if now[mid] is not specs[mid]}
    assert "m4" in now and len(moved) < 4
    assert all(now[mid].assignment == dict(group.target.get(mid, ())) or mid in moved or mid == "m4"
               for mid in now)
    # A change of the broker's topics drops them all.
    ctx.set_topics(t=9)
    assert not ctx.cg_heartbeat("m0", group.members["m0"].current.member_epoch).error
    assert all(entry[2] is not specs.get(mid) for mid, entry in group.assignor_inputs.specs.items())
    # A member that leaves is forgotten at the next assignment.
    assert not ctx.cg_heartbeat("m1", -1).error
    assert not ctx.cg_heartbeat("m0", group.members["m0"].current.member_epoch).error
    assert "m1" not in group.assignor_inputs.specs
