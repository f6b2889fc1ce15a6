"""Timers: the earliest deadline, and when a kept wake-up must be looked at again.

A shard keeps one wake-up at `next_deadline()` and, after each request, asks
`take_earliest_armed()` whether anything armed since may come before it; when the answer is
"no" it keeps the wake-up without finding the earliest deadline again. That is only right if
the true earliest deadline is never before the kept wake-up then: a wake-up may be early (a
deadline moved later), never late.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from kgroup.core.timers import Timers

keys = st.sampled_from(["a", "b", "c", "d"])
ops = st.lists(st.one_of(
    st.tuples(st.just("schedule"), keys, st.integers(0, 100)),
    st.tuples(st.just("extend"), keys, st.integers(0, 100)),
    st.tuples(st.just("cancel"), keys, st.just(0)),
    st.tuples(st.just("fire"), keys, st.just(0)),
), max_size=60)


@settings(max_examples=1000, deadline=None)
@given(ops=ops)
def test_a_kept_wake_up_is_never_later_than_the_earliest_deadline(ops):
    timers = Timers()
    wake = None      # the deadline the kept wake-up is set for (None: none set)
    for op, key, t in ops:
        if op == "schedule":
            timers.schedule(key, t, op)
        elif op == "extend":
            timers.extend(key, t)
        elif op == "cancel":
            timers.cancel(key)
        else:            # the wake-up fires: the shard then sets it afresh
            wake = None
        earlier = timers.take_earliest_armed()
        if wake is not None and (earlier is None or earlier >= wake):
            true = timers.next_deadline()
            assert true is None or true >= wake, "the kept wake-up would be late"
        else:
            wake = timers.next_deadline()


def test_pushing_a_deadline_later_is_not_reported_and_an_earlier_one_is():
    timers = Timers()
    timers.schedule("a", 50, "op")
    assert timers.take_earliest_armed() == 50
    assert timers.take_earliest_armed() is None          # taken: forgotten
    timers.extend("a", 80)
    assert timers.take_earliest_armed() is None          # later: a kept wake-up is merely early
    timers.schedule("b", 60, "op")
    timers.schedule("c", 70, "op")
    assert timers.take_earliest_armed() == 60
    timers.extend("a", 10)
    assert timers.take_earliest_armed() == 10
