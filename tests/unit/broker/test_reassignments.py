"""AlterPartitionReassignments, ListPartitionReassignments and ElectLeaders over a real
data dir and a cluster of three nodes whose moves a test carries out by hand (`FakeMover`:
a move is asked; `finish` is the hand-over done), at every version served."""

from __future__ import annotations

import pytest

from kgroup.broker.admin.reassignments_api import ReassignmentsApi
from kgroup.broker.cluster.placement import preferred_owner
from tests.unit.broker.datactx import DataCtx, run
from tests.unit.broker.test_admin_apis import call, versions

APR, LPR, ELECT = 45, 46, 43


class FakeMover:
    """Three nodes; unit `slot` led by `leaders[slot]` (its preferred node at first)."""

    def __init__(self, ctx: DataCtx) -> None:
        self.nodes = [0, 1, 2]
        self.ctx = ctx
        self.leaders: dict[int, int | None] = {}
        self.moves: dict[int, int] = {}
        self.down: set[int] = set()
        self.auto = False          # finish every move as soon as it is asked

    def leader(self, slot: int) -> int | None:
        return self.leaders.get(slot, self.preferred(slot))

    def live(self) -> set[int]:
        return set(self.nodes) - self.down

    def preferred(self, slot: int) -> int:
        return preferred_owner(self.ctx.data.units()[slot], self.nodes)

    def moved_to(self, slot: int) -> int | None:
        return self.moves.get(slot)

    def move(self, slot: int, node: int) -> None:
        if node == self.preferred(slot):
            self.moves.pop(slot, None)
        else:
            self.moves[slot] = node
        if self.auto:
            self.leaders[slot] = node

    def finish(self, slot: int) -> None:
        self.leaders[slot] = self.moves.get(slot, self.preferred(slot))


def _reassign(topic: str, partition: int, replicas):
    return {"timeout": 30_000, "allow_replication_factor_change": True,
            "topics": [{"name": topic, "partitions": [{"partition_index": partition, "replicas": replicas}]}]}


def _errors(r) -> list[tuple[int, int, str | None]]:
    return [(int(p.partition_index), int(p.error_code), p.error_message) for t in r.responses for p in t.partitions]


def _listed(r) -> list[tuple[str, int, tuple, tuple, tuple]]:
    return [(t.name, int(p.partition_index), tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in r.topics for p in t.partitions]


@pytest.mark.parametrize("version", versions(APR))
def test_a_move_is_listed_until_its_hand_over_is_done_and_a_cancel_sends_it_back(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 3)
        mover = FakeMover(ctx)
        api = ReassignmentsApi(ctx.dp.ctx, mover)
        slot = ctx.data.topic("t").slots[0]
        r = await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, [2]))
        assert _errors(r) == [(0, 0, None)] and mover.moves == {slot: 2}
        listed = await call(api.list_partition_reassignments, LPR, 0, timeout=30_000, topics=None)
        assert _listed(listed) == [("t", 0, (2, 0), (2,), (0,))]
        # Cancelled while under way: back to where it came from, nothing listed.
        r = await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, None))
        assert _errors(r) == [(0, 0, None)] and mover.moves == {}
        assert _listed(await call(api.list_partition_reassignments, LPR, 0, timeout=30_000, topics=None)) == []
        r = await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, None))
        assert _errors(r) == [(0, 85, None)]
        # Moved and done: not listed any more, and there is nothing to cancel.
        await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, [1]))
        mover.finish(slot)
        assert mover.leader(slot) == 1
        assert _listed(await call(api.list_partition_reassignments, LPR, 0, timeout=30_000,
                                  topics=[{"name": "t", "partition_indexes": (0, 1)}])) == []
        r = await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, None))
        assert _errors(r) == [(0, 85, None)]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(APR))
def test_a_target_of_another_replication_factor_is_refused(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        mover = FakeMover(ctx)
        api = ReassignmentsApi(ctx.dp.ctx, mover)
        fields = _reassign("t", 0, [1, 2])
        if version >= 1:
            fields["allow_replication_factor_change"] = False
        (error,) = _errors(await call(api.alter_partition_reassignments, APR, version, **fields))
        assert error[1] == 38 and mover.moves == {}
        expected = "allowReplicationFactorChange is false" if version >= 1 else "keeps a topic's replication factor"
        assert expected in error[2]
        (error,) = _errors(await call(api.alter_partition_reassignments, APR, version, **_reassign("t", 0, [3])))
        assert error == (0, 39, "The manual partition assignment includes broker 3, but no such broker is registered.")

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(ELECT))
def test_preferred_elections_move_partitions_back_and_wait_for_it(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 3)
        mover = FakeMover(ctx)
        mover.auto = True
        api = ReassignmentsApi(ctx.dp.ctx, mover)
        slots = ctx.data.topic("t").slots
        mover.move(slots[0], 2)
        mover.move(slots[1], 0)
        mover.down = {0}
        fields = {"timeout": 30_000, "topic_partitions": None}
        if version >= 1:
            fields["election_type"] = 0
        r = await call(api.elect_leaders, ELECT, version, **fields)
        got = {(x.topic, int(p.partition_id)): int(p.error_code) for x in r.replica_election_results
               for p in x.partition_result}
        # Partition 0's preferred node is down; 1 goes back to node 1; 2 is where it belongs
        # (left out of an answer for every partition).
        assert got == {("t", 0): 80, ("t", 1): 0} and mover.leader(slots[1]) == 1 and mover.moves == {slots[0]: 2}
        mover.down = set()
        fields["topic_partitions"] = [{"topic": "t", "partitions": (0, 2)}]
        r = await call(api.elect_leaders, ELECT, version, **fields)
        assert [(int(p.partition_id), int(p.error_code)) for x in r.replica_election_results
                for p in x.partition_result] == [(0, 0), (2, 84)]
        assert mover.leader(slots[0]) == 0 and mover.moves == {}

    run(tmp_path, scenario)


def test_a_preferred_election_that_does_not_finish_in_time_is_preferred_leader_not_available(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        mover = FakeMover(ctx)
        api = ReassignmentsApi(ctx.dp.ctx, mover)
        mover.leaders[ctx.data.topic("t").slots[0]] = 1
        r = await call(api.elect_leaders, ELECT, 2, election_type=0, timeout=50,
                       topic_partitions=[{"topic": "t", "partitions": (0,)}])
        (p,) = r.replica_election_results[0].partition_result
        assert int(p.error_code) == 80 and "still moving" in p.error_message

    run(tmp_path, scenario)


def test_an_unclean_election_is_not_needed_with_a_leader_and_not_possible_without(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        mover = FakeMover(ctx)
        api = ReassignmentsApi(ctx.dp.ctx, mover)
        mover.leaders[ctx.data.topic("t").slots[1]] = None
        r = await call(api.elect_leaders, ELECT, 1, election_type=1, timeout=30_000,
                       topic_partitions=[{"topic": "t", "partitions": (0, 1)}])
        assert [(int(p.partition_id), int(p.error_code)) for p in r.replica_election_results[0].partition_result] \
            == [(0, 84), (1, 83)]

    run(tmp_path, scenario)
