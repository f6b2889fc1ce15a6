"""Server `range`: the whole-list sticky pass gives exactly what the member-by-member rule does.

`_sticky_fast` handles a topic whose holders' runs are valid (the common case) and its result
is reused for topics with the same runs; `assign` falls back to the careful loop otherwise.
Here the fast pass is switched off to get the careful loop's answer for the same input.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kgroup.assignors.server_range as server_range
from kgroup.assignors import GroupSpec, MemberSpec, get_server_assignor

TOPICS = ("a", "b", "c", "d")


@st.composite
def groups(draw):
    counts = {t: draw(st.integers(0, 12)) for t in TOPICS}
    n = draw(st.integers(1, 8))
    members = {}
    for i in range(n):
        subs = frozenset(draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
        current = {}
        for t in sorted(subs):
            if draw(st.booleans()):
                parts = draw(st.lists(st.integers(-1, 13), max_size=5, unique=True))
                current[t] = tuple(sorted(parts)) if draw(st.booleans()) else tuple(parts)
        members[f"m{i}"] = MemberSpec(f"m{i}", subs, assignment=current)
    return counts, members


@settings(max_examples=300, deadline=None)
@given(case=groups(), joiners=st.integers(0, 2), seed=st.integers(0, 3))
def test_fast_pass_matches_the_member_by_member_rule(case, joiners, seed):
    counts, members = case
    assignor = get_server_assignor("range")
    # A valid current target (what a running group has), then members join or leave.
    first = assignor.assign(GroupSpec(members), counts)
    spec = {m: MemberSpec(m, s.subscribed_topics, assignment=first[m]) for m, s in members.items()}
    for k in range(joiners):
        spec[f"new{k}"] = MemberSpec(f"new{k}", frozenset(TOPICS[seed % 4:] or TOPICS))
    if seed == 3 and len(spec) > 1:
        spec.pop(sorted(spec)[0])
    for group in (GroupSpec(members), GroupSpec(spec)):
        fast = assignor.assign(group, counts)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(server_range, "_sticky_fast", lambda *args: None)
            careful = assignor.assign(group, counts)
        assert fast == careful
        assert [list(a) for a in fast.values()] == [list(a) for a in careful.values()]
