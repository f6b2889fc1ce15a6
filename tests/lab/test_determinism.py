"""Same scenario and seed, same numbers; fast-forward changes nothing that is measured."""

from __future__ import annotations

import pytest

from tests.lab.labctx import run, scenario

CHURN = [{"churn": {"every_s": 60, "kinds": ["bounce", "crash", "gc_pause"], "down_s": 5}},
         {"network": {"at_s": 100, "member": 1, "delay_ms": 80, "jitter_ms": 40, "duration_s": 30}}]


@pytest.mark.parametrize("members", [{"assignor": "cooperative-sticky"},
                                     {"protocol": "consumer", "assignor": "uniform"}])
def test_the_same_seed_gives_identical_results(members):
    data = scenario(members=members, events=CHURN, duration_s=500)
    a, b = run(data), run(data)
    assert a.summary == b.summary and a.windows == b.windows and a.stop_s == b.stop_s


def test_another_seed_gives_another_run():
    a = run(scenario(events=CHURN, duration_s=500, seed=1))
    b = run(scenario(events=CHURN, duration_s=500, seed=2))
    assert a.windows != b.windows


@pytest.mark.parametrize("members", [{"assignor": "range"}, {"assignor": "cooperative-sticky", "static": True},
                                     {"protocol": "consumer", "assignor": "uniform"}])
def test_fast_forward_gives_the_same_measurements_as_simulating_every_heartbeat(members):
    events = [{"bounce": {"at_s": 100, "member": 1, "down_s": 5}},
              {"crash": {"at_s": 200, "member": 2, "restart_after_s": 20}},
              {"scale": {"at_s": 320, "to": 8}}]
    fast = run(scenario(members=members, events=events, duration_s=500))
    slow = run(scenario(members=members, events=events, duration_s=500, fast_forward=False))
    assert fast.summary["fast_forward_s"] > 200 and slow.summary["fast_forward_s"] == 0
    assert fast.summary["member_events"] < slow.summary["member_events"] / 2
    keys = ("kind", "member", "rounds", "moved", "min_moved", "members_stopped", "unowned_other")
    assert [{k: w[k] for k in keys} for w in fast.windows] == [{k: w[k] for k in keys} for w in slow.windows]
    for f, s in zip(fast.windows, slow.windows):
        assert f["converge_s"] == pytest.approx(s["converge_s"], abs=0.5), (f, s)
    for k in ("rebalances", "moved", "double_ownership", "offset_regressions"):
        assert fast.summary[k] == slow.summary[k], k
