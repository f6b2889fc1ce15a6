"""A custom consumer assignor: co-partition topics, with user data both ways.

    .venv/bin/python examples/assignors/copartition.py --members 3

Partition i of every subscribed topic goes to the same member, as a join of ``orders`` and
``payments`` keyed alike needs (Kafka Streams co-partitions the same way). It shows the
whole client-side assignor interface of ``kgroup.assignors.interface``:

- ``assign`` (in the leader) sees each member's subscription: topics, user data, owned
  partitions; it returns each member's partitions and user data;
- ``subscription_user_data`` is what this member sends: the partition numbers it had and
  the generation they came from, so any new leader keeps numbers where they were (an eager
  member owns nothing when it rejoins, so owned partitions cannot say it);
- ``on_assignment`` receives this member's assignment with the leader's user data: who
  holds which partition number, for routing a lookup to the member that has the data
  (Streams' partitionsByHost).

Partition numbers are spread by ``kgroup.assignors.tasks``, the balanced, sticky task
assignor that ``TaskAssignment`` uses. Give each consumer its own ``CoPartitionAssignor``:
it remembers that consumer's numbers.

Run as a script against ``make run``: it creates two topics of 6 partitions, starts
``--members`` consumers one after another in the group ``copartition-demo``, prints who got
what after each join, and closes them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Mapping

from kgroup.assignors import EAGER, Assignment, ClientMember
from kgroup.assignors.tasks import TaskClaim, assign_tasks


class CoPartitionAssignor:
    """Partition i of every topic to one member; see the module comment."""

    name = "copartition"
    supported_protocols = (EAGER,)

    def __init__(self) -> None:
        self.numbers: tuple[int, ...] = ()            # this member's partition numbers
        self.generation = -1
        self.owners: dict[int, str] = {}               # partition number -> member id

    # -- in every member --------------------------------------------------------------------

    def subscription_user_data(self, topics: tuple[str, ...]) -> bytes:
        return json.dumps({"numbers": list(self.numbers), "generation": self.generation}).encode()

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        numbers = {p for _, parts in assignment.partitions for p in parts}
        self.numbers = tuple(sorted(numbers))
        self.generation = generation
        owners = json.loads(assignment.user_data or b"{}")
        self.owners = {int(n): member for n, member in owners.items()}

    # -- in the leader ------------------------------------------------------------------------

    def assign(self, members: Mapping[str, ClientMember],
               partitions_per_topic: Mapping[str, int],
               partition_racks: object = None) -> dict[str, Assignment]:
        count = max(partitions_per_topic.values(), default=0)
        claims = {}
        for mid, member in members.items():
            try:
                data = json.loads(member.subscription.user_data or b"{}")
                claims[mid] = TaskClaim(tuple(str(n) for n in data.get("numbers", ())),
                                        int(data.get("generation", -1)))
            except (ValueError, TypeError, AttributeError):
                claims[mid] = TaskClaim()                # not ours: it starts afresh
        plan = assign_tasks((str(n) for n in range(count)), claims)
        owners = {int(n): mid for mid, ns in plan.assignments.items() for n in ns}
        user_data = json.dumps({str(n): owners[n] for n in sorted(owners)}).encode()
        out = {}
        for mid, member in sorted(members.items()):
            mine = sorted(int(n) for n in plan.assignments.get(mid, ()))
            partitions = tuple(
                (topic, tuple(p for p in mine if p < partitions_per_topic[topic]))
                for topic in sorted(member.subscription.topics) if topic in partitions_per_topic)
            out[mid] = Assignment(tuple((t, ps) for t, ps in partitions if ps), user_data)
        return out


async def demo(bootstrap: str, members: int, topics: tuple[str, ...]) -> None:
    from kgroup.client import AdminClient, Consumer
    from kgroup.client.errors import BrokerError
    from kgroup.error_codes import ErrorCode

    async with AdminClient(bootstrap) as admin:
        for topic in topics:
            try:
                await admin.create_topics({topic: 6})
            except BrokerError as exc:
                if exc.code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise
    consumers = []
    try:
        for i in range(members):
            consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "copartition-demo",
                                 "client.id": f"demo-{i}", "session.timeout.ms": 6000,
                                 "partition.assignment.strategy": [CoPartitionAssignor()]})
            await consumer.start()
            consumer.subscribe(topics)
            consumers.append(consumer)
            await settle(consumers, 6 * len(topics))
            print(f"-- {len(consumers)} member(s)")
            for c in consumers:
                print(f"{c.settings['client.id']}: " + ", ".join(
                    f"{tp.topic}-{tp.partition}" for tp in sorted(c.assignment())))
    finally:
        for c in consumers:
            await c.close()


async def settle(consumers: list, total: int, timeout: float = 30.0) -> None:
    """Poll every consumer until each partition has exactly one owner and each consumer
    some (with at most 6 members)."""
    async with asyncio.timeout(timeout):
        while True:
            for c in consumers:
                await c.getmany(timeout_ms=100)
            owned = [tp for c in consumers for tp in c.assignment()]
            if len(owned) == total == len(set(owned)) and all(c.assignment() for c in consumers):
                return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KGROUP_BOOTSTRAP", "127.0.0.1:9092"),
                        help="the broker (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--topics", default="copartition-orders,copartition-payments")
    args = parser.parse_args(argv)
    asyncio.run(demo(args.bootstrap, args.members, tuple(args.topics.split(","))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
