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
from kgroup.core.share_messages import ShareGroupHeartbeatRequest
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


def test_inherited_values_follow_the_override_rows_dynamic_configs_and_a_new_config():
    # GroupConfigs remembers what groups without a `[group.overrides]` row inherit; that
    # memo must not leak one group's row to another, hide a dynamic config, or outlive the
    # shard's config.
    ctx = GroupContext(GroupConfig(consumer_group_overrides=(("cg", 55_000, 7_000),)))
    configs = ctx.coord.group_configs
    assert configs.value("other", SESSION) == 45_000
    assert configs.value("cg", SESSION) == 55_000
    assert configs.value("other", SESSION) == 45_000
    assert alter(ctx, "other", (SESSION, SET, "50000")).raised is None
    assert configs.value("other", SESSION) == 50_000
    assert configs.value("third", SESSION) == 45_000
    ctx.coord.shard.config = GroupConfig(consumer_session_timeout_ms=48_000)
    assert configs.value("third", SESSION) == 48_000
    assert configs.value("cg", SESSION) == 48_000


def test_a_broker_setting_changed_in_the_toml_is_described_as_static_broker_config():
    """Kafka reports a group config that falls back to a broker default set in
    server.properties as STATIC_BROKER_CONFIG, its synonyms followed by the built-in default;
    a default left alone is DEFAULT_CONFIG."""
    ctx = GroupContext(GroupConfig(consumer_session_timeout_ms=10_000, consumer_min_session_timeout_ms=1_000))
    d = described(ctx, "cg")
    assert (d[SESSION].value, d[SESSION].source) == ("10000", ConfigSource.STATIC_BROKER_CONFIG)
    assert d[SESSION].synonyms == (("group.consumer.session.timeout.ms", "10000", ConfigSource.STATIC_BROKER_CONFIG),
                                   ("group.consumer.session.timeout.ms", "45000", ConfigSource.DEFAULT_CONFIG))
    assert (d[HEARTBEAT].value, d[HEARTBEAT].source) == ("5000", ConfigSource.DEFAULT_CONFIG)


def test_unknown_names_are_refused_with_the_valid_ones_listed():
    ctx = GroupContext()
    p = alter(ctx, "cg", ("consumer.session.timeout", SET, "50000"))
    assert p.raised is E.INVALID_CONFIG
    assert not ctx.log


def test_values_are_checked_against_the_brokers_bounds_and_each_other():
    ctx = GroupContext()
    for changes in ([(SESSION, SET, "44999")], [(SESSION, SET, "60001")], [(HEARTBEAT, SET, "4999")],
                    [(HEARTBEAT, SET, "15001")], [(SESSION, SET, "abc")],
                    [(SESSION, SET, "1" * 30)], [(SESSION, ConfigOp.APPEND, "1")],
                    [(SESSION, SET, "45000"), (HEARTBEAT, SET, "45000")]):
        assert alter(ctx, "cg", *changes).raised is E.INVALID_CONFIG, changes
    # A SET without a value is refused before any check, as Kafka refuses it.
    assert alter(ctx, "cg", (SESSION, SET, None)).raised is E.INVALID_REQUEST
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
        if d.plain:         # no broker setting: Kafka's built-in default, the config its own synonym,
            # unless kgroup behaves as a broker with Kafka's group.* setting changed
            assert d.type_name == d.plain
            assert d.broker_name == (d.name if d.kafka_default is None else f"group.{d.name}")
        elif d.choices:     # a STRING config (share.auto.offset.reset): no bounds, a broker default
            assert d.type_name == "STRING" and d.default(GroupConfig()) in d.choices
        else:
            assert d.broker_name.startswith("group.") and d.min_name.startswith("group.")
            assert d.type_name == ("LONG" if d.long else "INT")


SHARE_NAMES = {"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "5000",
               "share.record.lock.duration.ms": "30000", "share.delivery.count.limit": "5",
               "share.auto.offset.reset": "latest", "share.partition.max.record.locks": "2000"}


def share_hb(ctx: GroupContext, member: str, epoch: int, topics=None):
    return ctx.call(ctx.coord.share_group_heartbeat,
                    ShareGroupHeartbeatRequest("sg", member, epoch, subscribed_topic_names=topics))


def test_kip932_share_configs_are_group_configs_with_kafkas_defaults_and_types():
    ctx = GroupContext()
    d = described(ctx, "sg")
    assert {n: d[n].value for n in SHARE_NAMES} == SHARE_NAMES
    assert {n for n in SHARE_NAMES if d[n].type_name == "STRING"} == {"share.auto.offset.reset"}
    assert d["share.record.lock.duration.ms"].synonyms == (
        ("group.share.record.lock.duration.ms", "30000", ConfigSource.DEFAULT_CONFIG),)
    assert alter(ctx, "sg", ("share.record.lock.duration.ms", SET, "5000"), ("share.delivery.count.limit", SET, "3"),
                 ("share.auto.offset.reset", SET, " earliest ")).raised is None
    assert ctx.log[-1] == GroupConfigRecord("sg", (("share.auto.offset.reset", "earliest"),
                                                   ("share.delivery.count.limit", "3"),
                                                   ("share.record.lock.duration.ms", "5000")))
    d = described(ctx, "sg")
    assert (d["share.auto.offset.reset"].value, d["share.auto.offset.reset"].source) == \
        ("earliest", ConfigSource.GROUP_CONFIG)
    # The share coordinator reads the group's values as stored; other groups keep the defaults.
    share = ctx.coord.share.configs
    assert (share.limits("sg").record_lock_ms, share.limits("sg").delivery_limit) == (5_000, 3)
    assert share.auto_offset_reset("sg") == "earliest" and share.auto_offset_reset("other") == "latest"
    assert share.limits("other").record_lock_ms == 30_000
    alter(ctx, "sg", ("share.auto.offset.reset", DELETE, None))
    assert share.auto_offset_reset("sg") == "latest"


def test_kip932_share_configs_are_bounded_by_the_brokers_share_settings():
    ctx = GroupContext()
    for changes in ([("share.record.lock.duration.ms", SET, "999")],
                    [("share.record.lock.duration.ms", SET, "60001")],
                    [("share.delivery.count.limit", SET, "1")], [("share.delivery.count.limit", SET, "11")],
                    [("share.partition.max.record.locks", SET, "99")], [("share.session.timeout.ms", SET, "60001")],
                    [("share.heartbeat.interval.ms", SET, "15001")], [("share.auto.offset.reset", SET, "sometimes")],
                    [("share.auto.offset.reset", SET, "Earliest")], [("share.auto.offset.reset", SET, "by_duration:-PT1H")],
                    [("share.auto.offset.reset", ConfigOp.APPEND, "latest")],
                    [("share.delivery.count.limit", SET, "three")],
                    [("share.session.timeout.ms", SET, "5000")]):       # not above the 5 s heartbeat
        assert alter(ctx, "sg", *changes).raised is E.INVALID_CONFIG, changes
    assert not ctx.log
    # Lower bounds looser than Kafka's (a 1 s lock and session), and set by the broker.
    assert alter(ctx, "sg", ("share.record.lock.duration.ms", SET, "1000"), ("share.session.timeout.ms", SET, "1000"),
                 ("share.heartbeat.interval.ms", SET, "100")).raised is None
    strict = GroupContext(GroupConfig(share_min_record_lock_duration_ms=15_000))
    assert alter(strict, "sg", ("share.record.lock.duration.ms", SET, "14999")).raised is E.INVALID_CONFIG


def test_kip932_share_session_and_heartbeat_configs_apply_to_the_next_heartbeat():
    ctx = GroupContext(GroupConfig(share_session_timeout_ms=10_000, share_heartbeat_interval_ms=1_000))
    ctx.set_topics(orders=1)
    assert alter(ctx, "sg", ("share.session.timeout.ms", SET, "20000"),
                 ("share.heartbeat.interval.ms", SET, "2000")).raised is None
    first = share_hb(ctx, "m1", 0, ("orders",)).response
    assert first.heartbeat_interval_ms == 2_000
    # Fenced after the group's 20 s, not the broker's 10 s.
    ctx.advance(15_000)
    assert "m1" in ctx.coord.share_groups["sg"].members
    ctx.advance(5_100)
    assert "m1" not in ctx.coord.share_groups["sg"].members


@settings(max_examples=200, deadline=None)
@given(group=st.text(max_size=12),
       configs=st.none() | st.lists(st.tuples(st.sampled_from(sorted(GROUP_CONFIGS)), st.text(max_size=8)),
                                    max_size=3).map(tuple))
def test_group_config_records_round_trip(group, configs):
    record = GroupConfigRecord(group, configs)
    assert decode(encode(record)) == record


def test_kip1240_share_settings_of_kafka_4_4_booleans_dead_letter_topic_and_by_duration():
    """Kafka 4.4's GroupConfig: share.renew.acknowledge.enable and errors.deadletterqueue.*
    have no broker setting (their synonym is themselves, at Kafka's default); booleans ignore
    case, strings are trimmed and compared as written; a DLQ topic may not start with "__";
    share.auto.offset.reset also takes by_duration:<ISO 8601 duration>, not a negative one."""
    ctx = GroupContext()
    d = described(ctx, "sg")
    assert {n: (d[n].value, d[n].type_name) for n in ("share.renew.acknowledge.enable",
                                                      "errors.deadletterqueue.topic.name",
                                                      "errors.deadletterqueue.copy.record.enable")} == {
        "share.renew.acknowledge.enable": ("true", "BOOLEAN"), "errors.deadletterqueue.topic.name": ("", "STRING"),
        "errors.deadletterqueue.copy.record.enable": ("false", "BOOLEAN")}
    assert d["errors.deadletterqueue.topic.name"].synonyms == (
        ("errors.deadletterqueue.topic.name", "", ConfigSource.DEFAULT_CONFIG),)
    share = ctx.coord.share.configs
    assert share.renew_acknowledge_enabled("sg") and share.dead_letter_topic("sg") is None
    assert alter(ctx, "sg", ("share.renew.acknowledge.enable", SET, " FALSE "),
                 ("errors.deadletterqueue.topic.name", SET, " dlq "),
                 ("share.auto.offset.reset", SET, "by_duration:P1DT2H")).raised is None
    assert not share.renew_acknowledge_enabled("sg") and share.dead_letter_topic("sg") == "dlq"
    assert share.auto_offset_reset("sg") == "by_duration:P1DT2H"
    for changes in ([("share.renew.acknowledge.enable", SET, "1")],
                    [("errors.deadletterqueue.topic.name", SET, "__dlq")],
                    [("errors.deadletterqueue.copy.record.enable", SET, "yes")],
                    [("share.auto.offset.reset", SET, "BY_DURATION:PT1H")],
                    [("share.auto.offset.reset", SET, "by_duration: PT1H")],
                    [("share.auto.offset.reset", SET, "by_duration:P1W")],
                    [("share.auto.offset.reset", SET, "by_duration:PT1.5H")],
                    [("share.auto.offset.reset", SET, "by_duration:PT")]):
        assert alter(ctx, "sg", *changes).raised is E.INVALID_CONFIG, changes


def test_iso_8601_durations_as_java_parses_them():
    from kgroup.core.group_configs import by_duration_ms, duration_ms

    assert duration_ms("PT1H") == 3_600_000 and duration_ms("pt1h") == 3_600_000
    assert duration_ms("P1DT2H3M4.5S") == ((24 + 2) * 60 + 3) * 60_000 + 4_500
    assert duration_ms("PT0S") == 0 and duration_ms("+PT1M") == 60_000 and duration_ms("-PT1M") == -60_000
    assert duration_ms("P1DT-1H") == 23 * 3_600_000
    assert [duration_ms(t) for t in ("P", "PT", "P1W", "PT1.5H", "1H", "", "P1D ")] == [None] * 7
    assert by_duration_ms("by_duration:PT-1H") is None and by_duration_ms("by_duration:PT1S") == 1_000
