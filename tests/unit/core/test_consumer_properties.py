"""Invariants of the consumer protocol under random interleavings on one group.

A sequence mixes ConsumerGroupHeartbeats (joins by names or by regex, steady beats, stale or future epochs,
members that do not revoke, leaves, static leaves, malformed requests), classic members
of the same group (JoinGroup / SyncGroup / Heartbeat / LeaveGroup, static or not, so the
group migrates both ways), timer expiry and topic changes (as Kafka's: partitions only grow,
and a topic deleted and created again has a new topic id). Members are few and their ids and
instance ids overlap on purpose (a consumer member reusing a classic member's instance id).
After every step:

- a request that raised left the shard exactly as it was (stored and runtime state,
  timers, parked replies: `shard_view`), and wrote nothing;
- a second coordinator fed the log through the codec has the same stored state and the
  same consumer groups (replaying the log gives the live state);
- no partition is held (assigned or pending revocation) by two members of a consumer group;
- a consumer group that is Stable assigns every partition of its subscribed topics exactly
  once, and evenly when all its members subscribe to the same topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, currently_in_test_context, event, example, given, settings
from hypothesis import strategies as st

from kgroup.assignors import Assignment, Subscription, encode_assignment, encode_subscription
from kgroup.core.classic_group import ClassicGroupState
from kgroup.core.config import GroupConfig
from kgroup.core.consumer_group import GroupState
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode
from kgroup.core.messages import LeavingMember
from kgroup.core.record_codec import decode, encode

from tests.unit.core.groupctx import GroupContext, Pending, shard_view

G = "cg"
S = ClassicGroupState
MEMBERS = 4
INSTANCES = ("inst-0", "inst-1")

CONFIG = GroupConfig(
    min_session_timeout_ms=6_000, max_session_timeout_ms=30_000, initial_rebalance_delay_ms=0,
    consumer_session_timeout_ms=45_000, consumer_min_session_timeout_ms=45_000,
    consumer_max_size=3,
)

PROPERTY_SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- operations -----------------------------------------------------------------------------

who = st.integers(0, MEMBERS - 1)
instance = st.none() | st.sampled_from(INSTANCES)
topic_sets = st.sampled_from([("t",), ("t",), ("t", "u"), ("u",)])

operations = st.one_of(
    st.tuples(st.just("cg_join"), who, instance, topic_sets, st.sampled_from([None, "uniform", "range"])),
    st.tuples(st.just("cg_beat"), who, st.sampled_from(["good", "good", "good", "holding", "stale", "ahead",
                                                        "resubscribe"])),
    st.tuples(st.just("cg_all")),
    st.tuples(st.just("cg_regex"), who, st.sampled_from(["t|u", "u.*", "[tu]", "t"])),
    st.tuples(st.just("cg_leave"), who, st.sampled_from([-1, -2])),
    st.tuples(st.just("cg_bad"), who, st.sampled_from(["regex", "assignor", "epoch", "owned"])),
    st.tuples(st.just("classic_join"), who, instance),
    st.tuples(st.just("classic_settle")),
    st.tuples(st.just("classic_beat"), who),
    st.tuples(st.just("classic_leave"), who),
    st.tuples(st.just("advance"), st.sampled_from([1_000, 5_000, 12_000, 46_000, 61_000])),
    st.tuples(st.just("topics"), st.integers(1, 6), st.integers(0, 3)),
)
# Most sequences start with a few members of either protocol, so groups get deep.
bootstrap = st.lists(st.one_of(
    st.tuples(st.just("cg_join"), who, instance, topic_sets, st.just(None)),
    st.tuples(st.just("classic_join"), who, instance)), min_size=0, max_size=4).map(
    lambda joins: joins + [("advance", 1_000), ("classic_settle",), ("cg_all",)] if joins else [])
scenarios = st.tuples(bootstrap, st.lists(operations, min_size=3, max_size=60)).map(lambda p: p[0] + p[1])


def note(what: str) -> None:
    """Coverage for --hypothesis-show-statistics (outside hypothesis: nothing)."""
    if currently_in_test_context():
        event(what)


def sub(topics=("t",)) -> tuple[tuple[str, bytes], ...]:
    return (("range", encode_subscription(Subscription(tuple(topics)), 0)),)


@dataclass
class ClassicClient:
    member_id: str
    instance: str | None
    generation: int = -1


@dataclass
class Run:
    ctx: GroupContext = field(default_factory=lambda: GroupContext(CONFIG))
    classic: dict[int, ClassicClient] = field(default_factory=dict)
    raised: int = 0
    joins: list[tuple[int, Pending]] = field(default_factory=list)   # JoinGroups sent, by client
    shadow: GroupCoordinatorShard = field(default_factory=lambda: GroupCoordinatorShard(CONFIG))
    seen: int = 0
    incarnations: int = 0                  # of topic u, each with a topic id of its own

    def __post_init__(self) -> None:
        self.ctx.set_topics(t=4)

    # ---- helpers --------------------------------------------------------------------------

    def cgroup(self):
        return self.ctx.coord.consumer_groups.get(G)

    def cmember(self, i: int):
        group = self.cgroup()
        return group.members.get(f"m{i}") if group is not None else None

    def request(self, send) -> Pending:
        """Send one request; if it raises, nothing may have changed."""
        before, logged = shard_view(self.ctx.coord), len(self.ctx.log)
        pending = send()
        if pending.raised is not None:
            self.raised += 1
            note(f"raised {pending.raised.name}")
            assert len(self.ctx.log) == logged, pending.raised
            assert shard_view(self.ctx.coord) == before, pending.raised
        return pending

    def learn(self, i: int, pending: Pending) -> None:
        self.joins.append((i, pending))
        self.learn_from_replies()

    def learn_from_replies(self) -> None:
        """Classic clients read member ids and generations from their answered JoinGroups."""
        for i, pending in self.joins:
            self._learn(i, pending)
        self.joins = [(i, p) for i, p in self.joins if not p.done]

    def _learn(self, i: int, pending: Pending) -> None:
        r = pending.response
        if r is not None and r.error in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED) and r.member_id:
            client = self.classic.get(i)
            if client is None or client.member_id != r.member_id:
                self.classic[i] = ClassicClient(r.member_id, pending.request.group_instance_id)
            if r.error is ErrorCode.NONE:
                self.classic[i].generation = r.generation_id

    # ---- operations -----------------------------------------------------------------------

    def apply(self, op: tuple) -> None:
        ctx, kind = self.ctx, op[0]
        if kind == "cg_join":
            _, i, inst, topics, assignor = op
            self.request(lambda: ctx.cg_heartbeat(f"m{i}", 0, group=G, topics=topics, instance=inst,
                                                  assignor=assignor))
        elif kind == "cg_beat":
            self.beat(op[1], op[2])
        elif kind == "cg_regex":
            # A join by regular expression: resolved by a timer just after (consumer_protocol).
            self.request(lambda: ctx.cg_heartbeat(f"m{op[1]}", 0, group=G, regex=op[2]))
        elif kind == "cg_all":
            group = self.cgroup()
            for mid in sorted(group.members) if group is not None else ():
                if mid.startswith("m"):
                    self.beat(int(mid[1:]), "good")
        elif kind == "cg_leave":
            m = self.cmember(op[1])
            if m is not None and not m.meta.is_classic:
                self.request(lambda: ctx.cg_heartbeat(m.member_id, op[2], group=G, instance=m.meta.instance_id))
        elif kind == "cg_bad":
            _, i, how = op
            m = self.cmember(i)
            if how == "regex":
                self.request(lambda: ctx.cg_heartbeat(f"m{i}", 0, group=G, regex="("))
            elif how == "assignor":
                self.request(lambda: ctx.cg_heartbeat(f"m{i}", 0, group=G, topics=["t"], assignor="nope"))
            elif how == "epoch":
                self.request(lambda: ctx.cg_heartbeat(f"m{i}", 99, group=G))
            else:
                self.request(lambda: ctx.cg_heartbeat(f"m{i}", 0, group=G, topics=["t"], owned=[("id-t", [0])]))
        elif kind == "classic_join":
            _, i, inst = op
            client = self.classic.get(i)
            if client is not None and client.instance != inst:
                client = None
            member_id = client.member_id if client is not None else ""
            pending = self.request(lambda: ctx.join(G, member_id, instance=inst, protocols=sub(), session=10_000))
            self.learn(i, pending)
            if pending.done and pending.error is ErrorCode.MEMBER_ID_REQUIRED:
                pending = self.request(lambda: ctx.join(G, pending.response.member_id, instance=inst,
                                                        protocols=sub(), session=10_000))
                self.learn(i, pending)
        elif kind == "classic_settle":
            self.classic_settle()
        elif kind == "classic_beat":
            client = self.classic.get(op[1])
            if client is not None:
                generation = self.classic_generation(client)
                self.request(lambda: ctx.heartbeat(G, client.member_id, generation, instance=client.instance))
        elif kind == "classic_leave":
            client = self.classic.pop(op[1], None)
            if client is not None:
                self.request(lambda: ctx.leave(G, LeavingMember(client.member_id, client.instance)))
        elif kind == "advance":
            ctx.advance(op[1])
        elif kind == "topics":
            # As Kafka's topics change: partitions only grow; a deleted topic (u at 0) comes
            # back under a new topic id.
            _, t, u = op
            topics = ctx.coord.shard.topics
            image = {"t": ("id-t", max(t, topics["t"][1]))}
            if u and "u" in topics:
                image["u"] = (topics["u"][0], max(u, topics["u"][1]))
            elif u:
                self.incarnations += 1
                image["u"] = (f"id-u-{self.incarnations}", u)
            ctx.apply(ctx.coord.update_topics(image, ctx.now))
        else:  # pragma: no cover
            raise AssertionError(op)

    def beat(self, i: int, how: str) -> None:
        m = self.cmember(i)
        if m is None or m.meta.is_classic or m.epoch < 0:
            return
        owned = m.current.assigned
        epoch = m.epoch
        topics = None
        if how == "holding":
            owned = m.owned()                   # has not revoked yet
        elif how == "stale":
            epoch = m.epoch - 1
        elif how == "ahead":
            epoch = m.epoch + 1
        elif how == "resubscribe":
            topics = ["u"] if m.meta.subscribed_topic_names == ("t",) else ["t"]
        self.request(lambda: self.ctx.cg_heartbeat(m.member_id, epoch, group=G, owned=owned, topics=topics,
                                                   instance=m.meta.instance_id))

    def classic_generation(self, client: ClassicClient) -> int:
        group = self.cgroup()
        if group is not None and client.member_id in group.members:
            return group.members[client.member_id].epoch
        return client.generation

    def classic_settle(self) -> None:
        """Classic members do what their clients would: finish a classic rebalance (the leader
        assigns partitions of t round-robin), or rejoin and sync inside a consumer group."""
        ctx = self.ctx
        group = ctx.coord.groups.get(G)
        if group is not None and group.state is S.COMPLETING_REBALANCE:
            partitions = ctx.coord.shard.topics.get("t", ("", 0))[1]
            members = list(group.members)
            plan = {m: encode_assignment(Assignment((("t", tuple(p for p in range(partitions)
                                                                 if p % len(members) == k)),)), 0)
                    for k, m in enumerate(members)}
            order = [group.leader] + [m for m in members if m != group.leader]
            for m in order:
                live = ctx.coord.groups.get(G)
                if live is None or live.state is not S.COMPLETING_REBALANCE or m not in live.members:
                    break
                self.request(lambda: ctx.sync(G, m, live.generation, plan if m == live.leader else None,
                                              instance=live.members[m].group_instance_id))
            return
        cgroup = self.cgroup()
        if cgroup is None:
            return
        for i, client in sorted(self.classic.items()):
            m = cgroup.members.get(client.member_id)
            if m is None or not m.meta.is_classic:
                continue
            owned = tuple(("t", ps) for t, ps in m.current.assigned)   # revoked what it must
            protocols = (("range", encode_subscription(Subscription(("t",), owned_partitions=owned), 0)),)
            joined = self.request(lambda: ctx.join(G, client.member_id, instance=client.instance,
                                                   protocols=protocols, session=10_000))
            if joined.done and joined.error is ErrorCode.NONE:
                client.generation = joined.response.generation_id
                self.request(lambda: ctx.sync(G, client.member_id, client.generation, instance=client.instance))
            cgroup = self.cgroup()
            if cgroup is None:
                return

    # ---- checks ---------------------------------------------------------------------------

    def check(self) -> None:
        ctx = self.ctx
        # Replaying the log (through the codec) gives the live state.
        for record in ctx.log[self.seen:]:
            self.shadow.replay(decode(encode(record)))
        self.seen = len(ctx.log)
        assert self.shadow.stored == ctx.coord.stored
        assert self.shadow.consumer_groups == ctx.coord.consumer_groups
        group = self.cgroup()
        if group is None:
            return
        # No partition has two holders; the owner index says who holds what.
        holders: dict[tuple[str, int], str] = {}
        for mid, m in group.members.items():
            for t, ps in m.owned():
                for p in ps:
                    assert (t, p) not in holders, f"{(t, p)} held by {holders[(t, p)]} and {mid}"
                    holders[(t, p)] = mid
        assert holders == group.owners
        # A Stable group assigns every partition its members subscribe to exactly once, unless
        # a member's regular expression is not resolved yet: bringing it moved no epoch (as in
        # Kafka), so the last target stands (a group it converted from classic still has its
        # classic members' assignment, which may leave out partitions added since) until the
        # resolution moves the epoch.
        unresolved = any(m.meta.subscribed_topic_regex and m.meta.subscribed_topic_regex not in group.regexes
                         for m in group.members.values())
        if group.state() is GroupState.STABLE and not unresolved:
            note("consumer group Stable")
            assigned = sorted((t, p) for m in group.members.values() for t, ps in m.current.assigned for p in ps)
            topics = ctx.coord.shard.topics
            names = set().union(*(ctx.coord.consumer.topics_of(m.meta, group) for m in group.members.values()))
            wanted = sorted((topics[n][0], p) for n in names for p in range(topics[n][1]))
            assert assigned == wanted
            self.check_balance(group)

    def check_balance(self, group) -> None:
        """Members that all subscribe to the same topics share them evenly: the uniform
        assignor's counts differ by at most one, the range assignor's do on every topic."""
        topics = {mid: frozenset(self.ctx.coord.consumer.topics_of(m.meta, group)) for mid, m in group.members.items()}
        if len(set(topics.values())) != 1 or not next(iter(topics.values())):
            return
        note("consumer group Stable, one subscription")
        counts = {mid: dict((t, len(ps)) for t, ps in m.current.assigned) for mid, m in group.members.items()}
        if group.assignor_name(CONFIG) == "uniform":
            totals = [sum(c.values()) for c in counts.values()]
            assert max(totals) - min(totals) <= 1, counts
        else:
            for _, tid, _ in group.subscribed:
                each = [c.get(tid, 0) for c in counts.values()]
                assert max(each) - min(each) <= 1, (tid, counts)


def play(ops: list[tuple]) -> Run:
    run = Run()
    for op in ops:
        run.apply(op)
        run.learn_from_replies()
        run.check()
    group = run.ctx.coord.groups.get(G)
    note(f"ends as {'consumer' if run.cgroup() is not None else 'classic' if group else 'nothing'}")
    return run


@PROPERTY_SETTINGS
@given(scenarios)
# Found by a randomized run: m0, a live dynamic member, rejoins (epoch 0) under the instance id
# of static member m3, which left for a while (-2); m0's previous target (partitions 0, 1) fell
# out of every target and the group was Stable with them assigned to no one.
@example([("cg_join", 0, None, ("t",), None), ("advance", 1000), ("classic_settle",), ("cg_all",),
          ("cg_join", 3, "inst-1", ("t",), None), ("cg_leave", 3, -2), ("cg_join", 0, "inst-1", ("t",), None)])
def test_consumer_protocol_invariants_over_random_interleavings(ops):
    run = play(ops)
    # A restart (replay of the whole log) finds the same consumer groups.
    fresh = GroupCoordinatorShard(CONFIG)
    for record in run.ctx.log:
        fresh.replay(record)
    assert fresh.consumer_groups == run.ctx.coord.consumer_groups
    assert fresh.stored == run.ctx.coord.stored


# ---- the driver reaches what the properties are about ----------------------------------------

def test_driver_upgrades_a_classic_group_and_refuses_a_reused_instance_id():
    ops = [("classic_join", 0, "inst-0"), ("classic_join", 1, None), ("advance", 1_000), ("classic_settle",),
           ("cg_join", 2, "inst-0", ("t",), None),                # refused: inst-0 is a live classic member
           ("cg_join", 3, None, ("t",), None),                    # upgrades the group
           ("classic_settle",), ("cg_all",), ("classic_settle",), ("cg_all",), ("cg_all",)]
    run = play(ops)
    assert run.raised >= 1
    group = run.cgroup()
    assert group is not None and group.state() is GroupState.STABLE
    assert {m.meta.is_classic for m in group.members.values()} == {True, False}
