"""The task assignor (kgroup-tasks): balanced, every task once, sticky, cooperative.

Scenarios first, then hypothesis properties over random groups driven through rounds the
way members drive them: each member reports what it runs, the leader assigns, a member
missing a task it ran stops it and the group rebalances again until nothing is withheld.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assignor_support import SETTINGS
from kgroup.assignors.task_protocol import (
    TaskProtocolError,
    decode_claim,
    decode_tasks,
    encode_claim,
    encode_tasks,
)
from kgroup.assignors.tasks import TaskClaim, assign_tasks

TASKS = [f"job-{i:02d}" for i in range(40)]


def settle(tasks, running: dict[str, set[str]], generation: int = 1, max_rounds: int = 5):
    """Rounds of cooperative rebalancing until nothing is withheld; returns (owners, rounds).

    Each round every member claims what it runs at the previous generation; after the
    assignment a member stops what it was not given and starts what it was.
    """
    for rounds in range(1, max_rounds + 1):
        claims = {m: TaskClaim(tuple(sorted(ts)), generation, True) for m, ts in running.items()}
        plan = assign_tasks(tasks, claims)
        generation += 1
        for m, given_ in plan.assignments.items():
            assert set(given_) <= set(running[m]) | set(tasks)
            running[m] = set(given_)
        if not plan.withheld:
            return running, rounds
    raise AssertionError(f"not settled after {max_rounds} rounds: {plan}")


def owners(running: dict[str, set[str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for m, ts in running.items():
        for t in ts:
            assert t not in out, f"{t} run by {out[t]} and {m}"
            out[t] = m
    return out


# -- scenarios ---------------------------------------------------------------------------


def test_forty_tasks_over_four_new_members_are_ten_each():
    plan = assign_tasks(TASKS, {f"w{i}": TaskClaim() for i in range(4)})
    assert sorted(len(ts) for ts in plan.assignments.values()) == [10, 10, 10, 10]
    assert sorted(t for ts in plan.assignments.values() for t in ts) == TASKS
    assert plan.withheld == ()


def test_a_fifth_worker_takes_eight_tasks_and_nothing_else_moves():
    running, _ = settle(TASKS, {f"w{i}": set() for i in range(4)})
    before = owners(running)
    running["w4"] = set()
    running, rounds = settle(TASKS, running)
    after = owners(running)
    moved = {t for t in TASKS if before[t] != after[t]}
    assert len(moved) == 8 and all(after[t] == "w4" for t in moved)
    assert rounds == 2  # one round to let go, one to hand over
    assert sorted(len(ts) for ts in running.values()) == [8] * 5


def test_a_worker_that_dies_hands_on_only_its_own_tasks():
    running, _ = settle(TASKS, {f"w{i}": set() for i in range(4)})
    before = owners(running)
    dead = running.pop("w2")
    running, rounds = settle(TASKS, running)
    after = owners(running)
    moved = {t for t in TASKS if before[t] != after[t]}
    assert moved == dead and rounds == 1
    assert sorted(len(ts) for ts in running.values()) == [13, 13, 14]


def test_a_task_still_running_elsewhere_is_withheld_not_given():
    claims = {"a": TaskClaim(("x", "y"), 3, True), "b": TaskClaim((), -1, False)}
    plan = assign_tasks(["x", "y"], claims)
    assert plan.assignments == {"a": ("x",), "b": ()} and plan.withheld == ("y",)


def test_an_eager_member_gets_its_stopped_tasks_back_by_generation():
    # Neither runs anything (eager members stop before joining); the newest claim wins.
    claims = {"a": TaskClaim(("x",), 2, False), "b": TaskClaim(("x",), 5, False)}
    plan = assign_tasks(["x", "y"], claims)
    assert plan.assignments == {"a": ("y",), "b": ("x",)} and plan.withheld == ()


def test_unknown_tasks_in_claims_are_dropped_and_new_ones_dealt():
    claims = {"a": TaskClaim(("gone", "x"), 1, True)}
    plan = assign_tasks(["x", "new"], claims)
    assert plan.assignments == {"a": ("new", "x")}


def test_no_members_no_assignment():
    assert assign_tasks(TASKS, {}).assignments == {}


def test_claim_and_tasks_bytes_round_trip_and_reject_garbage():
    claim = TaskClaim(("b", "a"), 7, True)
    assert decode_claim(encode_claim(claim)) == TaskClaim(("a", "b"), 7, True)
    assert decode_tasks(encode_tasks(["z", "é"])) == ("z", "é")
    assert decode_tasks(b"") == ()
    # Fields appended by a newer version are ignored, as in Kafka's ConsumerProtocol.
    assert decode_claim(encode_claim(claim) + b"\x00\x01") == TaskClaim(("a", "b"), 7, True)
    for bad in (b"\x00", b"\x00\x01\x00\x00", encode_claim(claim)[:-1], b"\x00\x00" + b"\x00" * 9):
        with pytest.raises(TaskProtocolError):
            decode_claim(bad)
    for bad in (b"\x00\x01\xff\xff\xff\xff", b"\x00\x01\x00\x00\x00\x09\x00\x01a", b"\x00\x00"):
        with pytest.raises(TaskProtocolError):
            decode_tasks(bad)


def test_claim_bytes_are_the_documented_layout():
    # int16 version 1 | int32 generation | int8 running | int32 count | (int16 len, utf-8)*
    assert encode_claim(TaskClaim(("ab",), 2, True)) == (
        b"\x00\x01" b"\x00\x00\x00\x02" b"\x01" b"\x00\x00\x00\x01" b"\x00\x02ab")
    assert encode_tasks(["ab"]) == b"\x00\x01" b"\x00\x00\x00\x01" b"\x00\x02ab"


# -- properties --------------------------------------------------------------------------


@st.composite
def groups(draw):
    n_tasks = draw(st.integers(0, 60))
    tasks = [f"t{i}" for i in range(n_tasks)]
    n_members = draw(st.integers(1, 9))
    members = [f"m{i}" for i in range(n_members)]
    return tasks, members


@SETTINGS
@given(groups(), st.data())
def test_any_claims_give_each_task_at_most_once_and_never_take_a_running_task(group, data):
    tasks, members = group
    claims = {}
    for m in members:
        mine = data.draw(st.lists(st.sampled_from(tasks + ["stale"]), unique=True)) if tasks else []
        claims[m] = TaskClaim(tuple(mine), data.draw(st.integers(-1, 9)), data.draw(st.booleans()))
    plan = assign_tasks(tasks, claims)
    given_to: dict[str, str] = {}
    for m, ts in plan.assignments.items():
        assert list(ts) == sorted(set(ts))
        for t in ts:
            assert t in tasks and t not in given_to
            given_to[t] = m
            runners = [r for r, c in claims.items() if c.running and t in c.tasks]
            assert not runners or runners[0] == m, f"{t} runs on {runners} but went to {m}"
    assert set(given_to) | set(plan.withheld) == set(tasks)
    assert not set(given_to) & set(plan.withheld)
    if not plan.withheld:
        counts = [len(ts) for ts in plan.assignments.values()]
        assert max(counts) - min(counts) <= 1


@SETTINGS
@given(groups())
def test_fresh_group_is_balanced_and_complete_in_one_round(group):
    tasks, members = group
    running, rounds = settle(tasks, {m: set() for m in members})
    assert rounds == 1 and set(owners(running)) == set(tasks)
    counts = [len(ts) for ts in running.values()]
    assert max(counts) - min(counts) <= 1


@SETTINGS
@given(groups())
def test_joining_a_balanced_group_moves_at_most_the_newcomers_share(group):
    tasks, members = group
    running, _ = settle(tasks, {m: set() for m in members})
    before = owners(running)
    running["new"] = set()
    running, rounds = settle(tasks, running)
    after = owners(running)
    moved = [t for t in tasks if before[t] != after[t]]
    assert rounds <= 2
    assert len(moved) <= math.ceil(len(tasks) / (len(members) + 1))
    assert all(after[t] == "new" for t in moved)
    counts = [len(ts) for ts in running.values()]
    assert max(counts) - min(counts) <= 1 and set(after) == set(tasks)


@SETTINGS
@given(groups(), st.integers(0, 20))
def test_leaving_a_balanced_group_moves_only_the_leavers_tasks(group, which):
    tasks, members = group
    if len(members) < 2:
        return
    running, _ = settle(tasks, {m: set() for m in members})
    before = owners(running)
    gone = members[which % len(members)]
    theirs = running.pop(gone)
    running, rounds = settle(tasks, running)
    after = owners(running)
    assert rounds == 1
    assert {t for t in tasks if before[t] != after[t]} == theirs
    counts = [len(ts) for ts in running.values()]
    assert max(counts) - min(counts) <= 1 and set(after) == set(tasks)


@SETTINGS
@given(groups(), st.permutations(list(range(9))))
def test_result_does_not_depend_on_the_order_of_members_or_tasks(group, order):
    tasks, members = group
    claims = {m: TaskClaim(tuple(tasks[i::len(members)]), i, i % 2 == 0)
              for i, m in enumerate(members)}
    shuffled = {members[i]: claims[members[i]] for i in order if i < len(members)}
    assert assign_tasks(list(reversed(tasks)), shuffled) == assign_tasks(tasks, claims)


@SETTINGS
@given(groups(), st.data())
def test_from_any_disjoint_ownership_the_fewest_tasks_move(group, data):
    # Members own disjoint task sets (nothing running, so nothing is withheld); the number
    # of tasks taken from their owner is the minimum over every balanced choice of which
    # members get one task more.
    from itertools import combinations

    tasks, members = group
    owner_of = {t: data.draw(st.sampled_from(members + [None])) for t in tasks}
    claims = {m: TaskClaim(tuple(t for t in tasks if owner_of[t] == m), 1, False) for m in members}
    plan = assign_tasks(tasks, claims)
    moved = sum(1 for m, ts in plan.assignments.items() for t in claims[m].tasks if t not in ts)
    base, extra = divmod(len(tasks), len(members))
    best = min(
        sum(max(0, len(claims[m].tasks) - base - (m in more)) for m in members)
        for more in map(set, combinations(members, extra))
    )
    assert moved == best


def test_a_member_claims_what_it_holds_as_running_and_what_it_held_as_stopped():
    from kgroup.assignors.task_protocol import claim_protocols

    held = encode_tasks(["b", "a"])
    assert claim_protocols(held, held, 4) == (("sticky", encode_claim(TaskClaim(("a", "b"), 4, True))),)
    assert claim_protocols(None, held, 4) == (("sticky", encode_claim(TaskClaim(("a", "b"), 4, False))),)
    assert claim_protocols(None, None, -1) == (("sticky", encode_claim(TaskClaim())),)
    assert claim_protocols(b"\xff", None, 3) == (("sticky", encode_claim(TaskClaim())),)
