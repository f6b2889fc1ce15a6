"""The server-side `uniform` assignor (KIP-848), the consumer protocol's default.

Spreads partitions so member counts differ by at most one where subscriptions allow, and
keeps each member's current target partitions where it can. Identical subscriptions take a
fast path (one class in `placement.py`): a member joining a balanced group of N with P
partitions takes floor(P/(N+1)) partitions and nothing else moves; a member leaving hands
on exactly what it held. Mixed subscriptions are balanced class by class.

It also follows joins (`JoinFollower`): from a one-class result in balance (`settled`), one
member joining with the same subscription is worked out from the members that give it
partitions (`join`, see `uniform_join.py`), exactly as `assign` would place it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter

from kgroup.assignors import uniform_join
from kgroup.assignors.placement import Parts, place
from kgroup.assignors.spec import GroupSpec


@dataclass(frozen=True, slots=True)
class Settled:
    """A one-class result in balance: the class's subscription and the placement's state."""

    subscribed: frozenset[str]
    placement: uniform_join.Balanced


class UniformAssignor:
    """KIP-848 `uniform` server-side assignor."""

    name = "uniform"

    def assign(
        self, spec: GroupSpec, topics: Mapping[str, int]
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """Target assignment: member id -> topic key -> sorted partitions."""
        ids = sorted(spec.members)
        members = list(map(spec.members.__getitem__, ids))
        # Passes over every member at C speed (10,000 members and more).
        subs = list(map(_SUBSCRIBED, members))
        if not all(map(isinstance, subs, repeat(frozenset))):
            subs = [s if isinstance(s, frozenset) else frozenset(s) for s in subs]
        result = place(subs, topics, list(map(_ASSIGNMENT, members)))
        return dict(zip(ids, result))

    def settled(self, spec: GroupSpec, topics: Mapping[str, int],
                result: Mapping[str, Mapping[str, Parts]]) -> Settled | None:
        """Where `join` can start from after `result` (this assignor's answer to `spec`):
        every member subscribed alike and the result in balance; else None."""
        subs = set(map(_SUBSCRIBED, spec.members.values()))
        if len(subs) != 1:
            return None
        sub = subs.pop()
        ids = sorted(result)
        sizes = [sum(map(len, result[m].values())) for m in ids]
        placement = uniform_join.balanced(ids, sizes, sum(topics.get(t, 0) for t in sub))
        return Settled(frozenset(sub), placement) if placement is not None else None

    def join(self, settled: Settled, joiner: str, subscribed: frozenset[str],
             holdings: Callable[[str], Mapping[str, Parts]]) -> tuple[Settled, dict[str, dict[str, Parts]]] | None:
        """One member joining with nothing and `subscribed` topics: the new state and the new
        holdings of the members whose holdings change (`assign` would give the same), or
        None when `assign` must run over everyone."""
        if subscribed != settled.subscribed:
            return None
        got = uniform_join.join(settled.placement, joiner, holdings)
        if got is None:
            return None
        placement, changes = got
        return Settled(settled.subscribed, placement), changes


_SUBSCRIBED = attrgetter("subscribed_topics")
_ASSIGNMENT = attrgetter("assignment")
