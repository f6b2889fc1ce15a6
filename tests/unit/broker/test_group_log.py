"""Log lines of group changes (broker/observe/group_log.py): one INFO line per change that matters,
WARNINGs for flapping groups and members, structured fields for `--log-format json`."""

from __future__ import annotations

import json
import logging

from kgroup.broker.config import LoggingConfig
from kgroup.broker.observe.group_history import MemberInfo, Rebalance
from kgroup.broker.observe.group_log import GroupLog
from kgroup.broker.observe.log_format import JsonFormatter
from tests.unit.broker.test_group_history import ev


def lines(caplog, level=logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.name == "kgroup.broker.groups"]


def test_member_and_rebalance_lines_carry_client_id_host_instance_duration_and_moves(caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")
    log = GroupLog()
    alpha = MemberInfo("a-1", "i-1", "alpha", "/10.0.0.1")
    log.event(ev("member_joined", 0, member="a-1", instance="i-1"), alpha)
    log.event(ev("rebalance_started", 0, reason="member_joined", generation=3, state="PreparingRebalance"))
    log.event(ev("assignment_changed", 5, member="a-1", partitions=[["t", 0]]))
    log.event(ev("group_state", 5, state="CompletingRebalance"))
    done = Rebalance("g", "classic", 0, "member_joined", 4, 1500, 2, (("t", 0, "b", "a-1"),))
    log.event(ev("rebalance_completed", 1500, generation=4), None, done)
    log.event(ev("member_expired", 9000, member="a-1", instance="i-1", reason="session timeout"), alpha)
    log.event(ev("member_fenced", 9100, member="c", reason="revocation timeout", protocol="consumer"),
              MemberInfo("c", None, "gamma", "/10.0.0.3"))
    log.event(ev("member_left", 9200, member="d", reason="LeaveGroup"))
    log.event(ev("group_state", 9300, state="Empty"))
    log.event(ev("group_state", 9400, state="Dead"))
    log.offsets_expired("g", 3, 9500)
    assert lines(caplog) == [
        "group g: member a-1 joined (client id alpha, host /10.0.0.1, instance i-1)",
        "group g: rebalance started (cause: member joined; from generation 3)",
        "group g: rebalance completed (generation 4, 1500 ms, 2 members, 1 partition moved)",
        "group g: member a-1 expired (session timeout; client id alpha, host /10.0.0.1, instance i-1)",
        "group g: member c fenced (revocation timeout; client id gamma, host /10.0.0.3)",
        "group g: member d left (LeaveGroup; client unknown)",
        "group g: now Empty (no members)",
        "group g: deleted",
        "group g: 3 committed offsets expired (offsets retention)",
    ]
    # Assignments and passing states are DEBUG only.
    assert not any("assigned" in m or "CompletingRebalance" in m for m in lines(caplog))


def test_consumer_groups_say_epoch_and_a_static_member_away_says_so(caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")
    log = GroupLog()
    log.event(ev("rebalance_started", 0, protocol="consumer", generation=5, reason="member_left",
                 state="Assigning"))
    log.event(ev("member_left", 0, protocol="consumer", member="m", instance="i", temporary=True,
                 reason="ConsumerGroupHeartbeat"))
    log.event(ev("rebalance_completed", 10, protocol="consumer", generation=5),
              None, Rebalance("g", "consumer", 0, "member_left", 5, 10, 1))
    log.event(ev("member_left", 20, protocol="consumer", member="n", reason="ConsumerGroupHeartbeat"))
    log.event(ev("rebalance_started", 20, protocol="consumer", generation=6, reason="member_left", state="Empty"))
    assert lines(caplog) == [
        "group g: rebalance started (cause: member left; group epoch 5)",
        "group g: member m left temporarily (ConsumerGroupHeartbeat; static member, keeps its partitions "
        "until its session times out; instance i)",
        "group g: rebalance completed (group epoch 5, 10 ms, 1 member, 0 partitions moved)",
        "group g: member n left (ConsumerGroupHeartbeat; client unknown)",
        "group g: now Empty (no members)",
    ]


def test_more_rebalances_than_the_limit_within_the_window_warn_once_per_window(caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")
    log = GroupLog(LoggingConfig(rebalance_warn_count=3, rebalance_warn_window_ms=60_000))
    for t in (0, 10_000, 20_000):
        log.event(ev("rebalance_completed", t))
    assert lines(caplog, logging.WARNING) == []
    log.event(ev("rebalance_completed", 30_000))                 # the 4th within 60 s
    log.event(ev("rebalance_completed", 40_000))                 # still flapping: no second warning
    assert lines(caplog, logging.WARNING) == [
        "group g: 4 rebalances in the last 60 s (more than 3): members keep joining, leaving or timing out; "
        "check their logs, session.timeout.ms and max.poll.interval.ms"]
    log.event(ev("rebalance_completed", 200_000))                # a minute later: alone in the window
    log.event(ev("rebalance_completed", 300_000))
    assert len(lines(caplog, logging.WARNING)) == 1


def test_a_member_fenced_repeatedly_warns_by_its_instance_id(caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")
    log = GroupLog(LoggingConfig(fenced_warn_count=2, rebalance_warn_window_ms=60_000))
    for i, t in enumerate((0, 1000, 2000)):
        log.event(ev("member_fenced", t, member=f"m-{i}", instance="i-1", reason="revocation timeout"))
    log.event(ev("member_fenced", 3000, member="other", instance="i-2", reason="revocation timeout"))
    warnings = lines(caplog, logging.WARNING)
    assert len(warnings) == 1 and warnings[0].startswith("group g: member i-1 fenced 3 times in the last 60 s")


def test_json_lines_carry_the_fields_as_keys(caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")
    log = GroupLog()
    log.event(ev("member_joined", 0, member="a", generation=2), MemberInfo("a", None, "alpha", "/h"))
    out = json.loads(JsonFormatter().format(caplog.records[-1]))
    assert out["message"] == "group g: member a joined (client id alpha, host /h)"
    assert (out["level"], out["logger"], out["group"], out["event"]) == ("INFO", "kgroup.broker.groups", "g",
                                                                        "member_joined")
    assert (out["member"], out["client_id"], out["client_host"], out["generation"]) == ("a", "alpha", "/h", 2)
    assert out["time"].endswith("Z")
