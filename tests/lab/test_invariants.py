"""The lab's invariant checks catch broken coordinators and assignors (test-only variants),
and the real ones show zero violations across the example sweeps."""

from __future__ import annotations

from pathlib import Path

import pytest

import kgroup.core.consumer_protocol as consumer_protocol
from kgroup.assignors import registry
from kgroup.assignors.sticky import CooperativeStickyAssignor
from kgroup.core.classic_group import ClassicGroup
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import GroupError
from kgroup.core.messages import OffsetCommitPartition, OffsetCommitRequest
from kgroup.core.offsets import Offsets
from kgroup.lab.results import simulate
from kgroup.lab.scenario import scenario_from_dict
from kgroup.lab.sweep import parse_sweep
from tests.lab.labctx import run, scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lab"
SCALE = [{"scale": {"at_s": 120, "to": 9}}, {"bounce": {"at_s": 240, "member": 0, "down_s": 5}},
         {"scale": {"at_s": 300, "to": 5}}]


class MovesStraightAcross(CooperativeStickyAssignor):
    """BROKEN on purpose: claims cooperative, but hands a moving partition straight to its
    new owner in the same round instead of withholding it until the old owner revoked it."""

    name = "broken-cooperative"
    cooperative = False


def test_an_assignor_that_moves_partitions_between_owners_in_one_round_is_caught(monkeypatch):
    monkeypatch.setitem(registry._BUILTIN_CLIENT, MovesStraightAcross.name, MovesStraightAcross())
    members = {"assignor": "broken-cooperative", "processing_ms": 500}
    caught = sum(run(scenario(seed=seed, members=members, events=SCALE)).summary["double_ownership"]
                 for seed in (1, 2, 3))
    assert caught > 0
    # The real cooperative-sticky on the same runs: clean.
    members["assignor"] = "cooperative-sticky"
    assert all(run(scenario(seed=seed, members=members, events=SCALE)).summary["double_ownership"] == 0
               for seed in (1, 2, 3))


def test_a_coordinator_that_assigns_before_the_old_owner_revoked_is_caught(monkeypatch):
    real = consumer_protocol.reconcile

    def no_wait(member_id, current, target, target_epoch, owners, owned_reported, *rest):
        # BROKEN on purpose: ignores who still owns a partition.
        return real(member_id, current, target, target_epoch, {}, owned_reported, *rest)

    members = {"protocol": "consumer", "assignor": "uniform", "processing_ms": 500}
    clean = run(scenario(members=members, events=SCALE)).summary
    monkeypatch.setattr(consumer_protocol, "reconcile", no_wait)
    broken = run(scenario(members=members, events=SCALE)).summary
    assert clean["double_ownership"] == 0
    assert broken["double_ownership"] > 0


class AcceptsStaleCommits(Offsets):
    """BROKEN on purpose: no generation or member check on OffsetCommit."""

    def validate_commit(self, group, req, transactional=False):
        return None


def broken_offsets_coordinator(*args, **kwargs):
    coord = GroupCoordinatorShard(*args, **kwargs)
    coord.offsets.__class__ = AcceptsStaleCommits
    return coord


def test_a_coordinator_that_takes_commits_from_a_fenced_generation_is_caught():
    # A member frozen past its session comes back and commits offsets of partitions that
    # have moved on: generation fencing must refuse them.
    events = [{"gc_pause": {"at_s": 100, "member": 1, "duration_s": 40}},
              {"gc_pause": {"at_s": 200, "member": 3, "duration_s": 40}}]
    data = scenario(members={"records_per_s": 1000}, events=events)
    clean = simulate(scenario_from_dict(data)).summary
    broken = simulate(scenario_from_dict(data), coordinator_factory=broken_offsets_coordinator).summary
    assert clean["offset_regressions"] == 0
    assert broken["offset_regressions"] > 0


@pytest.mark.parametrize("sweep", sorted(p.name for p in EXAMPLES.glob("*-sweep.yaml")))
def test_the_example_sweeps_show_no_violation_with_the_real_code(sweep):
    spec = parse_sweep((EXAMPLES / sweep).read_text(), source=sweep,
                       read=lambda p: (EXAMPLES / p).read_text())
    assert len(spec.variants) >= 3
    for g in spec.groups:
        s = simulate(scenario_from_dict(dict(g.scenario)), group=g.group, variant=g.variant).summary
        assert s["double_ownership"] == 0 and s["offset_regressions"] == 0, s
        assert s["unconverged_events"] == 0 and s["events"] >= 1, s


def test_the_broken_offsets_variant_really_drops_the_generation_check():
    group = ClassicGroup("g", 0)
    group.generation = 5
    stale = OffsetCommitRequest("g", 4, "m", (OffsetCommitPartition("t", 0, 1),))
    coord = GroupCoordinatorShard()
    with pytest.raises(GroupError):
        coord.offsets.validate_commit(group, stale)
    assert broken_offsets_coordinator().offsets.validate_commit(group, stale) is None
