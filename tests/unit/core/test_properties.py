"""Invariants of the coordinator core under random sequences of requests and clock moves.

A sequence is a list of abstract operations (join, static join, rejoin, sync, heartbeat,
leave, commit, advance, delete) over a few groups. Operations name members by index into
what the simulated clients have learnt so far (ids from MEMBER_ID_REQUIRED and JoinGroup
responses, including members that have since been removed), so a sequence stays meaningful
however earlier requests were answered. `Run` plays one sequence on a GroupContext with a
small config and keeps every request's reply slot; each test then checks one property.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from kgroup.core.classic_group import ClassicGroupState
from kgroup.core.classic_protocol import NEW_MEMBER_JOIN_TIMEOUT_MS
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode
from kgroup.core.messages import JoinGroupRequest, LeavingMember, SyncGroupRequest
from kgroup.core.record_codec import decode, encode
from tests.unit.core.groupctx import GroupContext, Pending

S = ClassicGroupState
GROUPS = ("g0", "g1", "g2")
INSTANCES = ("i0", "i1", "i2", "i3")
PROTOCOL_SETS = (
    (("range", b"r1"),),
    (("range", b"r2"),),
    (("roundrobin", b"x"), ("range", b"r1")),
    (("roundrobin", b"y"),),
    (("sticky", b"s"),),
)
SESSIONS = (6_000, 10_000, 30_000)
REBALANCES = (6_000, 20_000, 40_000)
MAX_REBALANCE = max(REBALANCES)

PROPERTY_SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- operations -----------------------------------------------------------------------------

idx = st.integers(0, 7)
# Most operations go to one group so its sequences get deep; the others see interleaving.
group_idx = st.sampled_from([0, 0, 0, 0, 1, 2])
# Mostly compatible protocol sets; the last two clash with range-only groups.
protocols = st.sampled_from([0, 0, 0, 1, 2, 2, 3, 4])
# current generation, one behind, or what the member last heard
generation_choice = st.sampled_from(["current", "old", "last"])

join_new = st.tuples(st.just("join_new"), group_idx, protocols, st.sampled_from(SESSIONS),
                     st.sampled_from(REBALANCES), st.sampled_from([9, 9, 9, 5, 3]))
join_static = st.tuples(st.just("join_static"), group_idx, st.integers(0, len(INSTANCES) - 1), protocols,
                        st.sampled_from(SESSIONS), st.sampled_from(REBALANCES), st.sampled_from([9, 5]))
# What well-behaved clients do between the odd requests: wait for the join phase to end
# and sync; rejoin when told to.
settle = st.tuples(st.just("settle"), group_idx)
rejoin_all = st.tuples(st.just("rejoin_all"), group_idx)

operations = st.one_of(
    join_new, join_static, join_new, join_static, settle, settle, rejoin_all,
    st.tuples(st.just("rejoin"), group_idx, idx, st.none() | protocols),
    st.tuples(st.just("sync"), group_idx, idx, generation_choice),
    st.tuples(st.just("sync_all"), group_idx),
    st.tuples(st.just("heartbeat"), group_idx, idx, generation_choice),
    st.tuples(st.just("leave"), group_idx, st.lists(st.tuples(idx, st.sampled_from(["id", "instance", "both"])),
                                                   min_size=1, max_size=3)),
    st.tuples(st.just("commit"), group_idx, st.none() | idx, generation_choice, st.integers(0, 3)),
    st.tuples(st.just("advance"), st.sampled_from([1, 500, 2_999, 3_000, 5_999, 6_000, 10_000, 20_000,
                                                   30_001, 40_000])),
    st.tuples(st.just("delete"), group_idx),
)

configs = st.builds(
    GroupConfig,
    min_session_timeout_ms=st.just(6_000),
    max_session_timeout_ms=st.just(30_000),
    initial_rebalance_delay_ms=st.sampled_from([0, 3_000]),
    max_group_size=st.sampled_from([2, 3, 4, 1000]),
    offsets_retention_ms=st.sampled_from([60_000, 7 * 24 * 3600 * 1000]),
    offsets_retention_check_interval_ms=st.just(20_000),
)

# Most sequences start from a Stable g0 (a few members join and settle), then wander.
bootstrap = st.lists(st.one_of(join_new, join_static), min_size=0, max_size=4).map(
    lambda joins: [(op[0], 0, *op[2:]) for op in joins] + [("settle", 0)] if joins else [])
scenarios = st.tuples(configs, st.tuples(bootstrap, st.lists(operations, min_size=3, max_size=60)).map(
    lambda parts: parts[0] + parts[1]))


@dataclass
class Client:
    member_id: str
    instance_id: str | None
    generation: int = -1


@dataclass
class Run:
    """Plays operations on a GroupContext like a crowd of clients would."""

    config: GroupConfig
    ctx: GroupContext = field(init=False)
    clients: dict[str, list[Client]] = field(default_factory=lambda: {g: [] for g in GROUPS})
    # Every JoinGroup and SyncGroup reply slot, in the order the requests were sent.
    parked: list[tuple[str, str, Pending]] = field(default_factory=list)
    pendings: list[Pending] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ctx = GroupContext(self.config)

    # ---- bookkeeping --------------------------------------------------------------------

    def learn(self, group: str, member_id: str, instance_id: str | None, generation: int = -1) -> None:
        for client in self.clients[group]:
            if client.member_id == member_id:
                if generation >= 0:
                    client.generation = generation
                return
        self.clients[group].append(Client(member_id, instance_id, generation))

    def client(self, group: str, i: int) -> Client | None:
        known = self.clients[group]
        return known[i % len(known)] if known else None

    def parked_and_heartbeats(self) -> list[Pending]:
        return [p for p in self.pendings if hasattr(p.response, "error") or p.raised is not None]

    def track(self, pending: Pending) -> Pending:
        self.pendings.append(pending)
        return pending

    def learn_from_replies(self) -> None:
        """Clients read the member ids and generations in answered JoinGroups."""
        for group, _, pending in self.parked:
            if isinstance(pending.request, JoinGroupRequest) and pending.response is not None:
                r = pending.response
                if r.member_id and r.error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
                    self.learn(group, r.member_id, pending.request.group_instance_id,
                               r.generation_id if r.error is ErrorCode.NONE else -1)

    def generation(self, group: str, client: Client, choice: str) -> int:
        live = self.ctx.coord.groups.get(group)
        current = live.generation if live is not None else 0
        if choice == "current":
            return current
        if choice == "old":
            return current - 1
        return client.generation

    # ---- requests -----------------------------------------------------------------------

    def join(self, group: str, member_id: str, instance: str | None, protos, session: int,
             rebalance: int, version: int) -> Pending:
        pending = self.track(self.ctx.join(group, member_id, instance=instance, protocols=protos,
                                           session=session, rebalance=rebalance, version=version))
        self.parked.append((group, member_id, pending))
        self.learn_from_replies()
        return pending

    def sync(self, group: str, client: Client, generation: int) -> None:
        live = self.ctx.coord.groups.get(group)
        members = list(live.members) if live is not None else []
        assignments = {m: f"{m}@{generation}".encode() for m in members}
        pending = self.track(self.ctx.sync(group, client.member_id, generation, assignments,
                                           instance=client.instance_id))
        self.parked.append((group, client.member_id, pending))

    def apply(self, op: tuple) -> None:
        kind = op[0]
        if kind == "advance":
            self.ctx.advance(op[1])
            self.learn_from_replies()
            return
        group = GROUPS[op[1]]
        if kind == "join_new":
            _, _, p, session, rebalance, version = op
            first = self.join(group, "", None, PROTOCOL_SETS[p], session, rebalance, version)
            if first.done and first.error is ErrorCode.MEMBER_ID_REQUIRED:
                self.join(group, first.response.member_id, None, PROTOCOL_SETS[p], session, rebalance, version)
        elif kind == "join_static":
            _, _, i, p, session, rebalance, version = op
            self.join(group, "", INSTANCES[i], PROTOCOL_SETS[p], session, rebalance, version)
        elif kind == "rejoin":
            _, _, i, p = op
            client = self.client(group, i)
            if client is None:
                return
            live = self.ctx.coord.groups.get(group)
            member = live.members.get(client.member_id) if live is not None else None
            if p is not None:
                protos = PROTOCOL_SETS[p]
            else:
                protos = member.protocols if member is not None else PROTOCOL_SETS[0]
            session = member.session_timeout_ms if member is not None else SESSIONS[1]
            rebalance = member.rebalance_timeout_ms if member is not None else REBALANCES[1]
            self.join(group, client.member_id, client.instance_id, protos, session, rebalance, 9)
        elif kind == "sync":
            _, _, i, choice = op
            client = self.client(group, i)
            if client is not None:
                self.sync(group, client, self.generation(group, client, choice))
        elif kind == "sync_all":
            # Everyone who got this generation's JoinGroup answer syncs, leader first.
            live = self.ctx.coord.groups.get(group)
            if live is None or live.state is not S.COMPLETING_REBALANCE:
                return
            order = sorted(live.members, key=lambda m: m != live.leader)
            for member_id in order:
                if live.state is not S.COMPLETING_REBALANCE or member_id not in live.members:
                    break
                instance = live.members[member_id].group_instance_id
                self.sync(group, Client(member_id, instance), live.generation)
        elif kind == "settle":
            live = self.ctx.coord.groups.get(group)
            waited = 0
            while (live is not None and live.state is S.PREPARING_REBALANCE
                   and waited < 2 * MAX_REBALANCE + 3 * self.config.initial_rebalance_delay_ms):
                self.ctx.advance(1_000)
                waited += 1_000
                live = self.ctx.coord.groups.get(group)
            self.learn_from_replies()
            self.apply(("sync_all", op[1]))
        elif kind == "rejoin_all":
            live = self.ctx.coord.groups.get(group)
            if live is None:
                return
            for member_id, member in list(live.members.items()):
                if member_id in live.members and member_id not in live.awaiting_join:
                    self.join(group, member_id, member.group_instance_id, member.protocols,
                              member.session_timeout_ms, member.rebalance_timeout_ms, 9)
        elif kind == "heartbeat":
            _, _, i, choice = op
            client = self.client(group, i)
            if client is not None:
                self.track(self.ctx.heartbeat(group, client.member_id, self.generation(group, client, choice),
                                              instance=client.instance_id))
        elif kind == "leave":
            leaving = []
            for i, how in op[2]:
                client = self.client(group, i)
                if client is None:
                    continue
                if how == "instance" and client.instance_id is not None:
                    leaving.append(LeavingMember("", client.instance_id))
                elif how == "both":
                    leaving.append(LeavingMember(client.member_id, client.instance_id))
                else:
                    leaving.append(LeavingMember(client.member_id))
            if leaving:
                self.track(self.ctx.leave(group, *leaving))
        elif kind == "commit":
            _, _, i, choice, n = op
            offsets = {("topic", p): 10 * p + len(self.ctx.log) for p in range(n + 1)}
            client = None if i is None else self.client(group, i)
            if client is None:
                self.track(self.ctx.commit(group, "", -1, offsets, metadata="simple"))
            else:
                self.track(self.ctx.commit(group, client.member_id, self.generation(group, client, choice),
                                           offsets, instance=client.instance_id))
        elif kind == "delete":
            self.ctx.delete_groups(group)
        else:  # pragma: no cover
            raise AssertionError(op)

    def quiesce(self) -> None:
        """No more requests: let every rebalance, sync and session timer run out."""
        self.ctx.advance(2 * NEW_MEMBER_JOIN_TIMEOUT_MS + 10 * MAX_REBALANCE)
        self.learn_from_replies()


def play(config: GroupConfig, ops: list[tuple], each=None) -> Run:
    run = Run(config)
    stable_generations = set()
    for op in ops:
        run.apply(op)
        for group_id, group in run.ctx.coord.groups.items():
            if group.state is S.STABLE:
                stable_generations.add((group_id, group.generation))
        if each is not None:
            each(run)
    if currently_in_test_context():
        note_coverage(run, stable_generations)
    return run


def note_coverage(run: Run, stable_generations: set) -> None:
    """How far the sequences get (shown by pytest --hypothesis-show-statistics)."""
    event(f"stable generations reached: {len(stable_generations) if len(stable_generations) < 3 else '3+'}")
    errors = {p.error.name for p in run.parked_and_heartbeats() if p.done}
    for name in sorted(errors & {"FENCED_INSTANCE_ID", "GROUP_MAX_SIZE_REACHED", "ILLEGAL_GENERATION",
                                 "REBALANCE_IN_PROGRESS", "INCONSISTENT_GROUP_PROTOCOL"}):
        event(f"saw {name}")


# ---- checks -------------------------------------------------------------------------------

def replayed(config: GroupConfig, records) -> GroupCoordinatorShard:
    fresh = GroupCoordinatorShard(config)
    for record in records:
        fresh.replay(record)
    return fresh


def check_replay(run: Run) -> None:
    ctx = run.ctx
    assert replayed(run.config, ctx.log).stored == ctx.coord.stored
    decoded = [decode(encode(r)) for r in ctx.log]
    assert decoded == ctx.log
    assert replayed(run.config, decoded).stored == ctx.coord.stored
    # A snapshot stands for the whole log.
    assert replayed(run.config, ctx.coord.snapshot_records()).stored == ctx.coord.stored
    # A restart brings back no group the live coordinator no longer has (deleted groups and
    # expired offsets stay gone). Live may have more: a first join writes nothing yet.
    fresh = replayed(run.config, decoded)
    fresh.load_complete(ctx.now)
    assert set(fresh.groups) <= set(ctx.coord.groups), set(fresh.groups) - set(ctx.coord.groups)


def check_durable_view(run: Run) -> None:
    coord = run.ctx.coord
    for group_id, group in coord.groups.items():
        assert not set(group.members) & set(group.pending_members), group_id
        statics = {m.group_instance_id: mid for mid, m in group.members.items() if m.is_static}
        assert group.static_members == statics, (group_id, group.static_members, statics)
        if group.state is not S.STABLE:
            continue
        assert group.generation >= 1
        assert group.leader in group.members
        for member in group.members.values():
            assert group.protocol in member.protocol_names(), (group.protocol, member)
        value = coord.stored.classic_groups[group_id]
        assert value.generation == group.generation
        assert value.leader == group.leader
        assert value.protocol == group.protocol
        assert value.protocol_type == group.protocol_type
        assert [m.member_id for m in value.members] == list(group.members)
        assert {m.member_id: m.assignment for m in value.members} == \
            {mid: m.assignment for mid, m in group.members.items()}
        assert {m.member_id: m.group_instance_id for m in value.members} == \
            {mid: m.group_instance_id for mid, m in group.members.items()}


def check_single_replies(run: Run) -> None:
    for pending in run.pendings:
        assert pending.replies <= 1, pending


def unanswered_for_good(run: Run) -> list[Pending]:
    """Parked JoinGroup/SyncGroup requests with no reply that no later request replaced.

    The core drops a member's parked reply when the same member sends the same request
    again (its client has given up on the first); any other unanswered request hangs.
    """
    hanging = []
    for n, (group, member_id, pending) in enumerate(run.parked):
        if pending.done:
            continue
        kind = type(pending.request)
        replaced = member_id and any(
            g == group and m == member_id and type(later.request) is kind
            for g, m, later in run.parked[n + 1:]
        )
        if not replaced:
            hanging.append(pending)
    return hanging


def check_loaded_matches(run: Run) -> None:
    ctx = run.ctx
    fresh = replayed(run.config, ctx.log)
    fresh.load_complete(ctx.now)
    for group_id, group in ctx.coord.groups.items():
        if group.state is not S.STABLE:
            continue
        loaded = fresh.groups.get(group_id)
        assert loaded is not None, group_id
        # A static member that did not rejoin stays through a rebalance (only dynamic ones are
        # removed), so a group can be Stable past group.max.size; a freshly loaded group over
        # capacity rebalances at once, as Apache Kafka's coordinator does on load.
        over_capacity = len(group.members) > run.config.max_group_size
        assert loaded.state is (S.PREPARING_REBALANCE if over_capacity else S.STABLE)
        assert loaded.generation == group.generation
        assert loaded.leader == group.leader
        assert loaded.protocol == group.protocol
        assert list(loaded.members) == list(group.members)
        assert {mid: m.assignment for mid, m in loaded.members.items()} == \
            {mid: m.assignment for mid, m in group.members.items()}
        assert loaded.static_members == group.static_members


# ---- properties ---------------------------------------------------------------------------

class Shadow:
    """A second coordinator that replays the live log as it grows, via the codec's bytes."""

    def __init__(self, config: GroupConfig) -> None:
        self.coord = GroupCoordinatorShard(config)
        self.seen = 0

    def __call__(self, run: Run) -> None:
        log = run.ctx.log
        for record in log[self.seen:]:
            self.coord.replay(decode(encode(record)))
        self.seen = len(log)
        assert self.coord.stored == run.ctx.coord.stored


@PROPERTY_SETTINGS
@given(scenarios)
def test_replaying_the_log_gives_the_live_stored_state(scenario):
    config, ops = scenario
    run = play(config, ops, each=Shadow(config))
    check_replay(run)
    run.quiesce()
    check_replay(run)


@PROPERTY_SETTINGS
@given(scenarios)
def test_stable_groups_match_their_durable_view(scenario):
    config, ops = scenario
    run = play(config, ops, each=check_durable_view)
    run.quiesce()
    check_durable_view(run)


@PROPERTY_SETTINGS
@given(scenarios)
def test_every_parked_request_gets_exactly_one_reply(scenario):
    config, ops = scenario
    run = play(config, ops, each=check_single_replies)
    run.quiesce()
    check_single_replies(run)
    hanging = unanswered_for_good(run)
    assert not hanging, [p.request for p in hanging]


# Found by reading classic_protocol.py, then confirmed here: static member i1 parks in
# SyncGroup, its session expires while parked (ignored, timer consumed), then the leader i0
# expires for never syncing, and i1's SyncGroup fails with REBALANCE_IN_PROGRESS without
# its session being re-armed. i1 then sits in PreparingRebalance forever (the join timer
# re-fires every rebalance timeout; "nobody rejoined"). Kafka's propagateAssignment
# reschedules the heartbeat of every member whose parked sync it answers, errors included.
STATIC_FOLLOWER_SYNC_THEN_LEADER_EXPIRES = (
    GroupConfig(min_session_timeout_ms=6_000, max_session_timeout_ms=30_000, initial_rebalance_delay_ms=3_000),
    [("join_static", 0, 0, 0, 20_000, 40_000, 9), ("join_static", 0, 1, 0, 10_000, 40_000, 9), ("settle", 0),
     ("rejoin", 0, 1, 1), ("rejoin", 0, 0, None), ("sync", 0, 1, "current"),
     ("advance", 10_000), ("advance", 10_000)],
)


@PROPERTY_SETTINGS
@example(STATIC_FOLLOWER_SYNC_THEN_LEADER_EXPIRES)
@given(scenarios)
def test_silent_groups_lose_every_member(scenario):
    # Once clients fall silent, every session runs out: no member, pending member or
    # parked reply outlives them (Kafka re-arms a session whenever it answers a parked
    # JoinGroup or SyncGroup, errors included).
    config, ops = scenario
    run = play(config, ops)
    run.quiesce()
    for group_id, group in run.ctx.coord.groups.items():
        assert not group.members, (group_id, group.state, list(group.members))
        assert not group.pending_members, (group_id, list(group.pending_members))
        assert not group.awaiting_join and not group.awaiting_sync, group_id


@PROPERTY_SETTINGS
@given(scenarios)
def test_loading_the_log_restores_stable_groups(scenario):
    config, ops = scenario
    run = play(config, ops, each=check_loaded_matches)
    check_loaded_matches(run)


# ---- the strategy reaches the states it is meant to --------------------------------------

def test_scenario_driver_reaches_stable_with_static_and_dynamic_members():
    config = GroupConfig(min_session_timeout_ms=6_000, max_session_timeout_ms=30_000,
                         initial_rebalance_delay_ms=3_000)
    ops = [
        ("join_new", 0, 0, 10_000, 20_000, 9),
        ("join_static", 0, 1, 0, 10_000, 20_000, 9),
        ("advance", 6_000),  # the initial delay, extended once by the second joiner
        ("sync_all", 0),
        ("commit", 0, 0, "current", 1),
    ]
    run = play(config, ops, each=check_durable_view)
    group = run.ctx.group("g0")
    assert group.state is S.STABLE and len(group.members) == 2
    assert any(m.is_static for m in group.members.values())
    check_replay(run)
    check_loaded_matches(run)
    run.quiesce()
    assert not unanswered_for_good(run)
