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

from kgroup.assignors.spec import GroupSpec, MemberSpec


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
        subscriber_cache: dict[tuple[int, ...], list[int]] = {}

        holders: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for pos, m in enumerate(members):
            sub = class_subs[member_class[pos]]
            for t, parts in m.assignment.items():
                if parts and t in sub and t in topic_classes:
                    holders.setdefault(t, []).append((pos, tuple(parts)))

        out: list[dict[str, tuple[int, ...]]] = [{} for _ in range(n_members)]
        for t in sorted(topic_classes):
            n = topics[t]
            key = tuple(topic_classes[t])
            subscribers = subscriber_cache.get(key)
            if subscribers is None:
                subscribers = sorted(p for c in key for p in class_pos[c])
                subscriber_cache[key] = subscribers
            q, extra = divmod(n, len(subscribers))
            held = holders.get(t)
            if not held:
                start = 0
                for j, pos in enumerate(subscribers):
                    size = q + 1 if j < extra else q
                    if not size:
                        break
                    out[pos][t] = tuple(range(start, start + size))
                    start += size
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
