"""The plug-in interface every assignor implements.

A client-side assignor runs in the leader of a classic group: it turns the members' decoded
subscriptions into one ConsumerProtocol assignment per member. A server-side assignor runs
in the coordinator for consumer groups (KIP-848): it turns a group spec into a target
assignment. Both are pure functions of their inputs and must not depend on dict or set
iteration order.

A custom client-side assignor (Kafka's ConsumerPartitionAssignor, as Kafka Streams writes
one) is any object with ``name``, ``supported_protocols`` and ``assign``; give it to our
``Consumer`` in ``partition.assignment.strategy`` (a list of names and objects), or
register it by name. In ``assign`` the leader sees, for each member, its
``Subscription``: topics, ``user_data``, ``owned_partitions`` and ``generation_id`` (what it
owned and when, for stickiness and cooperative rebalancing), ``rack_id``; it returns an
``Assignment`` per member: partitions and ``user_data``. Two optional methods carry user
data end to end:

- ``subscription_user_data(topics) -> bytes | None``: what this member sends in its
  subscription (called at every JoinGroup); Kafka's ``subscriptionUserData``.
- ``on_assignment(assignment, generation)``: this member's whole ``Assignment``, user data
  included, before the rebalance listener runs; Kafka's ``onAssignment``. May be a
  coroutine function.

Members send one subscription per assignor they list, so each assignor's user data is its
own; the group uses the assignor every member lists (the first, by vote). An assignor
whose ``supported_protocols`` include ``COOPERATIVE`` must not move a partition straight
from one owner to another in one rebalance (leave it out; the next round assigns it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from kgroup.assignors.spec import Assignment, ClientMember, GroupSpec

EAGER = "eager"
COOPERATIVE = "cooperative"

# topic -> per-partition replica racks, as the leader learns them from Metadata.
PartitionRacks = Mapping[str, "tuple[frozenset[str], ...]"]


@runtime_checkable
class ClientAssignor(Protocol):
    """Runs in the classic-group leader; `name` is the protocol name members vote on.
    (Optional hooks ``subscription_user_data`` and ``on_assignment``: see the module.)"""

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
        """Target assignment: member id -> topic key -> sorted partitions. `spec` is read
        only: the coordinator hands the same MemberSpecs (and their `assignment` dicts) to
        the next assignment of the group."""
        ...


@runtime_checkable
class JoinFollower(Protocol):
    """A server assignor that can also work out one member's join from its last result,
    without going over every member (optional; the coordinator keeps the state between
    assignments and checks that nothing else changed)."""

    def settled(self, spec: GroupSpec, topics: Mapping[str, int],
                result: Mapping[str, Mapping[str, tuple[int, ...]]]) -> Any:
        """The state after `result` (this assignor's answer to `spec`), or None when joins
        cannot be followed from it."""
        ...

    def join(self, settled: Any, joiner: str, subscribed: frozenset[str],
             holdings: Callable[[str], Mapping[str, tuple[int, ...]]]) -> tuple[Any, dict] | None:
        """(new state, member -> new holdings of each member that changes) when `joiner`
        joins holding nothing, exactly as `assign` would place it; None: run `assign`."""
        ...
