"""The rebalance lab reproduces the protocol facts (issue 7's acceptance), on the real
coordinator, member state machines and assignors."""

from __future__ import annotations

import pytest

from tests.lab.labctx import run, scenario

BOUNCE = [{"rolling_bounce": {"at_s": 60, "down_s": 5, "interval_s": 30}}]


def test_static_members_restarting_within_the_session_timeout_cause_no_rebalance():
    r = run(scenario(members={"static": True}, events=BOUNCE))
    assert len(r.windows) == 6
    assert r.summary["rebalances"] == 0
    assert r.summary["moved"] == 0
    for w in r.windows:
        # Only the restarting member's own partitions wait for it; nobody else stops.
        assert w["rounds"] == 0 and w["unowned_other"] == 0 and w["members_stopped"] <= 1, w


def test_dynamic_eager_members_rebalance_on_every_restart_and_everyone_stops():
    r = run(scenario(events=BOUNCE))
    assert r.summary["rebalances"] >= len(r.windows) == 6
    for w in r.windows:
        assert w["rounds"] >= 1, w
        assert w["members_stopped"] == 6, w          # eager: every member revokes everything
        assert w["unowned_other"] > 0, w


def test_consumer_protocol_restart_leaves_only_the_restarting_members_partitions_unowned():
    r = run(scenario(members={"protocol": "consumer", "assignor": "uniform"}, events=BOUNCE))
    assert r.summary["rebalances"] > 0                # a dynamic member's leave and join bump the epoch
    for w in r.windows:
        assert w["unowned_other"] == 0, w
        assert w["members_stopped"] <= 1, w


def test_static_consumer_protocol_members_leave_temporarily_without_an_epoch_bump():
    r = run(scenario(members={"protocol": "consumer", "assignor": "uniform", "static": True}, events=BOUNCE))
    assert r.summary["rebalances"] == 0 and r.summary["moved"] == 0


@pytest.mark.parametrize("protocol, session_ms, heartbeat_ms", [
    ("classic", 10_000, 3_000), ("consumer", 45_000, 5_000)])
def test_a_crash_without_leave_leaves_its_partitions_unowned_for_about_the_session_timeout(
        protocol, session_ms, heartbeat_ms):
    assignor = "range" if protocol == "classic" else "uniform"
    r = run(scenario(members={"protocol": protocol, "assignor": assignor},
                     events=[{"crash": {"at_s": 120, "member": 2}}]))
    (w,) = r.windows
    # Detection waits out the session from the victim's last heartbeat (up to one interval
    # before the crash); reassignment then takes a rebalance.
    assert session_ms - heartbeat_ms <= w["max_unowned_s"] * 1000 <= session_ms + 2 * heartbeat_ms, w
    assert w["unowned_other"] == 0 if protocol == "consumer" else True


def test_cooperative_rebalancing_takes_two_rounds_when_partitions_move():
    r = run(scenario(members={"assignor": "cooperative-sticky"},
                     events=[{"scale": {"at_s": 120, "to": 8}}]))
    (scale,) = r.windows                              # one window for the scale event
    assert scale["kind"] == "scale" and scale["moved"] > 0 and scale["rounds"] == 2, scale
    # Members keep what stays: only the two newcomers wait; the incumbents never stop.
    assert scale["members_stopped"] <= 2, scale
    assert scale["moved"] == scale["min_moved"], scale  # cooperative-sticky moves the minimum


def test_cooperative_restart_revokes_in_one_round_and_assigns_in_the_next():
    r = run(scenario(members={"assignor": "cooperative-sticky"}, events=BOUNCE))
    for w in r.windows:
        assert w["moved"] > 0 and w["rounds"] >= 2, w
        assert w["members_stopped"] <= 1, w


def test_partition_growth_reaches_consumer_protocol_members_within_a_heartbeat():
    growth = [{"add_partitions": {"at_s": 120, "topic": "orders", "to": 96}}]
    consumer = run(scenario(members={"protocol": "consumer", "assignor": "uniform"}, events=growth))
    classic = run(scenario(members={"metadata_max_age_ms": 300_000}, events=growth))
    (c,), (k,) = consumer.windows, classic.windows
    assert c["converge_s"] <= 5.0 + 1.0, c          # the coordinator knows: next heartbeat
    assert k["converge_s"] > c["converge_s"], (k, c)  # the classic leader waits for metadata


def test_the_real_protocols_keep_every_invariant_under_mixed_churn():
    events = [{"churn": {"every_s": 40, "to_s": 450, "kinds": ["bounce", "crash", "gc_pause", "cut"], "down_s": 4,
                         "pause_s": 15, "restart_after_s": 20}},
              {"coordinator_restart": {"at_s": 250, "down_s": 2}},
              {"add_partitions": {"at_s": 300, "topic": "orders", "to": 30}}]
    for members in ({"assignor": "range"}, {"assignor": "cooperative-sticky"}, {"static": True},
                    {"protocol": "consumer", "assignor": "uniform"},
                    {"protocol": "consumer", "assignor": "range", "static": True}):
        for seed in (1, 2):
            r = run(scenario(seed=seed, duration_s=600, members=members, events=events))
            s = r.summary
            assert s["double_ownership"] == 0 and s["offset_regressions"] == 0, (members, seed, s)
            assert s["events"] >= 10
            assert s["unconverged_events"] == 0, (members, seed, r.windows)


def test_a_static_consumer_member_back_from_a_crash_before_its_session_ends_is_refused():
    # KIP-848: the old member still holds the instance id (it never left with epoch -2), so
    # the new process gets UNRELEASED_INSTANCE_ID, which Kafka's consumer treats as fatal.
    # Restarted by its supervisor until the old session (45 s) has expired, it gets back in.
    r = run(scenario(members={"protocol": "consumer", "assignor": "uniform", "static": True},
                     events=[{"crash": {"at_s": 120, "member": 2, "restart_after_s": 5}}]))
    (w,) = r.windows
    assert r.summary["fatal_errors"] >= 3
    assert w["converge_s"] is not None and 40 <= w["converge_s"] <= 70, w
    assert r.summary["double_ownership"] == 0


@pytest.mark.parametrize("members", [{"assignor": "range"}, {"assignor": "cooperative-sticky"}, {"static": True},
                                     {"protocol": "consumer", "assignor": "uniform"}])
def test_a_coordinator_failover_keeps_every_member_and_partition_and_lasts_detection_plus_load(members):
    # Another node takes the partition over after 0.8 s and loads it for 2 s, answering
    # COORDINATOR_LOAD_IN_PROGRESS: members keep their generation or epoch and partitions.
    r = run(scenario(members=members, events=[{"coordinator_failover": {"at_s": 200, "detect_s": 0.8, "load_s": 2}}]))
    (w,) = r.windows
    assert w["kind"] == "coordinator_failover"
    assert w["rounds"] == 0 and w["moved"] == 0 and w["unowned_partition_s"] == 0, w
    assert 2.8 <= w["converge_s"] <= 2.8 + 1.0, w           # plus at most one rediscovery backoff
    assert r.summary["rebalances"] == 0 and r.summary["double_ownership"] == 0
