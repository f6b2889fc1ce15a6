"""The classic `sticky` and `cooperative-sticky` assignors (KIP-54, KIP-429).

Both compute a balanced assignment (partition counts differ by at most one where
subscriptions allow) that keeps as many partitions as possible where they are, using the
engine in `placement.py`. They differ in where ownership comes from and what is handed out:

- `sticky` is eager: members revoke everything before joining, so ownership travels in the
  subscription's user data (StickyAssignorUserData: previous assignment + generation); a
  subscription without user data falls back to its owned partitions and generation id.
- `cooperative-sticky` reads the subscription's owned partitions (v1+) and generation id
  (v2+, else a 4-byte generation in user data). It never hands a partition to a member while
  another member still claims it: such partitions are withheld this round, their owner
  revokes them, and the follow-up rebalance assigns them.

Claims are resolved per partition: a claim from a newer generation beats older ones; two
claims in the same (newest) generation make the partition invalid and it is treated as
unowned.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from kgroup.assignors.consumer_protocol import ConsumerProtocolError, decode_sticky_user_data
from kgroup.assignors.builtin_client import BuiltinClientAssignor
from kgroup.assignors.interface import COOPERATIVE, EAGER, PartitionRacks
from kgroup.assignors.placement import place
from kgroup.assignors.spec import (
    ClientMember, Subscription, TopicPartitions, topic_lists, topic_partitions,
)

Claims = dict[str, tuple[int, ...]]


def eager_claim(sub: Subscription) -> tuple[int, Claims]:
    """(generation, owned partitions) an eager sticky member reports."""
    if sub.user_data:
        try:
            owned, generation = decode_sticky_user_data(sub.user_data)
        except ConsumerProtocolError:
            # Kafka ignores user data it cannot parse: the member is treated as owning nothing.
            return -1, {}
        return generation, _merge(owned)
    return sub.generation_id, _merge(sub.owned_partitions)


def cooperative_claim(sub: Subscription) -> tuple[int, Claims]:
    """(generation, owned partitions) a cooperative-sticky member reports."""
    generation = sub.generation_id
    if generation == -1 and sub.user_data and len(sub.user_data) == 4:
        # Before subscription v2 the Java client put the generation in user data.
        (generation,) = struct.unpack(">i", sub.user_data)
    return generation, _merge(sub.owned_partitions)


def _merge(items) -> Claims:
    out: dict[str, set[int]] = {}
    for topic, parts in items:
        out.setdefault(topic, set()).update(parts)
    return {t: tuple(sorted(ps)) for t, ps in out.items()}


def resolve_claims(claims: list[tuple[int, Claims]]) -> list[Claims]:
    """Valid ownership per member: newest generation wins, a same-generation tie voids it."""
    resolved: list[Claims] = [dict(c) for _, c in claims]
    by_topic: dict[str, list[int]] = {}
    for i, (_, c) in enumerate(claims):
        for t in c:
            by_topic.setdefault(t, []).append(i)
    for t, who in by_topic.items():
        if len(who) == 1:
            continue
        seen: set[int] = set()
        total = 0
        for i in who:
            total += len(claims[i][1][t])
            seen.update(claims[i][1][t])
        if total == len(seen):
            continue
        # Overlap: settle each partition by generation.
        winner: dict[int, tuple[int, int]] = {}
        for i in who:
            gen = claims[i][0]
            for p in claims[i][1][t]:
                prev = winner.get(p)
                if prev is None or gen > prev[0]:
                    winner[p] = (gen, i)
                elif gen == prev[0]:
                    winner[p] = (gen, -1)
        keep: dict[int, list[int]] = {i: [] for i in who}
        for p, (_, i) in winner.items():
            if i >= 0:
                keep[i].append(p)
        for i in who:
            if keep[i]:
                resolved[i][t] = tuple(sorted(keep[i]))
            else:
                del resolved[i][t]
    return resolved


class StickyAssignor(BuiltinClientAssignor):
    """Kafka's eager `sticky` client-side assignor."""

    name = "sticky"
    cooperative = False

    def _claim(self, sub: Subscription) -> tuple[int, Claims]:
        return eager_claim(sub)

    def _order(self, members: Mapping[str, ClientMember]) -> list[ClientMember]:
        # By member id: stickiness, not Kafka's static-first order, decides who gets what.
        return [members[m] for m in sorted(members)]

    def _place(self, order: list[ClientMember], partitions_per_topic: Mapping[str, int],
               partition_racks: PartitionRacks | None) -> list[TopicPartitions]:
        claims = [self._claim(m.subscription) for m in order]
        valid = resolve_claims(claims)
        # The topic tuples themselves (place() accepts any hashable collection): a frozenset
        # per member costs a second at 10,000 members x 1,000 topics.
        keys, which = topic_lists(order)
        subs = list(map(keys.__getitem__, which))
        counts = {t: n for t, n in partitions_per_topic.items() if n > 0}
        result = place(subs, counts, valid)
        if self.cooperative:
            _withhold_moving(result, claims)
        return list(map(topic_partitions, result))


class CooperativeStickyAssignor(StickyAssignor):
    """Kafka's `cooperative-sticky` client-side assignor."""

    name = "cooperative-sticky"
    supported_protocols = (COOPERATIVE, EAGER)
    cooperative = True

    def _claim(self, sub: Subscription) -> tuple[int, Claims]:
        return cooperative_claim(sub)


def _withhold_moving(result: list[dict[str, tuple[int, ...]]],
                     claims: list[tuple[int, Claims]]) -> None:
    """Drop from each member the partitions some other member still claims (in place)."""
    claimed: dict[str, set[int]] = {}
    contested: dict[str, set[int]] = {}
    for _, c in claims:
        for t, parts in c.items():
            seen = claimed.setdefault(t, set())
            dup = seen.intersection(parts)
            if dup:
                contested.setdefault(t, set()).update(dup)
            seen.update(parts)
    for i, mine in enumerate(result):
        own = claims[i][1]
        for t in list(mine):
            others = claimed.get(t)
            if not others:
                continue
            parts = mine[t]
            own_t = own.get(t, ())
            bad = set(parts).difference(own_t).intersection(others)
            doubly = contested.get(t)
            if doubly:
                bad.update(doubly.intersection(parts).intersection(own_t))
            if bad:
                kept = tuple(p for p in parts if p not in bad)
                if kept:
                    mine[t] = kept
                else:
                    del mine[t]
