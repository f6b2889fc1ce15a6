"""Streams groups (KIP-1071) on one coordinator shard with a manual clock: the heartbeat's
steps as Kafka 4.4 takes them, scenario by scenario (each named for the behaviour).

The app is the count-per-word topology of tests/streams: subtopology 0 reads `input` and
writes a repartition topic, subtopology 1 reads it into a store with a changelog.
"""

from __future__ import annotations

from dataclasses import replace

from kgroup.core import record_codec
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode
from kgroup.core.group_configs import AlterGroupConfigsRequest, ConfigOp
from kgroup.core.messages import ConsumerGroupHeartbeatRequest, OffsetCommitPartition, OffsetCommitRequest
from kgroup.core.streams_messages import StreamsGroupHeartbeatRequest
from kgroup.core.streams_topology import StreamsTopology, Subtopology, StreamsTopicInfo, TopologyStatus
from tests.unit.core.groupctx import GroupContext, Pending

REPARTITION = "app-by-word-repartition"
CHANGELOG = "app-counts-changelog"
TOPOLOGY = StreamsTopology(0, (
    Subtopology("0", source_topics=("input",), repartition_sink_topics=(REPARTITION,)),
    Subtopology("1", repartition_source_topics=(StreamsTopicInfo(REPARTITION, 0, -1, (("cleanup.policy", "delete"),)),),
                state_changelog_topics=(StreamsTopicInfo(CHANGELOG, 0, -1, (("cleanup.policy", "compact"),)),)),
))
ALL_TASKS = {(s, p) for s in "01" for p in range(4)}
SESSION = 10_000


class Streams:
    """A streams app's members, heartbeating as Kafka Streams does."""

    def __init__(self, ctx: GroupContext, group: str = "app", *, delay: int = 0, **configs) -> None:
        self.ctx, self.group = ctx, group
        changes = [("streams.session.timeout.ms", ConfigOp.SET, str(SESSION)),
                   ("streams.heartbeat.interval.ms", ConfigOp.SET, "1000"),
                   ("streams.initial.rebalance.delay.ms", ConfigOp.SET, str(delay))]
        changes += [(k.replace("_", "."), ConfigOp.SET, str(v)) for k, v in configs.items()]
        assert ctx.call(ctx.coord.alter_group_configs, AlterGroupConfigsRequest(group, tuple(changes))).raised is None
        self.epoch: dict[str, int] = {}
        self.held: dict[str, tuple] = {}

    def hb(self, member: str, *, epoch: int | None = None, process: str | None = None, instance=None,
           topology=TOPOLOGY, report=True, **kw) -> Pending:
        joining = member not in self.epoch if epoch is None else epoch == 0
        epoch = 0 if joining else (self.epoch[member] if epoch is None else epoch)
        held = self.held.get(member, ((), (), ()))
        req = StreamsGroupHeartbeatRequest(
            self.group, member, epoch, instance_id=instance,
            rebalance_timeout_ms=30_000 if joining else -1, topology=topology if joining else None,
            active_tasks=() if joining else (held[0] if report else None),
            standby_tasks=() if joining else (held[1] if report else None),
            warmup_tasks=() if joining else (held[2] if report else None),
            process_id=(process or f"process-{member}") if joining else None, client_id=member, **kw)
        pending = self.ctx.call(self.ctx.coord.streams_group_heartbeat, req)
        r = pending.response
        if r is not None and r.error_code is ErrorCode.NONE and epoch >= 0:
            self.epoch[member] = r.member_epoch
            if r.active_tasks is not None:
                self.held[member] = (r.active_tasks, r.standby_tasks, r.warmup_tasks)
        return pending

    def leave(self, member: str, epoch: int = -1, instance=None) -> Pending:
        pending = self.hb(member, epoch=epoch, instance=instance, report=False)
        self.epoch.pop(member, None)
        self.held.pop(member, None)
        return pending

    def settle(self, *members: str, rounds: int = 6) -> None:
        for _ in range(rounds):
            for m in members:
                assert self.hb(m).raised is None
            self.ctx.advance(100)

    def group_(self):
        return self.ctx.coord.streams_groups[self.group]

    def active(self) -> dict[str, set]:
        return {m: set(t) for m, (t, _, _) in self.held.items()}


def ready_topics(ctx: GroupContext, **extra: int) -> None:
    set_topics(ctx, input=4, app_by_word_repartition=4, app_counts_changelog=4, **extra)


def set_topics(ctx: GroupContext, **counts: int) -> None:
    ctx.apply(ctx.coord.update_topics({n.replace("_", "-"): (f"id-{n}", c) for n, c in counts.items()}, ctx.now))


def test_kip1071_the_first_member_sets_the_topology_and_is_told_which_internal_topics_are_missing():
    ctx = GroupContext()
    set_topics(ctx, input=4)
    app = Streams(ctx)
    r = app.hb("a").response
    assert r.error_code is ErrorCode.NONE and r.member_epoch == 2          # Kafka starts at 2
    assert r.status == ((TopologyStatus.MISSING_INTERNAL_TOPICS,
                         f"Internal topics are missing: {REPARTITION}, {CHANGELOG}"),)
    assert {t.name: t.partitions for t in r.to_create} == {REPARTITION: 4, CHANGELOG: 4}
    assert r.active_tasks == () and r.heartbeat_interval_ms == 1000
    assert app.group_().state().value == "NotReady"
    # The broker creates them: the topology is ready, the group epoch moves, a's next
    # heartbeat gets every task.
    set_topics(ctx, input=4, app_by_word_repartition=4, app_counts_changelog=4)
    assert app.group_().epoch == 3
    r = app.hb("a").response
    assert r.status == () and r.member_epoch == 3
    assert set(r.active_tasks) == ALL_TASKS
    assert app.group_().state().value == "Stable"


def test_kip1071_missing_source_topics_keep_the_group_not_ready_without_tasks():
    ctx = GroupContext()
    app = Streams(ctx)
    r = app.hb("a").response
    assert r.status == ((TopologyStatus.MISSING_SOURCE_TOPICS, "Source topics input are missing."),)
    assert r.to_create == () and r.active_tasks == ()
    assert app.group_().state().value == "NotReady"
    ready_topics(ctx)
    assert set(app.hb("a").response.active_tasks) == ALL_TASKS


def test_kip1071_a_task_is_handed_over_only_after_its_owner_revoked_it():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    app.hb("b")                                     # joins: a must give half its tasks up
    app.hb("a")
    group = app.group_()
    moving = set(group.target["b"].active)
    assert len(moving) == 4
    a = group.members["a"].current
    assert a.state.value == "UNREVOKED_TASKS" and {(s, p) for s, p, _ in a.pending_active} == moving
    assert app.hb("b").response.active_tasks in (None, ())       # still held by a
    assert not app.group_().members["b"].current.active
    # a was told its tasks without the moving ones; it stops them and says so.
    assert set(app.held["a"][0]) == ALL_TASKS - moving
    app.hb("a")
    assert app.group_().members["a"].current.state.value == "STABLE"
    app.settle("a", "b")
    assert app.active() == {"a": ALL_TASKS - moving, "b": moving}
    assert app.group_().state().value == "Stable"


def test_kip1071_a_member_that_never_revokes_is_fenced_after_its_rebalance_timeout():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    app.hb("b")
    for _ in range(40):                             # a keeps heartbeating, still running all
        app.held["a"] = (tuple(sorted(ALL_TASKS)), (), ())
        app.hb("a")
        app.hb("b")
        ctx.advance(1_000)
    assert "a" not in app.group_().members          # fenced at 30 s (its rebalance timeout)
    app.settle("b")
    assert app.active()["b"] == ALL_TASKS


def test_kip1071_a_crashed_member_is_removed_at_its_session_timeout_and_its_tasks_move():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a", "b")
    epoch = app.group_().epoch
    for _ in range(12):                            # b goes silent
        app.hb("a")
        ctx.advance(1_000)
    assert set(app.group_().members) == {"a"} and app.group_().epoch == epoch + 1
    app.settle("a")
    assert app.active()["a"] == ALL_TASKS


def test_kip1071_standbys_from_the_group_config_never_sit_with_their_active_task():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx, streams_num_standby_replicas=1)
    app.settle("a", "b", "c")
    group = app.group_()
    for m, target in group.target.items():
        assert not set(target.active) & set(target.standby)
    standbys = [t for target in group.target.values() for t in target.standby]
    assert sorted(standbys) == sorted(("1", p) for p in range(4))       # stateful tasks only
    # Raising the config is a new assignment.
    epoch = group.epoch
    assert ctx.call(ctx.coord.alter_group_configs, AlterGroupConfigsRequest(
        "app", (("streams.num.standby.replicas", ConfigOp.SET, "2"),))).raised is None
    app.hb("a")
    assert app.group_().epoch == epoch + 1
    app.settle("a", "b", "c")
    assert sum(len(t.standby) for t in app.group_().target.values()) == 8


def test_kip1071_a_static_member_keeps_its_tasks_across_a_restart():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.hb("a1", instance="i-a", process="pa")
    app.hb("b", process="pb")
    app.settle("b")
    for _ in range(5):
        app.hb("a1", instance="i-a")
        app.hb("b")
        ctx.advance(100)
    before = app.active()["a1"]
    epoch = app.group_().epoch
    assert app.leave("a1", epoch=-2, instance="i-a").response.member_epoch == -2
    # Another id with the same instance id takes its place and its tasks, no new epoch.
    r = app.hb("a2", instance="i-a", process="pa").response
    assert r.error_code is ErrorCode.NONE and set(r.active_tasks) == before
    assert app.group_().epoch == epoch and "a1" not in app.group_().members
    # While a2 is in, the instance id is taken, even to a join under a2's own id (Kafka 4.4's
    # throwIfInstanceIdIsUnreleased; differential scenario streams_static_rejoin_same_id).
    dup = app.hb("a3", instance="i-a", process="px")
    assert dup.raised is ErrorCode.UNRELEASED_INSTANCE_ID
    assert app.hb("a2", epoch=0, instance="i-a", process="pa").raised is ErrorCode.UNRELEASED_INSTANCE_ID


def test_kip1071_epochs_are_checked_as_kafka_checks_them():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    assert app.hb("a", epoch=app.epoch["a"] + 1).raised is ErrorCode.FENCED_MEMBER_EPOCH
    assert app.hb("nobody", epoch=3).raised is ErrorCode.UNKNOWN_MEMBER_ID
    other = Streams(ctx, group="missing")
    assert other.hb("x", epoch=5).raised is ErrorCode.GROUP_ID_NOT_FOUND


def test_kip1071_bad_requests_and_topologies_are_refused():
    ctx = GroupContext()
    app = Streams(ctx)
    bad = StreamsTopology(0, (Subtopology("0", ("input",), state_changelog_topics=(StreamsTopicInfo("c", 3),)),))
    assert app.hb("a", topology=bad).raised is ErrorCode.STREAMS_INVALID_TOPOLOGY
    internal = StreamsTopology(0, (Subtopology("0", ("__consumer_offsets",)),))
    assert app.hb("a", topology=internal).raised is ErrorCode.STREAMS_INVALID_TOPOLOGY
    assert app.hb("a", topology=None).raised is ErrorCode.INVALID_REQUEST
    app.hb("a")
    other = replace(TOPOLOGY, subtopologies=TOPOLOGY.subtopologies[:1])
    assert app.hb("b", topology=other).raised is ErrorCode.INVALID_REQUEST      # no topology updates


def test_kip1071_topic_names_are_checked_before_the_group_id_at_any_epoch():
    # Kafka's request handler refuses internal and illegal topic names in a topology before the
    # coordinator checks anything else, whatever the epoch; an empty group id is then
    # INVALID_REQUEST ("GroupId can't be empty."), as Kafka 4.4 answers (not INVALID_GROUP_ID).
    ctx = GroupContext()

    def ask(group: str, epoch: int, topology) -> Pending:
        return ctx.call(ctx.coord.streams_group_heartbeat, StreamsGroupHeartbeatRequest(
            group, "m", epoch, topology=topology, rebalance_timeout_ms=-1, client_id="m"))

    internal = StreamsTopology(0, (Subtopology("0", ("__consumer_offsets",)),))
    illegal = StreamsTopology(0, (Subtopology("0", ("no spaces",)),))
    for epoch in (0, 1, 5):
        for topology, message in ((internal, "Use of Kafka internal topics __consumer_offsets"),
                                  (illegal, "Topic names no spaces are not valid")):
            p = ask("", epoch, topology)
            assert p.raised is ErrorCode.STREAMS_INVALID_TOPOLOGY and message in p.message, (epoch, p.message)
    p = ask("", 1, TOPOLOGY)
    assert p.raised is ErrorCode.INVALID_REQUEST and p.message == "GroupId can't be empty."
    p = ask("", 1, None)
    assert p.raised is ErrorCode.INVALID_REQUEST and p.message == "GroupId can't be empty."


def test_kip1331_a_topology_description_update_is_unsupported_without_a_description_plugin():
    # Kafka 4.4 refuses every update before it looks at the group when no description plug-in
    # is configured; kgroup has none.
    from kgroup.core.streams_messages import TopologyDescriptionUpdate
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.hb("a")
    for group, member in (("app", "a"), ("app", "nobody"), ("missing", "a")):
        p = ctx.call(ctx.coord.streams_topology_description_update, TopologyDescriptionUpdate(group, member, 0))
        assert p.raised is ErrorCode.UNSUPPORTED_VERSION
        assert p.message == "The broker has no streams group topology description plugin configured."


def test_kip1071_a_streams_group_is_not_a_consumer_group():
    ctx = GroupContext()
    ready_topics(ctx)
    Streams(ctx).hb("a")
    p = ctx.call(ctx.coord.consumer_group_heartbeat, ConsumerGroupHeartbeatRequest(
        "app", "m", 0, rebalance_timeout_ms=1000, subscribed_topic_names=("input",), owned=()))
    assert p.raised is ErrorCode.GROUP_ID_NOT_FOUND
    assert [(g.group_id, g.group_type, g.protocol_type) for g in ctx.list_groups(types=["streams"])] == [
        ("app", "streams", "streams")]


def test_kip1071_commits_are_fenced_by_each_tasks_assignment_epoch():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    epoch = app.epoch["a"]

    def commit(member, epoch, partition, version=9):
        return ctx.call(ctx.coord.commit_offsets, OffsetCommitRequest(
            "app", epoch, member, (OffsetCommitPartition("input", partition, 10),), api_version=version))

    assert commit("a", epoch, 0).response.partitions[0].error is ErrorCode.NONE
    assert commit("a", epoch + 1, 0).raised is ErrorCode.STALE_MEMBER_EPOCH
    assert commit("a", epoch, 0, version=8).raised is ErrorCode.UNSUPPORTED_VERSION
    assert commit("a", epoch - 1, 0).raised is ErrorCode.STALE_MEMBER_EPOCH   # older than the assignment
    assert commit("b", epoch, 0).raised is ErrorCode.UNKNOWN_MEMBER_ID


def test_kip1071_a_streams_group_is_deleted_only_when_empty():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    assert [r.error for r in ctx.delete_groups("app")] == [ErrorCode.NON_EMPTY_GROUP]
    app.leave("a")
    assert [r.error for r in ctx.delete_groups("app")] == [ErrorCode.NONE]
    assert "app" not in ctx.coord.streams_groups


def test_kip1071_the_initial_rebalance_delay_holds_the_first_assignment_back():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx, delay=3_000)
    r = app.hb("a").response
    assert (TopologyStatus.ASSIGNMENT_DELAYED, "Assignment delayed due to the configured initial rebalance "
                                               "delay.") in r.status
    assert r.active_tasks == ()
    app.hb("b")
    ctx.advance(3_000)
    app.settle("a", "b")
    assert sorted(len(t) for t in app.active().values()) == [4, 4]


def test_kip1071_replaying_the_log_rebuilds_every_streams_group():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx, streams_num_standby_replicas=1)
    app.settle("a", "b", "c")
    before = {g: (grp, {m: v for m, v in grp.members.items()}) for g, grp in ctx.coord.streams_groups.items()}
    assert [record_codec.decode(record_codec.encode(r)) for r in ctx.log] == ctx.log
    topics = dict(ctx.coord.shard.topics)

    def restart():
        ctx.reload(GroupCoordinatorShard(ctx.config))
        ctx.apply(ctx.coord.update_topics(topics, ctx.now))      # the broker's topics, then the load
        ctx.apply(ctx.coord.load_complete(ctx.now))

    restart()
    assert ctx.coord.streams_groups == {g: grp for g, (grp, _) in before.items()}
    assert ctx.coord.streams_groups["app"].state().value == "Stable"
    ctx.compact()
    restart()
    assert ctx.coord.streams_groups == {g: grp for g, (grp, _) in before.items()}


def _lagging_move(config: GroupConfig) -> tuple[set, set]:
    """a runs every task and reports its state of the stateful tasks (subtopology 1) at the
    changelogs' ends; b, with no state, joins: what b is given at once (active, warm-up)."""
    ctx = GroupContext(config=config)
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    ends = tuple(("1", p, 50_000) for p in range(4))
    assert app.hb("a", task_offsets=ends, task_end_offsets=ends).raised is None
    app.settle("a", "b")
    _, _, warmup = app.held["b"]
    return set(app.active()["b"]), set(warmup)


def test_kip1071_a_stateful_task_moves_to_a_lagging_process_at_once_as_in_kafka_4_4():
    # Kafka 4.4's assignment refiner is a no-op: no warm-ups, whatever num.warmup.replicas says.
    active, warmup = _lagging_move(GroupConfig())
    assert {s for s, _ in active} == {"0", "1"} and len(active) == 4 and warmup == set()


def test_kip441_warmups_hold_a_stateful_task_back_when_the_broker_assigns_them():
    active, warmup = _lagging_move(GroupConfig(streams_assign_warmups=True))
    assert {s for s, _ in active} == {"0"} and {s for s, _ in warmup} == {"1"} and warmup


def test_kip1071_task_offsets_naming_a_task_twice_are_refused_and_change_nothing():
    ctx = GroupContext()
    ready_topics(ctx)
    app = Streams(ctx)
    app.settle("a")
    pending = app.hb("a", task_offsets=(("1", 0, 5), ("1", 0, 6)))
    assert pending.raised is ErrorCode.INVALID_REQUEST
    assert pending.message == "Task offsets contain a duplicate entry for subtopology 1 and partition 0."
    assert app.group_().task_offsets.get("a") is None
