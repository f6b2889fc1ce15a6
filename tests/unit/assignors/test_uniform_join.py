"""`uniform_join.join`: one member joining a balanced one-class placement, worked out from the
few members that give partitions up. It must give exactly what `place()` over every member
gives: the same holdings for every member (the unchanged ones untouched), over random groups,
member ids that sort anywhere, and chains of joins that follow one another."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.assignors.placement import place
from kgroup.assignors.uniform_join import balanced, join

TOPICS = ("a", "b", "c")
member_ids = st.text("mnopq", min_size=1, max_size=4)


def placed(ids: list[str], counts: dict[str, int], current: dict[str, dict]) -> dict[str, dict]:
    """place() over `ids` in sorted order, as UniformAssignor calls it."""
    order = sorted(ids)
    sub = frozenset(counts)
    got = place([sub] * len(order), counts, [current.get(m, {}) for m in order])
    return dict(zip(order, got))


def sizes_of(holdings: dict[str, dict], ids) -> list[int]:
    return [sum(map(len, holdings[m].values())) for m in ids]


@st.composite
def groups(draw):
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True))
    counts = {t: draw(st.integers(1, 30)) for t in topics}
    if draw(st.booleans()):
        counts[topics[0]] = draw(st.integers(100, 400))   # a small group on many partitions
    ids = draw(st.lists(member_ids, min_size=1, max_size=25, unique=True))
    joiners = draw(st.lists(member_ids.filter(lambda m: m not in ids), min_size=1, max_size=6, unique=True))
    # Settled by joins one at a time (the order members came in) or all at once.
    if draw(st.booleans()):
        holdings = placed(ids, counts, {})
    else:
        holdings = {}
        for k in range(1, len(ids) + 1):
            holdings = placed(ids[:k], counts, holdings)
    return counts, holdings, joiners


@settings(max_examples=400, deadline=None)
@given(groups())
def test_a_chain_of_joins_places_as_place_does(group) -> None:
    counts, holdings, joiners = group
    total = sum(counts.values())
    state = balanced(sorted(holdings), sizes_of(holdings, sorted(holdings)), total)
    assert state is not None, "place() left a one-class group unbalanced"
    for joiner in joiners:
        expected = placed([*holdings, joiner], counts, holdings)
        asked: list[str] = []

        def holdings_of(member: str) -> dict:
            asked.append(member)
            return holdings[member]

        before = {m: dict(h) for m, h in holdings.items()}
        got = join(state, joiner, holdings_of)
        assert got is not None
        state, changes = got
        assert holdings == before, "join changed the holdings it was given"
        moved = {m for m in expected if expected[m] != holdings.get(m)} | {joiner}
        assert set(changes) == moved
        assert set(asked) == moved - {joiner}          # only the givers are looked up
        for m, h in changes.items():
            assert h == expected[m], m
        holdings = {**holdings, **changes}
        assert state == balanced(sorted(holdings), sizes_of(holdings, sorted(holdings)), total)


def test_a_member_already_placed_or_an_empty_group_is_not_a_join() -> None:
    state = balanced(["a", "b"], [2, 1], 3)
    assert state is not None and state.high == ("a",)
    assert join(state, "b", lambda m: {}) is None
    assert balanced([], [], 0) is None


def test_an_unbalanced_or_incomplete_placement_has_no_state() -> None:
    assert balanced(["a", "b"], [3, 1], 4) is None      # 3 and 1: not floor/ceil
    assert balanced(["a", "b"], [1, 1], 3) is None      # a partition nobody holds
    assert balanced(["a", "b", "c"], [2, 2, 0], 4) is None


def test_a_join_of_1000_partitions_moves_only_what_the_joiner_takes() -> None:
    counts = {"t": 1000}
    ids = [f"m{i:04d}" for i in range(400)]
    holdings = placed(ids, counts, {})
    state = balanced(ids, sizes_of(holdings, ids), 1000)
    got = join(state, "m0200x", holdings.__getitem__)
    assert got is not None
    _, changes = got
    # 400 members hold 2 or 3; at 401 the floor stays 2: the joiner takes 2 from 2 members.
    assert len(changes) == 3 and sum(map(len, changes["m0200x"].values())) == 2
    assert changes == {m: h for m, h in placed([*ids, "m0200x"], counts, holdings).items() if m in changes}


def test_a_small_group_on_many_partitions_is_followed_too() -> None:
    """A join that lowers every member's share by more than one (3 -> 4 members on 5,000
    partitions): everyone gives, the first ones in id order keep one more."""
    counts = {"t": 5000}
    ids = ["a", "b", "c"]
    holdings = placed(ids, counts, {})
    got = join(balanced(ids, sizes_of(holdings, ids), 5000), "ab", holdings.__getitem__)
    assert got is not None
    state, changes = got
    assert set(changes) == {"a", "ab", "b", "c"}
    assert changes == {m: h for m, h in placed([*ids, "ab"], counts, holdings).items()}
    assert state.high == () and sum(map(len, changes["ab"].values())) == 1250
