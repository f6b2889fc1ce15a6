"""The server-side `range` assignor (KIP-848).

Per topic, the subscribers (static members first by instance id, then by member id) split
the partitions into contiguous runs: P // N each, the first P % N one more. It is sticky:
a member keeps up to its quota of the partitions it holds in its current target, and the
free partitions fill the remaining quotas in member order. Because every topic is handled
by the same deterministic rule, topics with the same subscribers and partition count come
out co-partitioned (partition i of each goes to the same member) whenever their current
assignments are (always, for a fresh group).
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain, compress, repeat
from operator import ge, getitem, gt, itemgetter, not_, setitem

from kgroup.assignors.passes import drain
from kgroup.assignors.spec import GroupSpec, MemberSpec


def _unchanged(parts_list: list[tuple[int, ...]], n: int, n_subs: int) -> bool:
    """Whether the holders' current runs of a topic are exactly what the sticky rule keeps.

    True when they are tuples that partition range(n) and each holder has q or q + 1 of
    them (q = n // n_subs, at least one), with every subscriber holding when q > 0: then
    the exactly n % n_subs holders of q + 1 keep them all and nothing is free to deal.
    """
    if not parts_list:
        return False
    q = n // n_subs
    try:
        lens = list(map(tuple.__len__, parts_list))  # TypeError unless all are tuples
    except TypeError:
        return False
    if min(lens) < (q or 1) or max(lens) > q + 1 or (q and len(parts_list) != n_subs):
        return False
    flat = list(chain.from_iterable(parts_list))
    if len(flat) != n or min(flat) < 0 or max(flat) >= n:
        return False
    return len(set(flat)) == n


def _sticky_fast(n: int, q: int, extra: int, positions: list[int], parts: list[tuple[int, ...]],
                 subscribers: list[int]) -> tuple[list[int], list[tuple[int, ...]]] | None:
    """The sticky rule of ``assign`` for one topic in whole-list passes: the members (in
    ``out`` positions) that get partitions and what they get; None if it does not apply.

    ``positions``/``parts`` are the holders in member order with non-empty tuples. It applies
    when those runs are disjoint and within range(n) (a valid current target), so none is
    cut short by an earlier one: what each keeps then depends only on its length, and only
    members short of their quota are visited one by one.
    """
    flat = list(chain.from_iterable(parts))
    if min(flat) < 0 or max(flat) >= n or len(set(flat)) != len(flat):
        return None
    lens = list(map(len, parts))
    # Keep: up to q each, q + 1 for the first `extra` holders of more than q.
    if max(lens) > q:
        over = list(compress(range(len(lens)), map(gt, lens, repeat(q))))
        caps = list(map(min, lens, repeat(q)))
        for i in over[:extra]:
            caps[i] = q + 1
        extra -= min(extra, len(over))
        parts = list(map(getitem, parts, map(slice, caps)))
        lens = caps
    have = dict(zip(positions, parts))
    have_len = list(map(dict(zip(positions, lens)).get, subscribers, repeat(0)))
    # Fill: the first `extra` subscribers holding at most q go to q + 1, the rest to q.
    bumped = set(compress(range(len(subscribers)), map(ge, repeat(q), have_len)))
    if len(bumped) > extra:
        bumped = set(sorted(bumped)[:extra])
    short = sorted(bumped.union(compress(range(len(subscribers)), map(gt, repeat(q), have_len))))
    if short:
        seen = set(chain.from_iterable(parts))
        pool = sorted(set(range(n)).difference(seen))
        at = 0
        for j in short:
            need = (q + 1 if j in bumped else q) - have_len[j]
            pos = subscribers[j]
            have[pos] = tuple(sorted(have.get(pos, ()) + tuple(pool[at:at + need])))
            at += need
    got = [(pos, ps) for pos, ps in have.items() if ps]
    return list(map(itemgetter(0), got)), list(map(itemgetter(1), got))


def _order_key(m: MemberSpec) -> tuple[int, str, str]:
    if m.instance_id is not None:
        return (0, m.instance_id, m.member_id)
    return (1, m.member_id, "")


class ServerRangeAssignor:
    """KIP-848 `range` server-side assignor."""

    name = "range"

    def assign(
        self, spec: GroupSpec, topics: Mapping[str, int]
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """Target assignment: member id -> topic key -> sorted partitions."""
        members = sorted(spec.members.values(), key=_order_key)
        n_members = len(members)
        # Subscriber lists per topic, built from classes of equal subscriptions so that
        # identical subscriptions cost one list, not one per topic.
        class_of: dict[frozenset[str], int] = {}
        class_pos: list[list[int]] = []
        class_subs: list[frozenset[str]] = []
        member_class: list[int] = []
        for pos, m in enumerate(members):
            sub = m.subscribed_topics
            if not isinstance(sub, frozenset):
                sub = frozenset(sub)
            c = class_of.get(sub)
            if c is None:
                c = class_of[sub] = len(class_pos)
                class_pos.append([])
                class_subs.append(sub)
            class_pos[c].append(pos)
            member_class.append(c)
        topic_classes: dict[str, list[int]] = {}
        for c, sub in enumerate(class_subs):
            for t in sub:
                if topics.get(t, 0) > 0:
                    topic_classes.setdefault(t, []).append(c)
        class_valid = [frozenset(t for t in sub if t in topic_classes) for sub in class_subs]
        subscriber_cache: dict[tuple[int, ...], list[int]] = {}

        def subscribers_of(t: str) -> list[int]:
            key = tuple(topic_classes[t])
            subs = subscriber_cache.get(key)
            if subs is None:
                subs = subscriber_cache[key] = sorted(p for c in key for p in class_pos[c])
            return subs

        # Current targets turned around to topic -> holders in member order. The per-topic
        # appends run inside map() (C speed): at 10k members x 1M partitions there is one
        # (member, topic) pair per held run, far too many for a Python-level loop.
        assigns = [m.assignment for m in members]
        held_parts: dict[str, list[tuple[int, ...]]] = {t: [] for t in topic_classes}
        held_pos: dict[str, list[int]] = {t: [] for t in topic_classes}
        clean = [False] * n_members  # every topic it holds is subscribed and exists
        for pos, a in enumerate(assigns):
            if not a:
                continue
            allowed = class_valid[member_class[pos]]
            if a.keys() <= allowed:
                clean[pos] = True
                keys, values = a.keys(), a.values()
            else:
                keys = [t for t in a if t in allowed]
                values = [a[t] for t in keys]
            drain(map(list.append, map(held_parts.__getitem__, keys), values))
            drain(map(list.append, map(held_pos.__getitem__, keys), repeat(pos)))

        # A topic whose current targets already are a range split with the right quotas
        # comes out unchanged, so its holders keep their tuples as they are. Only the other
        # topics are worked out below.
        ordered = sorted(topic_classes)
        rework = [t for t in ordered
                  if not _unchanged(held_parts[t], topics[t], len(subscribers_of(t)))]
        redo = frozenset(rework)
        out: list[dict[str, tuple[int, ...]]] = []
        for pos, a in enumerate(assigns):
            if not a:
                out.append({})
            elif clean[pos] and (not redo or a.keys().isdisjoint(redo)):
                out.append(dict(a))
            elif clean[pos]:
                # Everything but the reworked topics, in order, filtered at C speed.
                out.append(dict(compress(a.items(), map(not_, map(redo.__contains__, a)))))
            else:
                allowed = class_valid[member_class[pos]]
                out.append({t: p for t, p in a.items() if t in allowed and t not in redo})

        fresh_cache: dict[tuple[int, int], tuple[list[dict], list[tuple[int, ...]]]] = {}
        kept_cache: dict[tuple, tuple[list[int], list[tuple[int, ...]]] | None] = {}
        for t in rework:
            n = topics[t]
            subscribers = subscribers_of(t)
            q, extra = divmod(n, len(subscribers))
            positions, parts_of = held_pos[t], held_parts[t]
            try:
                plain = bool(parts_of) and min(map(tuple.__len__, parts_of)) > 0
            except TypeError:
                plain = False
            if plain:
                # Holders with the same runs (co-partitioned topics, whose runs are shared
                # tuples) come out the same: the first such topic is worked out, the rest
                # reuse it.
                key = (id(subscribers), n, tuple(positions), tuple(parts_of))
                if key in kept_cache:
                    got = kept_cache[key]
                else:
                    got = kept_cache[key] = _sticky_fast(n, q, extra, positions, parts_of,
                                                         subscribers)
                if got is not None:
                    drain(map(setitem, map(out.__getitem__, got[0]), repeat(t), got[1]))
                    continue
            held = [(pos, tuple(parts))
                    for pos, parts in zip(positions, parts_of) if parts]
            if not held:
                # Contiguous runs in member order. Topics with the same subscribers and
                # partition count share the run tuples (they are immutable).
                ck = (id(subscribers), n)
                runs = fresh_cache.get(ck)
                if runs is None:
                    dicts: list[dict[str, tuple[int, ...]]] = []
                    parts_list: list[tuple[int, ...]] = []
                    start = 0
                    for j, pos in enumerate(subscribers):
                        size = q + 1 if j < extra else q
                        if not size:
                            break
                        dicts.append(out[pos])
                        parts_list.append(tuple(range(start, start + size)))
                        start += size
                    runs = fresh_cache[ck] = (dicts, parts_list)
                drain(map(setitem, runs[0], repeat(t), runs[1]))
                continue
            # Sticky: keep up to quota, holders of more than q get the extras first.
            seen: set[int] = set()
            kept: dict[int, tuple[int, ...]] = {}
            for pos, parts in held:  # built in member order
                if parts[0] >= 0 and parts[-1] < n and seen.isdisjoint(parts):
                    valid = parts  # the common case: a sorted, valid current target
                else:
                    valid = tuple(p for p in sorted(set(parts)) if 0 <= p < n and p not in seen)
                if len(valid) > q and extra:
                    extra -= 1
                    valid = valid[:q + 1]
                else:
                    valid = valid[:q]
                if valid:
                    kept[pos] = valid
                    seen.update(valid)
            pool = sorted(set(range(n)).difference(seen))
            at = 0
            for pos in subscribers:
                if at >= len(pool) and not kept:
                    break
                have = kept.pop(pos, ())
                target = q
                if len(have) <= q and extra:
                    target = q + 1
                    extra -= 1
                need = target - len(have)
                if need > 0:
                    have = tuple(sorted(have + tuple(pool[at:at + need])))
                    at += need
                if have:
                    out[pos][t] = have
        return {m.member_id: a for m, a in zip(members, out)}
