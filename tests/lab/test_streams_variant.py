"""Streams groups in the lab (issue 31 item 4): a Kafka Streams app on the streams protocol
(the real streams core: sticky task assignor, standbys, warm-ups by lag) beside the classic
protocol's baseline (cooperative-sticky over tasks), under one churn, with restore time per
moved active task as the cost. Virtual time only."""

from __future__ import annotations

import pytest

from kgroup.lab.restore import RestoreLedger
from kgroup.lab.scenario import ScenarioError, StreamsSettings
from tests.lab.labctx import run, scenario

CHURN = scenario(
    name="streams-churn", duration_s=480, topics={"orders": 12, "payments": 6},
    members={"count": 6, "protocol": "streams", "assignor": "sticky", "session_timeout_ms": 10_000, "heartbeat_interval_ms": 2_000},
    streams={"num_standby_replicas": 1, "changelog_records": 1_000_000, "write_records_per_s": 100,
             "restore_records_per_s": 50_000},
    events=[{"churn": {"from_s": 60, "to_s": 330, "every_s": 30, "kinds": ["bounce", "crash", "gc_pause"],
                       "down_s": 5, "restart_after_s": 40, "pause_s": 15}}])
CLASSIC = scenario(**{**CHURN, "members": {**CHURN["members"], "protocol": "classic",
                                           "assignor": "cooperative-sticky"}})
TASKS = {(t, p) for t, n in (("orders", 12), ("payments", 6)) for p in range(n)}


@pytest.fixture(scope="module")
def both():
    return run(CHURN), run(CLASSIC)


def test_both_variants_end_with_every_task_active_exactly_once(both):
    for result in both:
        assert set(result.tasks) == TASKS
        assert {task: len(holders) for task, holders in result.tasks.items()} == dict.fromkeys(TASKS, 1), \
            result.summary["variant"]
        assert result.summary["double_ownership"] == 0


def test_the_churn_moves_tasks_and_standbys_never_sit_with_their_active(both):
    streams, classic = both
    assert streams.summary["tasks_moved"] > 0 and classic.summary["tasks_moved"] > 0
    assert streams.summary["rebalances"] > 0 and classic.summary["rebalances"] > 0
    assert streams.summary["standby_with_active"] == 0


def test_with_standbys_the_streams_protocol_restores_less_than_the_classic_baseline(both):
    streams, classic = both
    assert streams.summary["standby_promotions"] > 0          # caught-up standbys took over
    assert classic.summary["standby_promotions"] == 0 or classic.summary["restore_s"] > 0
    assert streams.summary["restore_s"] <= classic.summary["restore_s"]
    assert streams.summary["restore_s_per_move"] <= classic.summary["restore_s_per_move"]


def test_the_same_scenario_gives_the_same_numbers():
    assert run(CHURN).summary == run(CHURN).summary


def test_restore_cost_is_the_lag_at_the_restore_rate_and_nothing_for_a_caught_up_standby():
    ledger = RestoreLedger(StreamsSettings(changelog_records=100_000, write_records_per_s=0,
                                           restore_records_per_s=10_000), {"orders"})
    ledger.hold("a", ("orders", 0), 0, active=True)            # the first placement: not a move
    ledger.hold("b", ("orders", 0), 0, active=False)           # b's standby restores for 10 s
    ledger.hold("a", ("orders", 1), 0, active=True)
    ledger.release("a", ("orders", 0), 20_000, active=True)
    ledger.release("b", ("orders", 0), 20_000, active=False)
    ledger.hold("b", ("orders", 0), 20_000, active=True)       # caught up: free
    ledger.release("a", ("orders", 1), 20_000, active=True)
    ledger.hold("c", ("orders", 1), 20_000, active=True)       # no state on c: 10 s
    assert ledger.row() == {"tasks_moved": 2, "restore_s": 10.0, "restore_s_per_move": 5.0, "standby_promotions": 1}


@pytest.mark.parametrize("change, message", [
    ({"streams": None}, "a streams-protocol scenario needs a streams section"),
    ({"events": [{"add_partitions": {"at_s": 10, "topic": "orders", "to": 20}}]}, "do not take add_partitions"),
    ({"members": {**CHURN["members"], "assignor": "uniform"}}, "assignor is sticky"),
    ({"streams": {"restore_records_per_s": 10, "write_records_per_s": 100}}, "would never catch up"),
])
def test_a_streams_scenario_the_lab_cannot_run_says_why(change, message):
    with pytest.raises(ScenarioError, match=message):
        run({**CHURN, **change})


def test_a_static_streams_member_bounced_within_its_session_keeps_its_tasks():
    bounce = {**CHURN, "events": [{"bounce": {"at_s": 120, "member": 2, "down_s": 5}}]}
    dynamic = run(bounce).summary
    static = run({**bounce, "members": {**CHURN["members"], "static": True}}).summary
    assert dynamic["tasks_moved"] > 0
    assert static["tasks_moved"] == 0 and static["unconverged_events"] == 0
