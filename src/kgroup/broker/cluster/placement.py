"""Where each unit should live: the desired owner, computed alike on every node.

A unit (a group-metadata partition, or a topic partition; storage/data_dir.py) has a
placement index: its partition number. Among the cluster's nodes (sorted by id) its
preferred node is `nodes[index mod N]`. When that node is down, its units are dealt over the
live nodes in turn: the k-th unit the down node prefers (k = index div N) goes to the k-th
live node, wrapping around. Every node that sees the same live set computes the same
answer; views that differ for a moment only delay a move, since a unit changes hands only
through its ownership epoch (storage/ownership.py), never because two nodes disagree.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def preferred_owner(index: int, nodes: Sequence[int]) -> int:
    """The node a unit belongs on when every node is up (`nodes` sorted)."""
    return nodes[index % len(nodes)]


def desired_owner(index: int, nodes: Sequence[int], live: Collection[int]) -> int | None:
    """The node that should own the unit with placement index `index`, given the live
    nodes; None when no node is live."""
    preferred = preferred_owner(index, nodes)
    if preferred in live:
        return preferred
    alive = [n for n in nodes if n in live]
    if not alive:
        return None
    return alive[(index // len(nodes)) % len(alive)]
