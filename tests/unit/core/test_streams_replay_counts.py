"""Streams groups (core/streams_group.py on the modern-group base): the counts replay keeps
up to date — the phase, how many members have not reached the target, the highest member
epoch — match a look at every member under random churn: joins, heartbeats that report or
withhold their tasks, leaves, static members, session expiries, the topology's topics
growing. The same property as test_modern_group.py's for consumer and share groups."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from tests.unit.core.groupctx import GroupContext
from tests.unit.core.test_modern_group import _phase_by_looking
from tests.unit.core.test_streams_scenarios import Streams, SESSION, set_topics


class Checked(GroupContext):
    checks: int = 0

    def apply(self, result) -> None:
        super().apply(result)
        for group in self.coord.streams_groups.values():
            members = group.members.values()
            assert group.phase() is _phase_by_looking(group), group.group_id
            assert group.unconverged == sum(not group.converged(m.current) for m in members)
            assert group.epoch_high is None or all(m.current.member_epoch <= group.epoch_high for m in members)
            self.checks += 1


OPS = st.lists(st.tuples(st.sampled_from(["join", "beat", "beat", "all", "withhold", "leave", "static",
                                          "tick", "expire", "grow"]),
                         st.integers(0, 4)), min_size=10, max_size=60)


@given(OPS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_kip1071_the_counts_kept_by_replay_match_a_look_at_every_member(ops):
    ctx = Checked()
    inputs = 4
    set_topics(ctx, input=inputs, app_by_word_repartition=4, app_counts_changelog=4)
    app = Streams(ctx)
    app.hb("m0")
    for op, i in ops:
        member = f"m{i}"
        if op == "join" and member not in app.epoch:
            app.hb(member)
        elif op == "static" and member not in app.epoch:
            app.hb(member, instance=f"i{i}")
        elif op == "beat" and member in app.epoch:
            app.hb(member)
        elif op == "all":
            for m in sorted(app.epoch):
                app.hb(m)
        elif op == "withhold" and member in app.epoch:
            app.hb(member, report=False)     # no task lists: revocations stay pending
        elif op == "leave" and member in app.epoch:
            app.leave(member)
        elif op == "tick":
            ctx.advance(500)
        elif op == "expire":
            ctx.advance(SESSION + 1)          # every member that did not beat meanwhile goes
            app.epoch.clear()
            app.held.clear()
        elif op == "grow":
            inputs += 1
            set_topics(ctx, input=inputs, app_by_word_repartition=4, app_counts_changelog=4)
    assert ctx.checks > 0
