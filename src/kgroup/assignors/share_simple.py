"""The server-side `simple` assignor of share groups (KIP-932).

Members of a share group may share a partition: each record goes to one member at a time,
so a partition with several members is consumed cooperatively. Per topic, with its
subscribers sorted by member id:

- fewer subscribers than partitions: each gets a contiguous run of P/N partitions (the
  first P mod N one more), every partition exactly once;
- at least as many subscribers as partitions: subscriber k gets partition (k + r) mod P,
  so every partition has floor(N/P) or ceil(N/P) members and every member gets one.

`r` rotates with the topic's position among the group's topics, so many one-partition
topics do not all land on the first members. Pure and deterministic (no dict or set order).
It is not registered with the consumer protocol's assignors: it gives partitions to several
members, which a consumer group must never do.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.assignors.spec import GroupSpec


class SimpleShareAssignor:
    """KIP-932 `simple` share-group assignor."""

    name = "simple"

    def assign(
        self, spec: GroupSpec, topics: Mapping[str, int]
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """Target assignment: member id -> topic key -> sorted partitions."""
        out: dict[str, dict[str, list[int]]] = {mid: {} for mid in sorted(spec.members)}
        for rotation, topic in enumerate(sorted(topics)):
            count = topics[topic]
            subscribers = [mid for mid in sorted(spec.members) if topic in spec.members[mid].subscribed_topics]
            n = len(subscribers)
            if n == 0 or count <= 0:
                continue
            if n < count:
                base, extra = divmod(count, n)
                start = 0
                for k, mid in enumerate(subscribers):
                    size = base + (1 if k < extra else 0)
                    out[mid][topic] = list(range(start, start + size))
                    start += size
            else:
                for k, mid in enumerate(subscribers):
                    out[mid][topic] = [(k + rotation) % count]
        return {mid: {t: tuple(sorted(ps)) for t, ps in sorted(assigned.items())}
                for mid, assigned in out.items()}
