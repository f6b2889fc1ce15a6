"""The streams groups' sticky task assignor (KIP-1071) and its warm-up tasks.

Scenarios first (a fresh group, a member joining, leaving, crashing with standbys, threads
of one process, warm-ups held back and completed), then hypothesis properties over random
groups driven through joins, leaves and crashes: every task active exactly once, a process
never holds a task twice (so a standby never sits with its active task), each stateful task
gets its standbys while there are processes for them, nothing moves without a reason,
balance within one task. tests/reference/test_streams_assignor.py compares the placement
with Kafka 4.4's own class.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from assignor_support import SETTINGS
from kgroup.assignors.streams_spec import (
    TaskAssignmentConfig,
    TaskMember,
    Tasks,
    TaskSubtopology,
)
from kgroup.assignors.streams_sticky import StickyTaskAssignor, assign_sticky
from kgroup.assignors.streams_warmups import add_warmups, caught_up_warmups

STATEFUL = (TaskSubtopology("0", 4, True), TaskSubtopology("1", 4, True))
STATELESS = (TaskSubtopology("0", 6, False),)
ASSIGNOR = StickyTaskAssignor()


def members(*ids: str, current=None, process=None, **kw) -> dict[str, TaskMember]:
    current = current or {}
    process = process or {}
    return {m: TaskMember(process.get(m, "p-" + m), current.get(m, Tasks()), **kw) for m in ids}


def actives(result) -> dict[str, set]:
    return {m: set(t.active) for m, t in result.items()}


def carry(result, group) -> dict[str, TaskMember]:
    """The group after every member reconciled to `result`."""
    return {m: TaskMember(group[m].process_id, result[m], group[m].task_offsets, group[m].task_end_offsets)
            for m in group}


def check_valid(subtopologies, group, result, config) -> None:
    tasks = [(s.subtopology_id, p) for s in subtopologies for p in range(s.tasks)]
    stateful = {(s.subtopology_id, p) for s in subtopologies if s.stateful for p in range(s.tasks)}
    assert set(result) == set(group)
    active = Counter(t for r in result.values() for t in r.active)
    assert set(active) == set(tasks) and set(active.values()) <= {1}, "every task active exactly once"
    held: dict[str, Counter] = {}
    for m, r in result.items():
        assert not (r.active & r.standby) and not (r.active & r.warmup) and not (r.standby & r.warmup)
        held.setdefault(group[m].process_id, Counter()).update(r.all())
        assert r.standby <= stateful and r.warmup <= stateful
    for process, counts in held.items():
        assert max(counts.values(), default=1) == 1, f"process {process} holds a task twice: {counts}"
    processes = len(held)
    standbys = Counter(t for r in result.values() for t in r.standby)
    warmups = Counter(t for r in result.values() for t in r.warmup)
    for task in stateful:
        # A stateful task has its standbys while there are processes left for them (a task
        # held back behind a warm-up may trade a standby for the warm-up).
        want = min(config.num_standby_replicas, processes - 1)
        assert standbys[task] <= config.num_standby_replicas
        assert standbys[task] + warmups[task] >= want, f"{task}: {standbys[task]} standbys, want {want}"


# ---- scenarios --------------------------------------------------------------------------


def test_a_fresh_group_spreads_tasks_evenly_in_kafkas_order():
    # Kafka's least-loaded queue breaks ties by its heap's order, filled from a HashMap of the
    # processes: Kafka 4.4's StickyTaskAssignor gives these (its class run on this input).
    result = assign_sticky(STATELESS, members("a", "b", "c"))
    assert {m: sorted(p for _, p in t.active) for m, t in result.items()} == {
        "a": [2, 4], "b": [0, 5], "c": [1, 3]}


def test_a_member_joining_takes_only_what_balance_needs_and_the_rest_stay():
    group = members("a", "b")
    first = assign_sticky(STATEFUL, group)
    second = assign_sticky(STATEFUL, {**carry(first, group), **members("c")})
    moved = sum(len(first[m].active - second[m].active) for m in ("a", "b"))
    assert moved == len(second["c"].active) == 2
    assert sorted(len(t.active) for t in second.values()) == [2, 3, 3]


def test_a_member_leaving_hands_on_exactly_its_tasks():
    group = members("a", "b", "c")
    first = carry(assign_sticky(STATEFUL, group), group)
    del first["b"]
    second = assign_sticky(STATEFUL, first)
    for m in ("a", "c"):
        assert first[m].current.active <= second[m].active
    assert set().union(*(t.active for t in second.values())) == {(s, p) for s in "01" for p in range(4)}


def test_standbys_never_sit_with_their_active_task_and_take_over_when_its_process_dies():
    config = TaskAssignmentConfig(num_standby_replicas=1)
    subtopologies = (TaskSubtopology("0", 6, True),)
    group = members("a", "b", "c")
    first = assign_sticky(subtopologies, group, config)
    check_valid(subtopologies, group, first, config)
    group = carry(first, group)
    dead = set(group.pop("b").current.active)
    second = assign_sticky(subtopologies, group, config)
    check_valid(subtopologies, group, second, config)
    for task in dead:
        standby_holders = {m for m in group if task in first[m].standby}
        new_owner = next(m for m, t in second.items() if task in t.active)
        assert new_owner in standby_holders, f"{task}: its standby on {standby_holders} took over, not {new_owner}"
    assert sorted(len(t.active) for t in second.values()) == [3, 3]


def test_more_standbys_than_processes_gives_each_task_one_per_other_process():
    config = TaskAssignmentConfig(num_standby_replicas=2)
    group = members("a", "b")
    result = assign_sticky(STATEFUL, group, config)
    check_valid(STATEFUL, group, result, config)
    assert all(len(t.standby) == 4 for t in result.values())


def test_threads_of_one_process_share_its_state_so_standbys_go_to_other_processes():
    config = TaskAssignmentConfig(num_standby_replicas=1)
    group = members("a1", "a2", "b1", "b2", process={"a1": "A", "a2": "A", "b1": "B", "b2": "B"})
    result = assign_sticky(STATEFUL, group, config)
    check_valid(STATEFUL, group, result, config)
    on_a = result["a1"].all() | result["a2"].all()
    assert on_a == {(s, p) for s in "01" for p in range(4)}


def test_a_restarted_instance_gets_back_the_tasks_its_state_directory_has():
    # It rejoins with a new member id and holds nothing, but its state directory still has
    # the stores of tasks it ran and it reports their offsets: of the tasks the members that
    # stayed cannot keep, it gets those, rather than a member without their state.
    a_holds_all = assign_sticky(STATEFUL, members("a"))
    state = {("0", 2): 500, ("1", 3): 700}
    group = {"a": TaskMember("p-a", a_holds_all["a"]), "b2": TaskMember("p-b", Tasks(), state),
             "d": TaskMember("p-d")}
    result = assign_sticky(STATEFUL, group)
    assert result["a"].active == {("0", 0), ("1", 0), ("0", 1)}
    assert set(state) <= result["b2"].active
    assert not set(state) & result["d"].active


def test_without_changelog_ends_reported_warmups_are_never_assigned():
    group = carry(assign_sticky(STATEFUL, members("a", "b")), members("a", "b"))
    group["c"] = TaskMember("p-c")
    result = ASSIGNOR.assign(STATEFUL, group, TaskAssignmentConfig(num_warmup_replicas=2))
    assert result == assign_sticky(STATEFUL, group)
    assert not any(t.warmup for t in result.values())


def test_a_task_moving_to_a_process_without_its_state_stays_put_behind_a_warmup():
    config = TaskAssignmentConfig(num_warmup_replicas=1, acceptable_recovery_lag=100)
    first = assign_sticky(STATEFUL, members("a", "b"))
    ends = {(s, p): 10_000 for s in "01" for p in range(4)}
    group = {m: TaskMember("p-" + m, first[m], {t: -2 for t in first[m].active}, ends) for m in ("a", "b")}
    group["c"] = TaskMember("p-c", Tasks(), {}, {})
    plain = assign_sticky(STATEFUL, group, config)
    moving = sorted(plain["c"].active)
    assert len(moving) == 2
    result = ASSIGNOR.assign(STATEFUL, group, config)
    check_valid(STATEFUL, group, result, config)
    # Both moves are held back (the task keeps running where its state is); the budget of
    # one warm-up goes to the first task in order.
    assert result["c"].active == frozenset()
    assert result["c"].warmup == {moving[0]}
    for task in moving:
        assert task in result["a"].active | result["b"].active
    # c restores the warm-up; when its offsets come within the lag, the warm-up has caught
    # up, the group assigns again and the task moves.
    group = carry(result, group)
    assert caught_up_warmups(group, result, config) == []
    group["c"] = TaskMember("p-c", result["c"], {moving[0]: 9_950}, {moving[0]: 10_000})
    assert caught_up_warmups(group, result, config) == [("c", moving[0])]
    again = ASSIGNOR.assign(STATEFUL, group, config)
    check_valid(STATEFUL, group, again, config)
    assert moving[0] in again["c"].active
    assert moving[1] in again["c"].warmup          # the next one warms up now


def test_a_task_whose_process_is_gone_moves_at_once_even_without_state():
    config = TaskAssignmentConfig(num_warmup_replicas=2, acceptable_recovery_lag=10)
    group = members("a", "b")
    first = assign_sticky(STATEFUL, group)
    group = {m: TaskMember("p-" + m, first[m], {}, {t: 1_000 for t in first[m].active}) for m in group}
    del group["b"]
    result = ASSIGNOR.assign(STATEFUL, group, config)
    assert len(result["a"].active) == 8 and not result["a"].warmup


# ---- properties -------------------------------------------------------------------------

subtopology_sets = st.lists(st.tuples(st.integers(1, 8), st.booleans()), min_size=1, max_size=3).map(
    lambda specs: tuple(TaskSubtopology(str(i), n, s) for i, (n, s) in enumerate(specs)))
# Each event: ("join", threads), ("leave", index) or ("crash", index) (a crash loses nothing
# more than a leave does here: the assignor sees the member gone either way).
events = st.lists(st.one_of(st.tuples(st.just("join"), st.integers(1, 2)),
                            st.tuples(st.sampled_from(["leave", "crash"]), st.integers(0, 20))),
                  min_size=1, max_size=8)


def drive(subtopologies, config, script, assign=assign_sticky):
    """Run a script of joins and leaves; every member reconciles to each target. Yields
    (group before, target) for every round."""
    group: dict[str, TaskMember] = {}
    processes = 0
    for kind, arg in script:
        if kind == "join":
            processes += 1
            for thread in range(arg):
                group[f"m{processes:02d}-{thread}"] = TaskMember(f"p{processes:02d}")
        elif group:
            pid = sorted({m.process_id for m in group.values()})[arg % len({m.process_id for m in group.values()})]
            group = {mid: m for mid, m in group.items() if m.process_id != pid}
        if not group:
            continue
        target = assign(subtopologies, group, config)
        yield dict(group), target
        group = carry(target, group)


@SETTINGS
@given(subtopology_sets, st.integers(0, 2), events)
def test_every_task_once_active_a_process_never_holds_a_task_twice(subtopologies, standbys, script):
    config = TaskAssignmentConfig(num_standby_replicas=standbys)
    for group, target in drive(subtopologies, config, script):
        check_valid(subtopologies, group, target, config)


@SETTINGS
@given(subtopology_sets, st.integers(0, 2), events)
def test_nothing_moves_without_a_reason(subtopologies, standbys, script):
    # Once members hold their targets, assigning again settles: at most one more round moves
    # active tasks, and from then on none moves. (Kafka 4.4's StickyTaskAssignor does move an
    # active task once after a leave with standbys: a process left with three actives while
    # another has one gives one up on the next run, when the previous owners are its input;
    # tests/reference/test_streams_assignor.py holds us to its choices, and did for the
    # example hypothesis found: [(1, F), (2, F), (8, T)], one standby, five processes joining,
    # two leaving. Standbys may trade places between processes on a re-run too.)
    config = TaskAssignmentConfig(num_standby_replicas=standbys)
    for group, target in drive(subtopologies, config, script):
        again = assign_sticky(subtopologies, carry(target, group), config)
        settled = assign_sticky(subtopologies, carry(again, group), config)
        assert actives(settled) == actives(again)
        if not standbys:
            assert again == target


@SETTINGS
@given(subtopology_sets, st.integers(0, 2), events)
def test_a_leaving_process_takes_no_task_from_the_members_that_stay(subtopologies, standbys, script):
    config = TaskAssignmentConfig(num_standby_replicas=standbys)
    previous: dict[str, Tasks] = {}
    for group, target in drive(subtopologies, config, script):
        if previous and set(group) < set(previous):
            for m in group:
                assert previous[m].active <= target[m].active, f"{m} lost a task when another left"
        previous = target


@SETTINGS
@given(subtopology_sets, st.integers(0, 2), events)
def test_active_tasks_are_balanced_within_one_over_single_thread_processes(subtopologies, standbys, script):
    script = [(kind, 1) if kind == "join" else (kind, arg) for kind, arg in script]
    config = TaskAssignmentConfig(num_standby_replicas=standbys)
    for _, target in drive(subtopologies, config, script):
        counts = [len(t.active) for t in target.values()]
        assert max(counts) - min(counts) <= 1, counts
        totals = [len(t.active) + len(t.standby) for t in target.values()]
        assert max(totals) - min(totals) <= 1 or standbys, totals


@SETTINGS
@given(subtopology_sets, st.integers(0, 1), st.integers(0, 3), events, st.data())
def test_warmups_stay_within_budget_and_off_the_processes_holding_their_task(subtopologies, standbys, budget,
                                                                             script, data):
    config = TaskAssignmentConfig(num_standby_replicas=standbys, num_warmup_replicas=budget,
                                  acceptable_recovery_lag=50)

    def assign(subs, group, cfg):
        # Members report offsets for what they hold, some of them far behind.
        ends = {(s.subtopology_id, p): 1_000 for s in subs for p in range(s.tasks)}
        reported = {}
        for mid, m in group.items():
            offsets = {t: data.draw(st.sampled_from([0, 990, 1_000])) for t in sorted(m.current.all())}
            reported[mid] = TaskMember(m.process_id, m.current, offsets, ends)
        return ASSIGNOR.assign(subs, reported, cfg)

    for group, target in drive(subtopologies, config, script, assign):
        check_valid(subtopologies, group, target, config)
        assert sum(len(t.warmup) for t in target.values()) <= budget
