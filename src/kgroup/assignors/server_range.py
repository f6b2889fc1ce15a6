"""The server-side `range` assignor (KIP-848), as Apache Kafka 4.4's.

Per topic, its subscribers in one order (static members first by instance id, then dynamic
members by member id) split the partitions into contiguous runs: P // N each, the first
P % N one more. The current assignment plays no part: a member's runs follow from its place
in that order alone, so topics with the same subscribers and partition count come out
co-partitioned (partition i of each goes to the same member), and a join or a leave moves
the runs of the members after it, as in Kafka 4.4 (reconciliation revokes before it hands a
partition over). Kafka's is no longer sticky; neither is this (docs/conformance.md,
`consumer_range_not_sticky`).
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
        out: list[dict[str, tuple[int, ...]]] = [{} for _ in members]
        # Members with the same subscription form a class, so a topic's subscribers are
        # found per class, not per member: at 10k members x 1k topics most groups have one.
        class_of: dict[frozenset[str], int] = {}
        class_pos: list[list[int]] = []
        for pos, m in enumerate(members):
            sub = m.subscribed_topics
            if not isinstance(sub, frozenset):
                sub = frozenset(sub)
            c = class_of.get(sub)
            if c is None:
                c = class_of[sub] = len(class_pos)
                class_pos.append([])
            class_pos[c].append(pos)
        topic_classes: dict[str, list[int]] = {}
        for sub, c in class_of.items():
            for t in sub:
                if topics.get(t, 0) > 0:
                    topic_classes.setdefault(t, []).append(c)
        # Topics with the same subscribers and partition count get the same runs (shared,
        # immutable tuples: co-partitioned), so each member is handed its run for all of
        # them in one C-speed update instead of one store per topic (at 10k members x 1M
        # partitions that is 1,000 updates instead of a million stores).
        alike: dict[tuple[tuple[int, ...], int], list[str]] = {}
        for t in sorted(topic_classes):
            alike.setdefault((tuple(sorted(topic_classes[t])), topics[t]), []).append(t)
        subscribers_of: dict[tuple[int, ...], list[dict[str, tuple[int, ...]]]] = {}
        for (key, n), names in alike.items():
            dicts = subscribers_of.get(key)
            if dicts is None:
                positions = sorted(p for c in key for p in class_pos[c])
                dicts = subscribers_of[key] = [out[p] for p in positions]
            q, extra = divmod(n, len(dicts))
            start = 0
            for j, d in enumerate(dicts):
                size = q + 1 if j < extra else q
                if not size:
                    break
                d.update(dict.fromkeys(names, tuple(range(start, start + size))))
                start += size
        return {m.member_id: a for m, a in zip(members, out)}
