"""NodeView: what the request handlers need to know about the cluster, from ownership.py."""

from __future__ import annotations

from kgroup.broker.cluster.ownership import Ownership, UnitState


class NodeView:
    """Leaders, coordinators and brokers as this node sees them (a `ClusterView`)."""

    def __init__(self, ownership: Ownership, addresses: dict[int, tuple[str, int]]) -> None:
        self.ownership = ownership
        self.addresses = addresses
        self.node_id = ownership.me

    def leader(self, slot: int) -> int | None:
        """The node that serves unit `slot` now, or None while it moves."""
        return self.ownership.owner(slot)

    def loading(self, slot: int) -> bool:
        """Whether this node is taking unit `slot` over right now."""
        return self.ownership.state(slot) is UnitState.LOADING

    def address(self, node: int) -> tuple[str, int]:
        return self.addresses[node]

    def brokers(self) -> dict[int, tuple[str, int]]:
        return {n: self.addresses[n] for n in sorted(self.ownership.liveness.reachable())}

    def fenced(self) -> None:
        self.ownership.check_fences()
