"""Group-level configs (KIP-848 group configs over IncrementalAlterConfigs, GROUP resource).

Dynamic values live in the group-metadata log as GroupConfigRecords, layered over the TOML
`[group.overrides.<group>]` tables and the broker's `[group]` settings.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E
from kgroup.core.group_configs import (
    GROUP_CONFIGS,
    AlterGroupConfigsRequest,
    ConfigOp,
    ConfigSource,
)
from kgroup.core.record_codec import decode, encode
from kgroup.core.records import GroupConfigRecord
from tests.unit.core.groupctx import GroupContext, Pending

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
SET, DELETE = ConfigOp.SET, ConfigOp.DELETE


def alter(ctx: GroupContext, group: str, *changes, incremental: bool = True,
          validate_only: bool = False) -> Pending:
    return ctx.call(ctx.coord.alter_group_configs,
                    AlterGroupConfigsRequest(group, tuple(changes), incremental, validate_only))


def described(ctx: GroupContext, group: str) -> dict:
    pending = ctx.call(ctx.coord.describe_group_configs, group)
    return {d.name: d for d in pending.response}


def test_kip848_group_config_session_timeout_applies_to_the_next_heartbeat():
    ctx = GroupContext()
    ctx.set_topics(t=2)
    assert alter(ctx, "cg", (SESSION, SET, "50000"), (HEARTBEAT, SET, "6000")).raised is None
    first = ctx.cg_heartbeat("a", 0, topics=["t"]).response
    assert first.heartbeat_interval_ms == 6_000
    # The member is fenced after the group's 50 s, not the broker's 45 s.
    ctx.advance(46_000)
    assert "a" in ctx.cgroup().members
    ctx.advance(4_100)
    assert "a" not in ctx.cgroup().members


def test_dynamic_configs_are_layered_over_the_toml_override_and_the_default():
    ctx = GroupContext(GroupConfig(consumer_group_overrides=(("cg", 55_000, 7_000),)))
    d = described(ctx, "cg")
    assert (d[SESSION].value, d[SESSION].source) == ("55000", ConfigSource.STATIC_BROKER_CONFIG)
    assert d[SESSION].synonyms[-1] == ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG)
    other = described(ctx, "other")
    assert (other[SESSION].value, other[SESSION].source) == ("45000", ConfigSource.DEFAULT_CONFIG)
    alter(ctx, "cg", (SESSION, SET, "50000"))
    d = described(ctx, "cg")
    assert (d[SESSION].value, d[SESSION].source) == ("50000", ConfigSource.GROUP_CONFIG)
    assert [s[2] for s in d[SESSION].synonyms] == [ConfigSource.GROUP_CONFIG, ConfigSource.STATIC_BROKER_CONFIG,
                                                 ConfigSource.DEFAULT_CONFIG]
    assert ctx.coord.group_configs.consumer_heartbeat_interval("cg") == 7_000   # TOML, untouched
    # Deleting the dynamic value falls back to the TOML table, with a tombstone once empty.
    alter(ctx, "cg", (SESSION, DELETE, None))
    assert ctx.coord.group_configs.consumer_session_timeout("cg") == 55_000
    assert ctx.log[-1] == GroupConfigRecord("cg", None)


def test_unknown_names_are_refused_with_the_valid_ones_listed():
    ctx = GroupContext()
    p = alter(ctx, "cg", ("consumer.session.timeout", SET, "50000"))
    assert p.raised is E.INVALID_CONFIG
    assert not ctx.log


def test_values_are_checked_against_the_brokers_bounds_and_each_other():
    ctx = GroupContext()
    for changes in ([(SESSION, SET, "44999")], [(SESSION, SET, "60001")], [(HEARTBEAT, SET, "4999")],
                    [(HEARTBEAT, SET, "15001")], [(SESSION, SET, "abc")], [(SESSION, SET, None)],
                    [(SESSION, SET, "1" * 30)], [(SESSION, ConfigOp.APPEND, "1")],
                    [(SESSION, SET, "45000"), (HEARTBEAT, SET, "45000")]):
        assert alter(ctx, "cg", *changes).raised is E.INVALID_CONFIG, changes
    narrow = GroupContext(GroupConfig(consumer_min_session_timeout_ms=6_000, consumer_session_timeout_ms=10_000,
                                      consumer_min_heartbeat_interval_ms=1_000, consumer_heartbeat_interval_ms=3_000))
    # The heartbeat left at the broker's 3 s: a session of 3 s would not exceed it.
    assert alter(narrow, "cg", (SESSION, SET, "3000")).raised is E.INVALID_CONFIG
    assert alter(narrow, "cg", (SESSION, SET, "6000")).raised is None
    assert not ctx.log and alter(ctx, "", (SESSION, SET, "50000")).raised is E.INVALID_REQUEST


def test_validate_only_and_a_change_to_nothing_write_no_record():
    ctx = GroupContext()
    assert alter(ctx, "cg", (SESSION, SET, "50000"), validate_only=True).raised is None
    assert not ctx.log and ctx.coord.group_configs.consumer_session_timeout("cg") == 45_000
    alter(ctx, "cg", (SESSION, SET, "50000"))
    alter(ctx, "cg", (SESSION, SET, "50000"))
    assert len(ctx.log) == 1


def test_alter_configs_replaces_the_whole_set_where_incremental_keeps_the_rest():
    ctx = GroupContext()
    alter(ctx, "cg", (SESSION, SET, "50000"), (HEARTBEAT, SET, "6000"))
    alter(ctx, "cg", (HEARTBEAT, SET, "7000"), incremental=False)
    assert ctx.coord.stored.group_configs["cg"] == ((HEARTBEAT, "7000"),)
    alter(ctx, "cg", (SESSION, SET, "52000"))
    assert ctx.coord.stored.group_configs["cg"] == ((HEARTBEAT, "7000"), (SESSION, "52000"))


def test_group_configs_survive_replay_snapshots_and_group_deletion():
    ctx = GroupContext()
    alter(ctx, "cg", (SESSION, SET, "50000"))
    alter(ctx, "empty", (HEARTBEAT, SET, "6000"))
    ctx.set_topics(t=1)
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.cg_heartbeat("a", -1)
    assert ctx.delete_groups("cg")[0].error is E.NONE
    assert ctx.coord.group_configs.consumer_session_timeout("cg") == 50_000
    fresh = GroupCoordinatorShard(ctx.config)
    for record in ctx.log:
        fresh.replay(decode(encode(record)))
    assert fresh.stored.group_configs == ctx.coord.stored.group_configs
    again = GroupCoordinatorShard(ctx.config)
    for record in ctx.coord.snapshot_records():
        again.replay(record)
    assert again.group_configs.consumer_session_timeout("cg") == 50_000
    assert again.group_configs.consumer_heartbeat_interval("empty") == 6_000


def test_the_table_lists_kafkas_consumer_group_config_names():
    assert {SESSION, HEARTBEAT} <= set(GROUP_CONFIGS)
    for d in GROUP_CONFIGS.values():
        assert d.broker_name.startswith("group.") and d.min_name.startswith("group.")


@settings(max_examples=200, deadline=None)
@given(group=st.text(max_size=12),
       configs=st.none() | st.lists(st.tuples(st.sampled_from(sorted(GROUP_CONFIGS)), st.text(max_size=8)),
                                    max_size=3).map(tuple))
def test_group_config_records_round_trip(group, configs):
    record = GroupConfigRecord(group, configs)
    assert decode(encode(record)) == record
