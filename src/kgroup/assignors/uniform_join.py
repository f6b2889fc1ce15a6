"""One member joining a balanced one-class `uniform` placement, in O(what moves).

Why. With the consumer protocol every join bumps the group epoch, and without an assignment
interval every bump computes a new target: N members joining one group run the assignor N
times over up to N members. `place()` keeps those passes at C speed, but at 1,000 members
they were still three quarters of the coordinator's work in a join. Most of them only find
out what this module knows in advance: which few members give partitions to the joiner.

How this works. When every member subscribes to the same topics (one class), `place()`
leaves the group balanced: with P partitions over N members, everyone holds q = P // N or
q + 1, and `Balanced.high` (sorted) are those with q + 1. When one member with nothing
joins, place() gives every member the floor q' = P // (N + 1), hands the e' = P % (N + 1)
extra ones to the first members (in id order) that hold more than q', keeps a prefix of each
member's partitions (in (topic, partition) order) up to its quota, and deals what was given
up, in order, to the only member short of its quota: the joiner. So:

- q' == q: the members holding q + 1 keep it while the extras last; the last q of them (in
  id order) give up one partition each, and nothing else moves.
- q' < q: every member holds more than q', so the first e' members in id order keep
  q' + 1 and every member after them keeps q'; each gives up the rest (with q' == q - 1 a
  member holding q + 1 of the first e' gives up one, one after them one or two). A floor that
  drops by more than one only happens in a small group (N below about the square root of P),
  which is the one case that goes over every member.

Members' order is the sorted member ids, as `UniformAssignor` passes them to place().
`tests/unit/assignors/test_uniform_join.py` holds `join` to place() over random groups and
chains of joins.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress

Parts = tuple[int, ...]
Holdings = Mapping[str, Parts]


@dataclass(frozen=True, slots=True)
class Balanced:
    """A one-class placement in balance: `ids` sorted, `high` (sorted) the members holding
    one more than `total // len(ids)`, every one of the class's `total` partitions held once."""

    ids: tuple[str, ...]
    high: tuple[str, ...]
    total: int


def balanced(ids: Sequence[str], sizes: Sequence[int], total: int) -> Balanced | None:
    """The state of a one-class placement of `total` partitions in which member ids[i]
    (ids sorted, distinct) holds sizes[i], if it is balanced; else None."""
    if not ids or sum(sizes) != total:
        return None
    q, extra = divmod(total, len(ids))
    if min(sizes) < q or max(sizes) > q + 1:
        return None
    high = tuple(compress(ids, map(q.__lt__, sizes)))
    return Balanced(tuple(ids), high, total) if len(high) == extra else None


def join(state: Balanced, joiner: str, holdings: Callable[[str], Holdings],
         ) -> tuple[Balanced, dict[str, dict[str, Parts]]] | None:
    """What place() gives when `joiner` (holding nothing) joins the group `state` describes:
    the new state and the new holdings of every member whose holdings change (the joiner
    always among them). `holdings(member)` is a member's current topic -> sorted partitions;
    it is asked only of the members that give partitions up. None for a member already
    placed or a group of none."""
    ids, high, total = state.ids, state.high, state.total
    at = bisect_left(ids, joiner)
    if not ids or (at < len(ids) and ids[at] == joiner):
        return None
    q = total // len(ids)
    floor, extra = divmod(total, len(ids) + 1)
    if floor == q:
        gives = dict.fromkeys(high[extra:], 1)
        new_high = high[:extra]
    elif floor == q - 1:
        gives = dict.fromkeys(ids[extra:], 1)
        for member in high:
            gives[member] = gives.get(member, 0) + 1
        new_high = ids[:extra]
    else:
        # A small group gaining a large share: every member gives, down to the new floor (the
        # first `extra` in id order to one more); few members, so one pass over them.
        highs = set(high)
        gives = {}
        for rank, member in enumerate(ids):
            k = q + (member in highs) - floor - (rank < extra)
            if k:
                gives[member] = k
        new_high = ids[:extra]
    given: dict[str, list[int]] = {}
    changes = {member: _give_up(holdings(member), k, given) for member, k in gives.items()}
    changes[joiner] = {t: tuple(sorted(given[t])) for t in sorted(given)}
    return Balanced(ids[:at] + (joiner,) + ids[at:], new_high, total), changes


def _give_up(mine: Holdings, k: int, given: dict[str, list[int]]) -> dict[str, Parts]:
    """A member keeps all but its last k partitions in (topic, partition) order, as place()
    keeps a prefix up to the quota; the rest go into `given`."""
    kept = dict(mine)
    for t in sorted(mine, reverse=True):
        parts = mine[t]
        if len(parts) > k:
            kept[t] = parts[:-k]
            given.setdefault(t, []).extend(parts[-k:])
            break
        del kept[t]
        given.setdefault(t, []).extend(parts)
        k -= len(parts)
        if not k:
            break
    return kept
