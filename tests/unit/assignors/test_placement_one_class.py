"""`place` with one class of members (everyone shares a subscription, a consumer group's usual
shape) takes a shorter path: no copy of every member's holdings, one topic's claims read in
two passes. It must give what the general path gives, leave its input alone, and hand back
the very mapping of a member whose holdings stand (which is what lets the consumer protocol
find the members whose target moved at C speed)."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.placement import place

TOPICS = ("a", "b", "c")


@st.composite
def one_class_groups(draw):
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))
    counts = {t: draw(st.integers(0, 12)) for t in topics}
    n = draw(st.integers(1, 9))
    sub = frozenset(topics)
    if draw(st.booleans()):
        # A settled group, then someone joins or leaves: the join storm's shape.
        current = place([sub] * n, counts, [{}] * n)
        if draw(st.booleans()):
            current.insert(draw(st.integers(0, n)), {})
        elif n > 1:
            del current[draw(st.integers(0, n - 1))]
    else:
        # Anything: stale, overlapping, out of range, empty, lists, unsubscribed topics.
        parts = st.lists(st.integers(-1, 13), max_size=4).map(sorted)
        claim = st.one_of(parts.map(tuple), parts.map(tuple), parts)
        current = draw(st.lists(st.dictionaries(st.sampled_from(TOPICS + ("gone",)), claim, max_size=2),
                                min_size=n, max_size=n))
    return [sub] * len(current), counts, current


@settings(max_examples=400, deadline=None)
@given(one_class_groups())
def test_one_class_places_as_the_general_path_does(group) -> None:
    subs, counts, current = group
    before = copy.deepcopy(current)
    got = place(subs, counts, current)
    assert current == before, "place changed its input"
    # A member of a second class on a topic of its own does not change what the first class
    # gets, but takes the general path (several classes).
    general = place([*subs, frozenset({"other"})], {**counts, "other": 1}, [*copy.deepcopy(current), {}])
    assert got == general[:-1]
    assert [list(d) for d in got] == [list(d) for d in general[:-1]]      # and the same order


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 40), st.integers(1, 120), st.data())
def test_a_join_gives_back_the_holdings_that_stand_as_they_are(n, partitions, data) -> None:
    sub = frozenset({"t"})
    settled = place([sub] * n, {"t": partitions}, [{}] * n)
    current = [*settled]
    current.insert(data.draw(st.integers(0, n)), {})
    got = place([sub] * (n + 1), {"t": partitions}, current)
    for old, new in zip(current, got):
        # Unchanged holdings: the same object; changed ones: a new dict, the old untouched.
        assert (new is old) == (new == old)
    assert sorted(p for d in got for p in d.get("t", ())) == list(range(partitions))
