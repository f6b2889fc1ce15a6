"""Balanced, sticky placement of partitions onto members: the engine behind `uniform`,
`sticky` and `cooperative-sticky`.

How this works. Members with the same (effective) subscription form a *class*; inside a
class members are interchangeable, so the problem splits in two:

1. Class level: decide how many partitions of each topic each class gets (`alloc`). Start
   from what the class already holds (stickiness), pour the unowned partitions of each topic
   into its subscribing classes by water-filling on partitions-per-member (most constrained
   topics first), then move partitions between classes while a member of one class would
   hold two more than a member of another class subscribed to the same topic. Each such
   move lowers the sum of squared member counts, so the loop ends.
2. Member level, per class: every member gets floor or ceil of the class total; members
   that already hold more than the floor get the extra ones first; each keeps as many of
   its current partitions as its quota and the class budget per topic allow; the partitions
   nobody kept are dealt in (topic, partition) order to members short of their quota.

With one class (identical subscriptions) step 1 is trivial and step 2 moves exactly the
partitions that must move: when a member joins a balanced group of N with P partitions,
floor(P/(N+1)); when one leaves, exactly what it held. A fresh assignment comes out as
contiguous runs in member order, like Kafka's uniform assignor.

Hot loops work on whole tuples, slices and ranges, never one partition at a time, except
where a topic is partly owned and its free partitions have to be found. Passes over all
members (copying and checking current holdings, quotas, what is kept) run inside map()
and friends at C speed; Python-level loops only visit members that lose or gain partitions.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from functools import partial
from itertools import chain, compress, repeat
from operator import gt, is_not, le, lt, not_

from kgroup.assignors.passes import drain

Parts = tuple[int, ...]


_DICT = {dict}
_IS_SOME = partial(is_not, None)


def _own(held: list[dict[str, Parts]], i: int) -> dict[str, Parts]:
    """Member i's holdings as a dict of place()'s own, to change in place (`held` starts
    out holding the caller's mappings)."""
    mine = held[i] = dict(held[i])
    return mine


def _claimed_set(plist: list[Parts], n_t: int) -> set[int] | None:
    """The partitions claimed on a topic, if the claims are valid (non-empty tuples of
    distinct partitions in range), else None. The set is built once here and used again for
    the topic's free partitions (`_free_partitions`)."""
    try:
        lens = list(map(tuple.__len__, plist))  # TypeError unless all are tuples
    except TypeError:
        return None
    if not min(lens):
        return None
    taken = set(chain.from_iterable(plist))
    if len(taken) != sum(lens) or min(taken) < 0 or max(taken) >= n_t:
        return None
    return taken


def _clean_claims(t: str, n_t: int, who: list[int], held: list[dict[str, Parts]]) -> None:
    """Drop the invalid claims on topic t; the first member in order keeps an overlap."""
    keepers = []
    for i in who:
        parts = held[i][t]
        if parts and (min(parts) < 0 or max(parts) >= n_t):
            parts = tuple(p for p in parts if 0 <= p < n_t)
        if not parts:
            del held[i][t]
            continue
        held[i][t] = tuple(parts)
        keepers.append(i)
    total = 0
    seen: set[int] = set()
    for i in keepers:
        parts = held[i][t]
        total += len(parts)
        seen.update(parts)
    if total != len(seen):
        # Why: overlapping claims are invalid input; the first member in order keeps a
        # partition, the rest lose it, so the output stays a partition of the topic.
        seen = set()
        for i in keepers:
            keep = tuple(sorted(p for p in set(held[i][t]) if p not in seen))
            seen.update(keep)
            if keep:
                held[i][t] = keep
            else:
                del held[i][t]


def place(
    subscriptions: Sequence[Hashable],
    counts: Mapping[str, int],
    current: Sequence[Mapping[str, Sequence[int]]],
) -> list[dict[str, Parts]]:
    """Assign every partition of every subscribed topic to exactly one subscriber.

    `subscriptions[i]` is member i's subscribed topics as a hashable collection (frozenset
    or sorted tuple); `current[i]` is what member i holds now (topic -> sorted partitions),
    which may be stale or overlap other members'. Member order breaks every tie, so callers
    pass members in a defined order. Returns one topic -> sorted partitions dict per member:
    for a member whose holdings stand, the very dict it came with (so callers find who moved
    by identity, and must not change the result in place when they keep their input).
    """
    classes = _Classes(subscriptions, counts)
    held, hold_idx, hold_parts, taken = _valid_holdings(classes, current, counts)
    alloc, topic_classes, claimed, class_held = _allocate(classes, hold_idx, hold_parts, counts)
    quota, kept_total, kept_class, dropped = _keep(classes, held, hold_parts, alloc, class_held)
    pools = _free_partitions(topic_classes, counts, claimed, dropped, taken)
    _deal(classes, held, alloc, quota, kept_total, kept_class, pools)
    return held


class _Classes:
    """1. Classes of members with the same effective subscription (its topics that exist)."""

    __slots__ = ("topics", "members", "member_class", "topic_sets")

    def __init__(self, subscriptions: Sequence[Hashable], counts: Mapping[str, int]) -> None:
        class_by_topics: dict[tuple[str, ...], int] = {}
        self.topics: list[tuple[str, ...]] = []
        self.members: list[list[int]] = []
        # Distinct subscriptions first (a dict keeps first-seen order; frozensets cache their
        # hash), then each member's class at C speed.
        class_of_sub: dict[Hashable, int] = {}
        for sub in dict.fromkeys(subscriptions):
            topics = tuple(sorted({t for t in sub  # type: ignore[attr-defined]
                                   if counts.get(t, 0) > 0}))  # a set: a topic may be listed twice
            c = class_by_topics.get(topics)
            if c is None:
                c = len(self.topics)
                class_by_topics[topics] = c
                self.topics.append(topics)
                self.members.append([])
            class_of_sub[sub] = c
        if len(self.topics) == 1:
            # One class (members share a subscription, the usual case): no pass in Python.
            self.member_class = [0] * len(subscriptions)
            self.members[0] = list(range(len(subscriptions)))
        else:
            self.member_class = list(map(class_of_sub.__getitem__, subscriptions))
            for i, c in enumerate(self.member_class):
                self.members[c].append(i)
        self.topic_sets = [frozenset(ts) for ts in self.topics]


def _valid_holdings(classes: _Classes, current: Sequence[Mapping[str, Sequence[int]]], counts: Mapping[str, int],
                    ) -> tuple[list[dict[str, Parts]], dict[str, list[int]], dict[str, list[Parts]], dict[str, set[int]]]:
    """2. Valid current holdings: subscribed, existing partitions, each held once; with
    topic -> holders, topic -> their claims and topic -> the set of claimed partitions.

    The members' dicts are turned around to topic -> holders at C speed (one class on one
    topic: just that topic's claims); each topic is then checked as a whole, and only a topic
    with invalid claims (out of range, overlapping, empty or not tuples) is cleaned up holder
    by holder."""
    n_members = len(classes.member_class)
    member_class = classes.member_class
    hold_idx: dict[str, list[int]] = {}
    hold_parts: dict[str, list[Parts]] = {}
    taken: dict[str, set[int]] = {}
    if not any(current):  # a fresh group: nothing to check
        return [{} for _ in range(n_members)], hold_idx, hold_parts, taken
    # The members' own mappings, not copies: every step that changes a member's holdings
    # replaces its entry with a new dict (`_own` before a change in place), so a member
    # whose holdings stand is given back the very mapping it came with.
    held = list(current) if set(map(type, current)) <= _DICT else list(map(dict, current))
    one_class = len(classes.topics) == 1
    hold_parts = _one_topic_claims(classes, held) if one_class and len(classes.topics[0]) == 1 else None
    if hold_parts is None:
        allowed = map(classes.topic_sets.__getitem__, member_class) if not one_class \
            else repeat(classes.topic_sets[0])
        fits = list(map(le, map(dict.keys, held), allowed))
        if not all(fits):
            for i in compress(range(n_members), map(not_, fits)):
                allowed = classes.topic_sets[member_class[i]]
                held[i] = {t: p for t, p in held[i].items() if t in allowed}
        hold_parts = {t: [] for t in chain.from_iterable(classes.topics)}
        if not one_class:
            # Who holds each topic: only several classes need it (`_allocate`).
            hold_idx = {t: [] for t in hold_parts}
            lens_per_member = list(map(len, held))
            drain(map(list.append, map(hold_idx.__getitem__, chain.from_iterable(held)),
                       chain.from_iterable(map(repeat, range(n_members), lens_per_member))))
        drain(map(list.append, map(hold_parts.__getitem__, chain.from_iterable(held)),
                   chain.from_iterable(map(dict.values, held))))
    for t, plist in hold_parts.items():
        if not plist:
            continue
        claims = _claimed_set(plist, counts[t])
        if claims is None:
            if t not in hold_idx:
                hold_idx[t] = [i for i in range(n_members) if t in held[i]]
            for i in hold_idx[t]:
                _own(held, i)
            _clean_claims(t, counts[t], hold_idx[t], held)
            hold_idx[t] = [i for i in hold_idx[t] if t in held[i]]
            hold_parts[t] = [held[i][t] for i in hold_idx[t]]
            claims = set(chain.from_iterable(hold_parts[t]))
        taken[t] = claims
    return held, hold_idx, hold_parts, taken


def _one_topic_claims(classes: _Classes, held: list[dict[str, Parts]]) -> dict[str, list[Parts]] | None:
    """Topic -> claims when every member subscribes to the same single topic (a consumer
    group's usual shape) and holds nothing else, else None: two passes instead of a
    turn-around of every member's dict."""
    t = classes.topics[0][0]
    claims = list(filter(_IS_SOME, map(dict.get, held, repeat(t))))
    if len(claims) != sum(map(len, held)):
        return None     # someone holds another topic: the general path drops it
    return {t: claims}


def _allocate(classes: _Classes, hold_idx: dict[str, list[int]], hold_parts: dict[str, list[Parts]],
              counts: Mapping[str, int]) -> tuple[list[dict[str, int]], dict[str, list[int]], dict[str, int],
                                                  list[dict[str, int]]]:
    """3. Class-level allocation: topic -> partitions per class (`alloc`), starting from what
    each class holds (`class_held`, summed per topic at C speed); with topic -> its classes
    and topic -> how many partitions members claim."""
    n_classes = len(classes.topics)
    member_class = classes.member_class
    alloc: list[dict[str, int]] = [{} for _ in range(n_classes)]
    topic_classes: dict[str, list[int]] = {}
    for c, topics in enumerate(classes.topics):
        for t in topics:
            topic_classes.setdefault(t, []).append(c)
    claimed: dict[str, int] = {}
    class_held: list[dict[str, int]] = [{} for _ in range(n_classes)]
    for t, plist in hold_parts.items():
        if not plist:
            continue
        lens = list(map(len, plist))
        claimed[t] = sum(lens)
        cs = topic_classes[t]
        if len(cs) == 1:
            class_held[cs[0]][t] = claimed[t]
            continue
        holder_class = list(map(member_class.__getitem__, hold_idx[t]))
        for c in cs:
            got = sum(compress(lens, map(c.__eq__, holder_class)))
            if got:
                class_held[c][t] = got
    if n_classes == 1 or all(len(cs) == 1 for cs in topic_classes.values()):
        for t, cs in topic_classes.items():
            alloc[cs[0]][t] = counts[t]
    else:
        _allocate_classes(alloc, topic_classes, classes.members, class_held, counts)
    return alloc, topic_classes, claimed, class_held


def _keep(classes: _Classes, held: list[dict[str, Parts]], hold_parts: dict[str, list[Parts]],
          alloc: list[dict[str, int]], class_held: list[dict[str, int]],
          ) -> tuple[list[int], list[int], list[dict[str, int]], dict[str, list[int]]]:
    """4. Member level, per class: each member's quota and what it keeps of what it holds
    (`held` is cut down to it); partitions a member held but does not keep are collected in
    `dropped`. Returns (quota, kept_total, kept_class, dropped)."""
    n_members = len(held)
    quota = [0] * n_members
    kept_total = [0] * n_members
    kept_class: list[dict[str, int]] = [{} for _ in range(len(classes.topics))]
    dropped: dict[str, list[int]] = {}
    if not hold_parts:
        haves = [0] * n_members
    elif len(hold_parts) == 1:
        # One topic (see `_one_topic_claims`): what each holds of it is all it holds.
        haves = list(map(len, map(dict.get, held, repeat(next(iter(hold_parts))), repeat(()))))
    else:
        haves = list(map(sum, map(map, repeat(len), map(dict.values, held))))
    for c, members in enumerate(classes.members):
        total = sum(alloc[c].values())
        if not total:
            for i in members:
                for t, parts in held[i].items():
                    dropped.setdefault(t, []).extend(parts)
                held[i] = {}
            continue
        _quotas(members, total, haves, quota)
        budget = dict(alloc[c])
        mine_held = class_held[c]
        if all(budget.get(t, 0) >= k for t, k in mine_held.items()):
            kept_class[c] = dict(mine_held)
            _keep_within_quota(members, held, haves, quota, kept_total, kept_class[c], dropped)
        else:
            _keep_within_budget(members, held, quota, kept_total, kept_class[c], budget, dropped)
    return quota, kept_total, kept_class, dropped


def _quotas(members: list[int], total: int, haves: list[int], quota: list[int]) -> None:
    """Every member of a class gets floor or ceil of the class total; members that already
    hold more than the floor get the extra ones first."""
    q, extra = divmod(total, len(members))
    everyone = len(members) == len(quota)   # one class: members are 0..n-1
    if everyone:
        quota[:] = repeat(q, len(quota))
    else:
        drain(map(quota.__setitem__, members, repeat(q)))
    if extra:
        for i in compress(members, map(q.__lt__, haves if everyone else map(haves.__getitem__, members))):
            quota[i] = q + 1
            extra -= 1
            if not extra:
                break
    if extra:
        for i in members:
            if quota[i] == q:
                quota[i] = q + 1
                extra -= 1
                if not extra:
                    break


def _keep_within_quota(members: list[int], held: list[dict[str, Parts]], haves: list[int], quota: list[int],
                       kept_total: list[int], here: dict[str, int], dropped: dict[str, list[int]]) -> None:
    """The class budget cannot run out: everyone keeps all it holds up to its quota, so only
    members over quota are looked at (`here` starts as all the class holds)."""
    if len(members) == len(quota):   # one class: members are 0..n-1
        my_haves, my_quotas = haves, quota
        kept_total[:] = map(min, haves, quota)
    else:
        my_haves = list(map(haves.__getitem__, members))
        my_quotas = list(map(quota.__getitem__, members))
        drain(map(kept_total.__setitem__, members, map(min, my_haves, my_quotas)))
    for i in compress(members, map(gt, my_haves, my_quotas)):
        room = quota[i]
        mine = held[i]
        kept: dict[str, Parts] = {}
        for t in sorted(mine):
            parts = mine[t]
            take = min(len(parts), room)
            if take < len(parts):
                dropped.setdefault(t, []).extend(parts[take:])
                here[t] -= len(parts) - take
                if take <= 0:
                    continue
                parts = parts[:take]
            kept[t] = parts
            room -= take
        held[i] = kept


def _keep_within_budget(members: list[int], held: list[dict[str, Parts]], quota: list[int], kept_total: list[int],
                        here: dict[str, int], budget: dict[str, int], dropped: dict[str, list[int]]) -> None:
    """Each member keeps as many of its partitions as its quota and the class budget per
    topic allow, in member order."""
    for i in members:
        mine = held[i]
        if not mine:
            continue
        room = quota[i]
        kept = {}
        for t in sorted(mine):
            parts = mine[t]
            take = min(len(parts), room, budget.get(t, 0))
            if take < len(parts):
                dropped.setdefault(t, []).extend(parts[max(take, 0):])
                if take <= 0:
                    continue
                parts = parts[:take]
            kept[t] = parts
            budget[t] -= take
            room -= take
            here[t] = here.get(t, 0) + take
        held[i] = kept
        kept_total[i] = quota[i] - room


def _free_partitions(topic_classes: dict[str, list[int]], counts: Mapping[str, int], claimed: dict[str, int],
                     dropped: dict[str, list[int]], taken: dict[str, set[int]]) -> dict[str, Sequence[int]]:
    """5. The free partitions of each topic, in order. When every partition was claimed (a
    member joining a settled group), they are exactly the dropped ones: no pass over the
    whole topic."""
    pools: dict[str, Sequence[int]] = {}
    for t in topic_classes:
        n_t = counts[t]
        drop = dropped.get(t)
        k = claimed.get(t, 0) - (len(drop) if drop else 0)
        if k == n_t:
            continue
        if not k:
            pools[t] = range(n_t)
        elif claimed[t] == n_t:
            pools[t] = sorted(drop)   # type: ignore[arg-type]  (k < n_t: some were dropped)
        else:
            free = set(range(n_t)).difference(taken[t])
            if drop:
                free.update(drop)
            pools[t] = sorted(free)
    return pools


def _deal(classes: _Classes, held: list[dict[str, Parts]], alloc: list[dict[str, int]], quota: list[int],
          kept_total: list[int], kept_class: list[dict[str, int]], pools: dict[str, Sequence[int]]) -> None:
    """6. Deal the free partitions to members short of their quota, class by class, in
    (topic, partition) order."""
    pool_pos = dict.fromkeys(pools, 0)
    for c, members in enumerate(classes.members):
        needs = [(t, alloc[c][t] - kept_class[c].get(t, 0)) for t in classes.topics[c]
                 if t in pools and alloc[c].get(t, 0) > kept_class[c].get(t, 0)]
        if not needs:
            continue
        ti = 0
        t_name, t_left = needs[0]
        # Only members short of their quota (kept < quota), found at C speed.
        for i in compress(members, map(lt, map(kept_total.__getitem__, members),
                                       map(quota.__getitem__, members))):
            short = quota[i] - kept_total[i]
            mine = _own(held, i)
            while short > 0:
                while t_left == 0:
                    ti += 1
                    t_name, t_left = needs[ti]
                take = short if short < t_left else t_left
                pos = pool_pos[t_name]
                chunk = pools[t_name][pos:pos + take]
                pool_pos[t_name] = pos + take
                t_left -= take
                short -= take
                old = mine.get(t_name)
                if old:
                    mine[t_name] = tuple(sorted(old + tuple(chunk)))
                else:
                    mine[t_name] = tuple(chunk)


def _allocate_classes(
    alloc: list[dict[str, int]],
    topic_classes: dict[str, list[int]],
    class_members: list[list[int]],
    class_held: list[dict[str, int]],
    counts: Mapping[str, int],
) -> None:
    """Fill `alloc` (class -> topic -> count) balanced across classes and sticky."""
    size = [len(ms) for ms in class_members]
    load = [0] * len(class_members)
    for c, got in enumerate(class_held):
        alloc[c].update(got)
        load[c] = sum(got.values())
    order = sorted(topic_classes, key=lambda t: (len(topic_classes[t]), t))
    # Pour each topic's unowned partitions into its classes, lowest per-member load first.
    for t in order:
        cs = topic_classes[t]
        free = counts[t] - sum(alloc[c].get(t, 0) for c in cs)
        if free <= 0:
            continue
        gift = _water_fill(free, [(load[c], size[c]) for c in cs])
        for c, g in zip(cs, gift):
            if g:
                alloc[c][t] = alloc[c].get(t, 0) + g
                load[c] += g
    # Move partitions between classes while a member of one would hold two more than a
    # member of another that subscribes to the same topic.
    multi = [t for t in order if len(topic_classes[t]) > 1]
    changed = True
    while changed:
        changed = False
        for t in multi:
            cs = topic_classes[t]
            while True:
                src = dst = -1
                hi = -1
                lo = -1
                for c in cs:
                    if alloc[c].get(t, 0) > 0:
                        top = -(-load[c] // size[c])
                        if top > hi:
                            hi, src = top, c
                    bottom = load[c] // size[c]
                    if dst < 0 or bottom < lo:
                        lo, dst = bottom, c
                if src < 0 or hi <= lo + 1:
                    break
                # Largest k such that moving units 0..k-1 each still fixes a violation.
                a, b, na, nb = load[src], load[dst], size[src], size[dst]
                limit = alloc[src][t]
                k_lo, k_hi = 1, limit
                while k_lo < k_hi:
                    mid = (k_lo + k_hi + 1) // 2
                    i = mid - 1
                    if -(-(a - i) // na) >= (b + i) // nb + 2:
                        k_lo = mid
                    else:
                        k_hi = mid - 1
                k = k_lo
                alloc[src][t] -= k
                alloc[dst][t] = alloc[dst].get(t, 0) + k
                load[src] -= k
                load[dst] += k
                changed = True


def _water_fill(amount: int, levels: list[tuple[int, int]]) -> list[int]:
    """Split `amount` over bins (load, members) so loads per member end as even as possible."""
    n = len(levels)
    order = sorted(range(n), key=lambda j: (levels[j][0] / levels[j][1], j))
    # Find the water line: raise the lowest bins together until `amount` is used.
    members_below = 0
    load_below = 0
    line = 0.0
    for pos, j in enumerate(order):
        load_j, size_j = levels[j]
        members_below += size_j
        load_below += load_j
        line = (load_below + amount) / members_below
        nxt = order[pos + 1] if pos + 1 < n else None
        if nxt is None or line <= levels[nxt][0] / levels[nxt][1]:
            break
    gift = [0] * n
    given = 0
    for j in order:
        load_j, size_j = levels[j]
        g = int(line * size_j) - load_j
        if g > 0:
            gift[j] = g
            given += g
    # Float rounding and floors leave a little over or under; settle it one unit at a time
    # on the bin whose per-member load is lowest (or highest, when taking back).
    while given < amount:
        j = min(range(n), key=lambda j: ((levels[j][0] + gift[j]) / levels[j][1], j))
        gift[j] += 1
        given += 1
    while given > amount:
        j = max((j for j in range(n) if gift[j]),
                key=lambda j: ((levels[j][0] + gift[j]) / levels[j][1], -j))
        gift[j] -= 1
        given -= 1
    return gift
