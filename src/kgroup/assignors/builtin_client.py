"""What the built-in client-side assignors (range, roundrobin, sticky) share.

Each walks the members in an order and places partitions for them by its own rule; the
answer is then one Assignment per member id, with no user data. A subclass says the order
(`_order`, Kafka's member order by default) and the rule (`_place`: one topic -> partitions
tuple per member, in the wire shape). Third-party assignors need not use this: the
interface is `ClientAssignor`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.assignors.interface import EAGER, PartitionRacks
from kgroup.assignors.member_order import ordered_members
from kgroup.assignors.spec import Assignment, ClientMember, TopicPartitions


class BuiltinClientAssignor:
    """A `ClientAssignor`: `assign` orders the members and answers what `_place` placed."""

    name: str
    supported_protocols: tuple[str, ...] = (EAGER,)

    def assign(
        self,
        members: Mapping[str, ClientMember],
        partitions_per_topic: Mapping[str, int],
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """One assignment per member id."""
        order = self._order(members)
        placed = self._place(order, partitions_per_topic, partition_racks)
        return {m.member_id: Assignment(a, None) for m, a in zip(order, placed)}

    def _order(self, members: Mapping[str, ClientMember]) -> list[ClientMember]:
        return ordered_members(members)

    def _place(self, order: list[ClientMember], partitions_per_topic: Mapping[str, int],
               partition_racks: PartitionRacks | None) -> list[TopicPartitions]:
        """Per member of `order`, its topic -> sorted partitions, topics sorted."""
        raise NotImplementedError
