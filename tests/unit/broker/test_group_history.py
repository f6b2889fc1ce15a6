"""Group timelines folded from events in the `__kgroup_events` layout (broker/observe/group_history.py)."""

from __future__ import annotations

from kgroup.broker.observe.group_history import GroupHistory


def ev(kind: str, t: int, **fields) -> dict:
    base = {"v": 1, "time_ms": t, "group": "g", "protocol": "classic", "kind": kind, "member": None,
            "instance": None, "generation": 1, "member_epoch": None, "state": "Stable", "partitions": None,
            "reason": None}
    base.update(fields)
    return base


def assigned(member: str, t: int, *partitions: int, generation: int = 1) -> dict:
    return ev("assignment_changed", t, member=member, generation=generation,
              partitions=[["orders", p] for p in partitions])


def test_a_rebalance_runs_from_its_start_to_its_completion_and_counts_partitions_that_changed_owner():
    h = GroupHistory()
    h.apply(ev("member_joined", 1000, member="a", state="PreparingRebalance", generation=0), ("alpha", "/10.0.0.1"))
    h.apply(ev("rebalance_started", 1000, state="PreparingRebalance", generation=0, reason="member_joined"))
    h.apply(assigned("a", 1040, 0, 1, 2, 3))
    first = h.apply(ev("rebalance_completed", 1040))
    assert first is not None and (first.started_ms, first.duration_ms, first.generation) == (1000, 40, 1)
    assert first.cause == "member_joined" and first.members == 1
    assert first.moved == ()                        # handed out for the first time: not moved

    h.apply(ev("member_joined", 2000, member="b", state="PreparingRebalance"), ("beta", "/10.0.0.2"))
    h.apply(ev("rebalance_started", 2000, state="PreparingRebalance", reason="member_joined"))
    h.apply(assigned("a", 2300, 0, 1, generation=2))
    h.apply(assigned("b", 2300, 2, 3, generation=2))
    second = h.apply(ev("rebalance_completed", 2300, generation=2))
    assert second.duration_ms == 300 and second.members == 2 and second.generation == 2
    assert second.moved == (("orders", 2, "a", "b"), ("orders", 3, "a", "b"))

    t = h.groups["g"]
    assert t.rebalance_count == 2 and t.moved_count == 2 and list(t.rebalances) == [first, second]
    assert t.owners == {("orders", 0): "a", ("orders", 1): "a", ("orders", 2): "b", ("orders", 3): "b"}
    assert (t.members["b"].client_id, t.members["b"].client_host, t.members["b"].joined_ms) == ("beta", "/10.0.0.2", 2000)


def test_a_departed_members_partitions_count_as_moved_when_another_member_takes_them():
    h = GroupHistory()
    for m in ("a", "b"):
        h.apply(ev("member_joined", 0, member=m))
    h.apply(assigned("a", 10, 0, 1))
    h.apply(assigned("b", 10, 2, 3))
    h.apply(ev("member_expired", 100, member="b", reason="session timeout", state="PreparingRebalance"))
    assert h.groups["g"].owners == {("orders", 0): "a", ("orders", 1): "a"}
    h.apply(ev("rebalance_started", 100, state="PreparingRebalance", reason="member_expired"))
    h.apply(assigned("a", 150, 0, 1, 2, 3, generation=2))
    done = h.apply(ev("rebalance_completed", 150, generation=2))
    assert done.moved == (("orders", 2, "b", "a"), ("orders", 3, "b", "a")) and done.members == 1


def test_a_second_start_before_completion_is_the_same_rebalance_and_a_group_emptied_mid_rebalance_closes_none():
    h = GroupHistory()
    h.apply(ev("member_joined", 0, member="a", protocol="consumer", member_epoch=1))
    h.apply(ev("rebalance_started", 0, protocol="consumer", generation=1, reason="member_joined"))
    h.apply(ev("rebalance_started", 50, protocol="consumer", generation=2, reason="member_joined"))
    done = h.apply(ev("rebalance_completed", 80, protocol="consumer", generation=2))
    assert (done.started_ms, done.duration_ms, done.cause, done.protocol) == (0, 80, "member_joined", "consumer")
    h.apply(ev("member_left", 100, member="a", protocol="consumer", state="Assigning", generation=3))
    h.apply(ev("rebalance_started", 100, protocol="consumer", generation=3, reason="member_left"))
    assert h.groups["g"].open is not None
    h.apply(ev("group_state", 100, protocol="consumer", generation=3, state="Empty"))
    t = h.groups["g"]
    assert t.open is None and t.rebalance_count == 1 and t.members == {}


def test_a_static_member_restarting_keeps_its_client_and_partitions_and_a_temporary_leave_keeps_it_a_member():
    h = GroupHistory()
    h.apply(ev("member_joined", 0, member="a-1", instance="i-a"), ("alpha", "/h"))
    h.apply(assigned("a-1", 10, 0, 1, 2, 3))
    h.apply(ev("member_joined", 20, member="a-2", instance="i-a", replaced="a-1", reason="static member restarted"))
    t = h.groups["g"]
    assert list(t.members) == ["a-2"] and t.members["a-2"].client_id == "alpha"
    assert t.members["a-2"].partitions == (("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3))
    assert set(t.owners.values()) == {"a-2"}
    h.apply(ev("member_left", 30, member="a-2", instance="i-a", temporary=True, member_epoch=-2))
    assert t.members["a-2"].away


def test_a_deleted_group_is_forgotten_and_seeding_starts_from_the_coordinators_view():
    from kgroup.broker.observe.group_history import MemberInfo

    h = GroupHistory()
    h.seed("g", "classic", "Stable", 7, [MemberInfo("a", None, "alpha", "/h", None, (("orders", 0),))])
    assert h.groups["g"].generation == 7 and h.groups["g"].owners == {("orders", 0): "a"}
    h.apply(assigned("b", 10, 0))                  # a member never seen joining (loaded)
    assert h.groups["g"].moved_count == 1
    h.apply(ev("group_state", 20, state="Dead"))
    assert "g" not in h.groups


def test_only_the_last_rebalances_are_kept():
    h = GroupHistory(keep=3)
    for i in range(5):
        h.apply(ev("rebalance_started", i * 10, state="PreparingRebalance"))
        h.apply(ev("rebalance_completed", i * 10 + 5, generation=i + 1))
    t = h.groups["g"]
    assert [r.generation for r in t.rebalances] == [3, 4, 5] and t.rebalance_count == 5


def test_a_member_of_another_protocol_type_leaves_without_partitions_to_release():
    # A task or leader-election group: assignments are opaque bytes, events carry no
    # partitions, so the departed member held none (it used to crash the observer).
    h = GroupHistory()
    h.apply(ev("member_joined", 1000, member="w1", protocol="classic"), ("worker", "/10.0.0.1"))
    h.apply(ev("assignment_changed", 1010, member="w1", partitions=None))
    h.apply(ev("member_left", 2000, member="w1", state="Empty"))
    t = h.groups["g"]
    assert "w1" not in t.members and t.owners == {}
