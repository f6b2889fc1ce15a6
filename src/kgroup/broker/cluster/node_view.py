"""NodeView: what the request handlers need to know about the cluster, from ownership.py."""

from __future__ import annotations

from kgroup.broker.cluster.ownership import Ownership, UnitState
from kgroup.broker.cluster.placement import preferred_owner


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

    # ---- moves (AlterPartitionReassignments, ElectLeaders: admin/reassignments_api.py) ------

    @property
    def nodes(self) -> list[int]:
        """Every node of the cluster, sorted (a single broker: itself)."""
        return self.ownership.nodes

    def live(self) -> set[int]:
        return self.ownership.liveness.live() | {self.node_id}

    def preferred(self, slot: int) -> int:
        """The node unit `slot` belongs on when every node is up (placement.py)."""
        return preferred_owner(self.ownership.data.units()[slot], self.ownership.nodes)

    def moved_to(self, slot: int) -> int | None:
        """The node a move (moves.json) sends unit `slot` to, or None: it follows the placement."""
        return self.ownership.moves.current().get(slot)

    def move(self, slot: int, node: int) -> None:
        """Move unit `slot` to `node`: its holder hands it over cleanly and `node` takes it
        (ownership.py); moving it to its preferred node ends an earlier move."""
        self.ownership.move(slot, node)
