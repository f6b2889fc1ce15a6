"""A streams member's way to its target (KIP-1071 reconciliation): a task is handed to its new
owner only after the old owner revoked it, a process never runs a task twice, role changes
of a member's own task happen in place. Scenarios, then a hypothesis property driving a
whole group through random targets.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.streams_reconcile import Owned, TaskHolders, is_converged, reconcile
from kgroup.core.streams_records import (
    NEW_STREAMS_MEMBER,
    StreamsCurrentValue,
    StreamsMemberState,
    TaskTuple,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

S = StreamsMemberState
X, Y, Z = ("0", 0), ("0", 1), ("0", 2)


class Group:
    """Members' current values and the holders index, as the coordinator keeps them."""

    def __init__(self, **processes: str) -> None:
        self.process = processes
        self.current = {m: NEW_STREAMS_MEMBER for m in processes}

    def holders(self) -> TaskHolders:
        h = TaskHolders()
        for m, value in self.current.items():
            h.add(self.process[m], value)
        return h

    def step(self, member: str, target: TaskTuple, epoch: int, owned: Owned | None = None,
             report: bool = True) -> StreamsCurrentValue:
        value = self.current[member]
        if report and owned is None:
            a = value.assigned()
            # The member reports what it runs: everything but what it was told to give up.
            owned = Owned(frozenset(a.active), frozenset(a.standby), frozenset(a.warmup))
        nxt = reconcile(self.process[member], value, target, epoch, self.holders(), owned if report else None)
        self.current[member] = nxt
        return nxt


def test_a_new_member_takes_its_whole_target_at_the_target_epoch():
    g = Group(a="p1")
    nxt = g.step("a", TaskTuple(active=(X, Y), standby=(Z,)), 2)
    assert (nxt.member_epoch, nxt.previous_member_epoch, nxt.state) == (2, 0, S.STABLE)
    assert nxt.active == (("0", 0, 2), ("0", 1, 2)) and nxt.standby == (Z,)
    assert is_converged(nxt, 2)


def test_a_task_moves_only_after_its_owner_revoked_it():
    g = Group(a="p1", b="p2")
    g.step("a", TaskTuple(active=(X, Y)), 2)
    # Epoch 3: Y goes to b. a must revoke first; b waits for it.
    a = g.step("a", TaskTuple(active=(X,)), 3)
    assert (a.state, a.member_epoch, a.pending_active) == (S.UNREVOKED_TASKS, 2, (("0", 1, 2),))
    b = g.step("b", TaskTuple(active=(Y,)), 3)
    assert (b.state, b.member_epoch, b.active) == (S.UNRELEASED_TASKS, 3, ())
    # a heartbeats still running Y: nothing moves.
    assert g.step("a", TaskTuple(active=(X,)), 3, Owned(frozenset({X, Y}))).state is S.UNREVOKED_TASKS
    # a no longer runs Y: it reaches epoch 3, and b gets Y.
    a = g.step("a", TaskTuple(active=(X,)), 3, Owned(frozenset({X})))
    assert (a.state, a.member_epoch, a.previous_member_epoch) == (S.STABLE, 3, 2)
    b = g.step("b", TaskTuple(active=(Y,)), 3)
    assert (b.state, b.active) == (S.STABLE, (("0", 1, 3),))


def test_a_member_told_to_revoke_keeps_its_epoch_and_records_it_as_its_previous_epoch():
    # Kafka 4.4's StreamsGroupMember.Builder.updateMemberEpoch on every step: the epoch before
    # the step becomes the previous one even when the step keeps it, so a heartbeat at the
    # epoch before that is fenced (differential scenario sc_previous_epoch_of_a_revoking_member).
    g = Group(a="p1", b="p2")
    g.step("a", TaskTuple(active=(X, Y)), 2)
    a = g.step("a", TaskTuple(active=(X,)), 3)
    assert (a.state, a.member_epoch, a.previous_member_epoch) == (S.UNREVOKED_TASKS, 2, 2)
    b = g.step("b", TaskTuple(active=(Y,)), 3)
    assert (b.state, b.member_epoch, b.previous_member_epoch) == (S.UNRELEASED_TASKS, 3, 0)
    b = g.step("b", TaskTuple(active=(Y,)), 3)                # still waiting: a step all the same
    assert (b.state, b.member_epoch, b.previous_member_epoch) == (S.UNRELEASED_TASKS, 3, 3)


def test_without_a_report_of_its_tasks_a_member_keeps_waiting_to_revoke():
    g = Group(a="p1")
    g.step("a", TaskTuple(active=(X, Y)), 2)
    g.step("a", TaskTuple(active=(X,)), 3)
    assert g.step("a", TaskTuple(active=(X,)), 3, report=False).state is S.UNREVOKED_TASKS


def test_a_standby_is_promoted_in_place_once_the_active_task_is_released():
    g = Group(a="p1", b="p2")
    g.step("a", TaskTuple(active=(X,)), 2)
    g.step("b", TaskTuple(standby=(X,)), 2)
    # Epoch 3: X becomes b's active task, a's goes.
    a = g.step("a", TaskTuple(), 3)
    assert a.state is S.UNREVOKED_TASKS
    b = g.step("b", TaskTuple(active=(X,)), 3)
    assert (b.state, b.standby, b.active) == (S.UNRELEASED_TASKS, (X,), ())    # keeps its standby
    g.step("a", TaskTuple(), 3, Owned())
    b = g.step("b", TaskTuple(active=(X,)), 3)
    assert (b.state, b.standby, b.active) == (S.STABLE, (), (("0", 0, 3),))


def test_an_active_task_demoted_to_standby_keeps_its_state_and_is_still_revoked():
    g = Group(a="p1", b="p2")
    g.step("a", TaskTuple(active=(X,)), 2)
    a = g.step("a", TaskTuple(standby=(X,)), 3)
    assert (a.state, a.standby, a.pending_active) == (S.UNREVOKED_TASKS, (X,), (("0", 0, 2),))
    b = g.step("b", TaskTuple(active=(X,)), 3)
    assert b.state is S.UNRELEASED_TASKS
    a = g.step("a", TaskTuple(standby=(X,)), 3, Owned(standby=frozenset({X})))
    assert (a.state, a.standby, a.active) == (S.STABLE, (X,), ())
    assert g.step("b", TaskTuple(active=(X,)), 3).active == (("0", 0, 3),)


def test_a_standby_turns_into_a_warmup_and_back_without_a_round_trip():
    g = Group(a="p1")
    g.step("a", TaskTuple(standby=(X,)), 2)
    a = g.step("a", TaskTuple(warmup=(X,)), 3)
    assert (a.state, a.warmup, a.standby, a.pending_standby) == (S.STABLE, (X,), (), ())
    a = g.step("a", TaskTuple(standby=(X,)), 4)
    assert (a.state, a.standby, a.warmup) == (S.STABLE, (X,), ())


def test_a_process_never_takes_a_task_another_of_its_members_still_holds():
    g = Group(a1="p1", a2="p1")
    g.step("a1", TaskTuple(standby=(X,)), 2)
    # The target moves the standby to the other thread of the same process.
    g.step("a1", TaskTuple(), 3, report=False)
    a2 = g.step("a2", TaskTuple(standby=(X,)), 3)
    assert (a2.state, a2.standby) == (S.UNRELEASED_TASKS, ())
    g.step("a1", TaskTuple(), 3, Owned())
    assert g.step("a2", TaskTuple(standby=(X,)), 3).standby == (X,)


# ---- property ---------------------------------------------------------------------------

TASKS = [("0", p) for p in range(4)] + [("1", p) for p in range(2)]
MEMBERS = {"a": "p1", "b": "p2", "c": "p3", "d": "p3"}


@st.composite
def targets(draw):
    """A valid target: each task active once, standbys and warm-ups on other processes."""
    out = {m: {"active": set(), "standby": set(), "warmup": set()} for m in MEMBERS}
    for task in TASKS:
        owner = draw(st.sampled_from(sorted(MEMBERS)))
        out[owner]["active"].add(task)
        used = {MEMBERS[owner]}
        for kind in ("standby", "warmup"):
            if draw(st.booleans()):
                free = [m for m in sorted(MEMBERS) if MEMBERS[m] not in used]
                if free:
                    m = draw(st.sampled_from(free))
                    out[m][kind].add(task)
                    used.add(MEMBERS[m])
    return {m: TaskTuple(tuple(sorted(t["active"])), tuple(sorted(t["standby"])), tuple(sorted(t["warmup"])))
            for m, t in out.items()}


def check_group(g: Group) -> None:
    active: dict = {}
    per_process: dict = {}
    for m, value in g.current.items():
        for s, p, _ in (*value.active, *value.pending_active):
            assert (s, p) not in active, f"task {(s, p)} active on {active[(s, p)]} and {m}"
            active[(s, p)] = m
        demoting = {(s, p) for s, p, _ in value.pending_active}
        held = [*((s, p) for s, p, _ in value.active), *value.standby, *value.warmup,
                *value.pending_standby, *value.pending_warmup]
        for task in held:
            # A process runs a task once; the one exception is a member's own demotion in
            # place: its active task, still being revoked, and the standby it becomes.
            key = (g.process[m], task)
            assert key not in per_process, f"process {g.process[m]} holds {task} twice ({per_process[key]}, {m})"
            per_process[key] = m
        for task in demoting:
            key = (g.process[m], task)
            assert per_process.get(key, m) == m, f"process {g.process[m]} holds {task} on two members"
            per_process[key] = m


@SETTINGS
@given(st.lists(targets(), min_size=1, max_size=4), st.randoms())
def test_no_task_is_active_twice_and_every_member_reaches_its_target(plans, rnd):
    g = Group(**MEMBERS)
    epoch = 1
    for target in plans:
        epoch += 1
        # Members heartbeat in random order until all reached the target (or a bound).
        for _ in range(12):
            order = sorted(MEMBERS)
            rnd.shuffle(order)
            for m in order:
                g.step(m, target[m], epoch, report=rnd.random() > 0.1)
                check_group(g)
            if all(is_converged(g.current[m], epoch) for m in MEMBERS):
                break
        else:
            # Eventually, with every member reporting, everyone converges.
            for _ in range(4):
                for m in sorted(MEMBERS):
                    g.step(m, target[m], epoch)
                    check_group(g)
        for m in MEMBERS:
            assert is_converged(g.current[m], epoch), (m, g.current[m], target[m])
            assert g.current[m].assigned() == target[m]
