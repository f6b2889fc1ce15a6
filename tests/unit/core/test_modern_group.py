"""The modern-group base (core/modern_group.py): what replay keeps up to date matches what a
look at every member says, for consumer and share groups alike, under random churn."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from kgroup.core.consumer_group import ConsumerGroup, GroupState, MemberState
from kgroup.core.modern_group import ModernGroup, Phase
from kgroup.core.records import (
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberValue,
    ConsumerTargetEpochRecord,
    ShareGroupEpochRecord,
)
from kgroup.core.share_group import ShareGroup

from tests.unit.core.event_scenarios import EventScenario, CONFIG, apply_op, random_ops


def _phase_by_looking(group: ModernGroup) -> Phase:
    """The phase from scratch: every member looked at."""
    if not group.members:
        return Phase.EMPTY
    if group.epoch > group.target_epoch:
        return Phase.ASSIGNING
    if any(not group.converged(m.current) for m in group.members.values()):
        return Phase.RECONCILING
    return Phase.STABLE


def _owners_by_looking(group: ConsumerGroup) -> dict:
    owners = {}
    for m in group.members.values():
        for t, ps in m.owned():
            for p in ps:
                owners[(t, p)] = m.member_id
    return owners


class Checked(EventScenario):
    def apply(self, result) -> None:
        super().apply(result)
        for groups in (self.coord.consumer_groups, self.coord.share_groups):
            for group in groups.values():
                assert group.phase() is _phase_by_looking(group), group.group_id
                assert group.unconverged == sum(not group.converged(m.current) for m in group.members.values())
                # The bound behind "a new target's epoch is one no member has reached".
                assert group.epoch_high is None or all(
                    m.current.member_epoch <= group.epoch_high for m in group.members.values())
                if isinstance(group, ConsumerGroup):
                    assert group.owners == _owners_by_looking(group)

    def events_of(self, result) -> list:
        return []


@given(st.integers(0, 10_000), st.sampled_from(["kso", "mko", "ks", "mo"]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_phase_and_the_owners_kept_by_replay_match_a_look_at_every_member(seed, kinds):
    ctx = Checked(config=CONFIG)
    for op in random_ops(seed, 80, kinds):
        apply_op(ctx, op)


def test_a_consumer_group_is_stable_only_when_every_member_is_at_the_target_with_nothing_to_revoke():
    assert ConsumerGroup("g").state() is GroupState.EMPTY
    groups: dict = {}
    meta = ConsumerMemberValue(None, None, "c", "h", ("t",), None, None, 1000)
    for record in (ConsumerGroupEpochRecord("g", 1), ConsumerMemberRecord("g", "a", meta)):
        ConsumerGroup.apply(groups, record)
    group = groups["g"]
    assert group.state() is GroupState.ASSIGNING
    ConsumerGroup.apply(groups, ConsumerTargetEpochRecord("g", 1))
    assert group.state() is GroupState.RECONCILING and group.unconverged == 1
    ConsumerGroup.apply(groups, ConsumerCurrentRecord("g", "a", ConsumerCurrentValue(
        1, 0, MemberState.UNREVOKED_PARTITIONS, (), (("t", (0,)),))))
    assert group.state() is GroupState.RECONCILING and group.owners == {("t", 0): "a"}
    ConsumerGroup.apply(groups, ConsumerCurrentRecord("g", "a", ConsumerCurrentValue(
        1, 0, MemberState.STABLE, (("t", (1,)),), ())))
    assert group.state() is GroupState.STABLE and group.owners == {("t", 1): "a"}
    ConsumerGroup.apply(groups, ConsumerCurrentRecord("g", "a", None))
    assert group.owners == {} and group.state() is GroupState.STABLE     # still a member until it goes
    ConsumerGroup.apply(groups, ConsumerMemberRecord("g", "a", None))
    assert group.state() is GroupState.EMPTY and group.unconverged == 0


def test_a_record_of_another_kind_is_refused():
    try:
        ConsumerGroup.apply({}, ShareGroupEpochRecord("g", 1))
    except TypeError:
        pass
    else:
        raise AssertionError("a share record replayed into consumer groups")
    assert ShareGroup.apply({}, ShareGroupEpochRecord("g", 1)) is True
