"""Replication factors in a cluster: what a topic's replication factor means in kgroup, and
the replicas Metadata reports for each partition.

The nodes of a cluster share one data dir, so a record is durable once it is in that dir
(per `fsync`), whichever node wrote it; there are no follower copies to keep in sync. A
topic still has a replication factor — between 1 and the number of nodes in `--cluster`
(-1: 1, Kafka's default.replication.factor) — because applications and test suites create
topics with the factor their production cluster uses, and check what Metadata reports.

Replicas of partition p (its placement index, placement.py): `rf` nodes of the cluster's
sorted node list, starting at p's preferred node and going round; if the partition has
moved to a node outside that list (its preferred node is down and the placement dealt it
elsewhere), the leader is put first and the list keeps `rf` nodes. The in-sync replicas are
the live ones (every live node reads the same files), the offline ones those that are down.
A manual assignment in CreateTopics or CreatePartitions is checked as Kafka checks it (known
nodes, none twice, none empty, one replication factor for the topic) and gives the topic its
replication factor; which node leads a partition is still the placement's choice.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

DEFAULT_REPLICATION_FACTOR = 1


def replica_set(index: int, nodes: Sequence[int], live: Collection[int], leader: int | None,
                replication_factor: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, in-sync replicas, offline replicas) of the partition with placement index
    `index`, among the cluster's `nodes` (sorted), with the current `leader` (None while it
    moves)."""
    n = len(nodes)
    rf = max(1, min(replication_factor, n))
    start = index % n
    ring = [nodes[(start + k) % n] for k in range(rf)]
    if leader is not None and leader not in ring:
        ring = [leader, *ring[:rf - 1]]
    replicas = tuple(ring)
    in_sync = tuple(r for r in replicas if r in live)
    offline = tuple(r for r in replicas if r not in live)
    return replicas, in_sync, offline


def replication_problem(replication_factor: int, node_count: int) -> str | None:
    """Why a requested replication factor cannot be had (Kafka's words), or None."""
    if replication_factor == -1 or 1 <= replication_factor <= node_count:
        return None
    if replication_factor < 1:
        return "Replication factor must be larger than 0, or -1 to use the default value."
    return (f"Unable to replicate the partition {replication_factor} time(s): The target replication factor "
            f"of {replication_factor} cannot be reached because only {node_count} broker(s) are registered "
            "or some brokers have all their log directories cordoned.")


def assignment_problem(broker_ids: Sequence[int], nodes: Collection[int]) -> str | None:
    """Why one partition's manual replica list is refused (Kafka's words), or None."""
    if not broker_ids:
        return "The manual partition assignment includes an empty replica list."
    seen: set[int] = set()
    for b in broker_ids:
        if b not in nodes:
            return f"The manual partition assignment includes broker {b}, but no such broker is registered."
        if b in seen:
            return f"The manual partition assignment includes the broker {b} more than once."
        seen.add(b)
    return None


def inconsistent_factors(expected: int, lists: Sequence[Sequence[int]], first: int) -> str | None:
    """Kafka's refusal when the replica lists of a topic (numbered from `first`) differ in
    length from `expected`, or None."""
    odd = [(first + i, len(ids)) for i, ids in enumerate(lists) if len(ids) != expected]
    if not odd:
        return None
    return (f"Inconsistent replication factor between partitions, partition 0 has "
            f"{expected} while partitions [{', '.join(str(p) for p, _ in odd)}] have replication factors "
            f"[{', '.join(str(k) for _, k in odd)}], respectively.")
