"""The plug-in interface every assignor implements.

A client-side assignor runs in the leader of a classic group: it turns the members' decoded
subscriptions into one ConsumerProtocol assignment per member. A server-side assignor runs
in the coordinator for consumer groups (KIP-848): it turns a group spec into a target
assignment. Both are pure functions of their inputs and must not depend on dict or set
iteration order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from kgroup.assignors.spec import Assignment, ClientMember, GroupSpec

EAGER = "eager"
COOPERATIVE = "cooperative"

# topic -> per-partition replica racks, as the leader learns them from Metadata.
PartitionRacks = Mapping[str, "tuple[frozenset[str], ...]"]


@runtime_checkable
class ClientAssignor(Protocol):
    """Runs in the classic-group leader; `name` is the protocol name members vote on."""

    name: str
    # Rebalance protocols it supports, preferred first (KIP-429).
    supported_protocols: tuple[str, ...]

    def assign(
        self,
        members: Mapping[str, ClientMember],
        partitions_per_topic: Mapping[str, int],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """One assignment per member id."""
        ...


@runtime_checkable
class ServerAssignor(Protocol):
    """Runs in the coordinator for consumer groups; `name` is what members ask for."""

    name: str

    def assign(
        self, spec: GroupSpec, topics: Mapping[str, int]
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """Target assignment: member id -> topic key -> sorted partitions."""
        ...
