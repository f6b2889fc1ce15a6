"""Replaying a recorded group event stream (the broker's __kgroup_events) under other settings."""

from __future__ import annotations

import json
import re

import pytest

from kgroup.cli.main import main
from kgroup.lab.recorded import recording
from kgroup.lab.results import simulate
from kgroup.lab.scenario import ScenarioError, scenario_from_dict


def rolling_restart_recording(group: str = "billing") -> list[dict]:
    """What the broker records for 4 dynamic kafka-python-like consumers on 8 partitions,
    then a rolling restart: each leaves and comes back 5 s later with a new member id."""
    events, now, gen = [], 1_700_000_000_000, 0

    def ev(kind, member=None, **more):
        events.append({"v": 1, "time_ms": now, "group": group, "protocol": "classic", "kind": kind,
                       "member": member, "instance": None, "generation": gen, "member_epoch": None,
                       "state": more.pop("state", "Stable"), "partitions": more.pop("partitions", None),
                       "reason": None, **more})

    def rebalance(members):
        nonlocal gen
        ev("rebalance_started", state="PreparingRebalance")
        gen += 1
        ev("rebalance_completed")
        for i, m in enumerate(members):
            ev("assignment_changed", m, partitions=[["orders", p] for p in range(8) if p % len(members) == i])

    members = [f"consumer-{i}-a" for i in range(4)]
    for m in members:
        ev("member_joined", m)
    rebalance(members)
    for i in range(4):
        now += 30_000
        ev("member_left", members[i])
        rebalance([m for m in members if m != members[i]])
        now += 5_000
        members[i] = f"consumer-{i}-b"
        ev("member_joined", members[i])
        rebalance(members)
    return events


def test_a_rolling_restart_becomes_stops_and_starts_of_the_same_four_members():
    rec = recording(rolling_restart_recording(), "billing")
    assert rec.members == 4 and rec.restarts == 4 and rec.rebalances == 9
    assert rec.scenario["topics"] == {"orders": 8}
    kinds = [next(iter(e)) for e in rec.scenario["events"]]
    assert kinds == ["start"] * 4 + ["stop", "start"] * 4
    stops = [e["stop"]["member"] for e in rec.scenario["events"] if "stop" in e]
    starts = [e["start"]["member"] for e in rec.scenario["events"][4:] if "start" in e]
    assert stops == starts == [0, 1, 2, 3]


def test_replayed_as_static_members_the_restarts_cost_no_rebalance():
    events = rolling_restart_recording()
    dynamic = simulate(scenario_from_dict(recording(events, "billing").scenario)).summary
    static = simulate(scenario_from_dict(recording(events, "billing", overrides={
        "static": True, "session_timeout_ms": 10_000}).scenario)).summary
    assert dynamic["rebalances"] >= 8           # as recorded: two per restart
    assert static["rebalances"] == 0 and static["moved"] == 0
    assert static["double_ownership"] == dynamic["double_ownership"] == 0


def test_kgroup_lab_replay_compares_the_recording_with_what_if_variants(tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(e) for e in rolling_restart_recording()]
    lines.insert(3, "billing\t" + lines[3])                 # as `kgroup consume --print-key` prints it
    path.write_text("\n".join(lines) + "\n")
    assert main(["lab", "replay", str(path), "--out", str(tmp_path / "o"),
                 "--as", "static=true,session_timeout_ms=10000", "--as", "protocol=consumer,assignor=uniform"]) == 0
    printed = capsys.readouterr().out
    assert "recorded" in printed and "static=true" in printed and "protocol=consumer" in printed
    assert "4 members (4 joins taken as restarts), 9 rebalances recorded" in printed
    assert (tmp_path / "o" / "report.html").read_text().count('<svg class="plot"') == 6


def test_a_group_missing_from_the_recording_is_a_clear_error(tmp_path):
    with pytest.raises(ScenarioError, match="no events of group 'other'"):
        recording(rolling_restart_recording(), "other")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["lab", "replay", str(bad), "--out", str(tmp_path / "o")]) == 1


def test_a_recorded_coordinator_move_becomes_a_failover_of_its_load_time():
    events = rolling_restart_recording()
    moved_at = events[-1]["time_ms"] + 10_000
    events.append({**events[-1], "time_ms": moved_at, "kind": "coordinator_loaded", "member": None,
                   "partitions": None, "node": 2, "previous_node": 1, "load_ms": 1500})
    rec = recording(events, "billing")
    (failover,) = [e["coordinator_failover"] for e in rec.scenario["events"] if "coordinator_failover" in e]
    start = 1.0 + (moved_at - events[0]["time_ms"]) / 1000
    assert failover == {"at_s": start - 1.5, "detect_s": 0.0, "load_s": 1.5}
    assert simulate(scenario_from_dict(rec.scenario)).summary["double_ownership"] == 0


def short_lived_recording(group: str = "once", *, back_after_ms: int | None = None) -> list[dict]:
    """One dynamic consumer that joins, gets 6 partitions at 3 s, reads for 0.6 s and leaves;
    with ``back_after_ms``, a new consumer (not a restart: later than the restart window)
    joins that long after and stays."""
    t = 1_700_000_000_000

    def ev(kind, at, member="consumer-1-a", **more):
        return {"v": 1, "time_ms": t + at, "group": group, "protocol": "classic", "kind": kind, "member": member,
                "instance": None, "generation": 1, "member_epoch": None, "state": "Stable",
                "partitions": more.pop("partitions", None), "reason": None, **more}

    events = [ev("member_joined", 0), ev("rebalance_completed", 3000, member=None),
              ev("assignment_changed", 3000, partitions=[["orders", p] for p in range(6)]),
              ev("member_left", 3600)]
    if back_after_ms is not None:
        at = 3600 + back_after_ms
        events += [ev("member_joined", at, "consumer-2-a"), ev("rebalance_completed", at + 3000, member=None),
                   ev("assignment_changed", at + 3000, "consumer-2-a", partitions=[["orders", p] for p in range(6)]),
                   ev("rebalance_completed", at + 60_000, member=None)]
    return events


def test_a_member_that_left_is_gone_not_holding_nothing_until_the_end():
    # The issue: a consumer that held its partitions under a second and left was charged
    # 6 partitions x the 120 s tail = 720 unowned partition-seconds, and drawn holding nothing.
    rec = recording(short_lived_recording(), "once")
    assert rec.story == ["m000 ran 1-4.6 s (left), then gone"]
    assert rec.scenario["duration_s"] == 4.6 + 5.0          # the group ended empty: a short tail
    for overrides in ({}, {"static": True}):
        result = simulate(scenario_from_dict(recording(short_lived_recording(), "once",
                                                       overrides=overrides).scenario), record_timeline=True)
        assert result.summary["unowned_partition_s"] == 0.0
        assert result.gone == {"m000": 4.6}
        held = {(p, start, end) for _, _, p, start, end in result.timeline}
        assert {p for p, _, _ in held} == set(range(6)) and all(end == 4600 for _, _, end in held)


def test_an_empty_group_owes_nothing_until_a_new_member_joins():
    back = 600_000                                          # beyond the 120 s restart window
    rec = recording(short_lived_recording(back_after_ms=back), "once")
    assert rec.members == 2 and rec.restarts == 0
    assert rec.story[0] == "m000 ran 1-4.6 s (left), then gone" and rec.story[1].startswith("m001 ran from 604.6 s")
    result = simulate(scenario_from_dict(rec.scenario)).summary
    # Only the new member's own join (its 3 s initial delay and the join) leaves partitions
    # unowned: 6 partitions for a few seconds, not for the ten empty minutes.
    assert 0 < result["unowned_partition_s"] < 6 * 5


def test_metrics_stop_the_unowned_integral_while_every_member_is_gone():
    from kgroup.lab.metrics import Metrics

    parts = [("t", 0), ("t", 1)]
    m = Metrics(parts)
    m.member_started(0)
    m.assign(0, "m000", parts, {}, lambda member, p: 0)
    m.converged({"m000": None}, 2)
    m.tick(1000)
    m.release(0, "m000", parts)
    m.tick(1500)                                            # 2 partitions x 0.5 s: still a member
    m.member_gone(0, "m000")
    m.tick(60_000)
    assert m.unowned_partition_ms == 1000 and m.gone_at == {"m000": 1500}
    m.member_started(1)
    m.tick(61_000)
    assert m.unowned_partition_ms == 3000


def test_the_report_draws_a_member_that_left_as_gone(tmp_path, capsys):
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in short_lived_recording()))
    assert main(["lab", "replay", str(path), "--out", str(tmp_path / "o"), "--as", "static=true"]) == 0
    printed = capsys.readouterr().out
    assert "Replayed: m000 ran 1-4.6 s (left), then gone." in printed
    html = (tmp_path / "o" / "report.html").read_text()
    assert html.count("m000: left the group for good at 4.60 s") == 2       # one timeline per variant
    # Red only while it was a member waiting for its first assignment, never after it left.
    gaps = [(float(a), float(b)) for a, b in re.findall(r"m000: holds nothing, ([\d.]+)-([\d.]+) s", html)]
    assert gaps and all(b <= 4.6 for _, b in gaps)
