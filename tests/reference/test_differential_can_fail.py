"""The comparison can fail: a deliberately wrong kgroup (the session's kgroup broker made to
answer one Heartbeat with another error code, through its fault API — the handler's answer
flipped on the wire) makes a differential scenario disagree with Kafka 4.4, and the
difference names the flipped code. The same scenario run clean agrees."""

from __future__ import annotations

import pytest

from kgroup.conformance.scenarios import load

pytestmark = pytest.mark.integration

NAME = "classic_unknown_member_and_stale_generation"


def test_a_flipped_error_code_makes_the_scenario_disagree(differential_pair):
    scenario = load()[NAME]
    pair = differential_pair
    clean = pair.run_scenario(NAME, scenario.fn, scenario.timeout)
    assert clean.agree, clean.explain()

    group = pair.next_names(NAME).group()
    fault = pair.kgroup.handle.add_fault("Heartbeat", "REBALANCE_IN_PROGRESS", group=group, count=1)
    try:
        wrong = pair.run_scenario(NAME, scenario.fn, scenario.timeout)
    finally:
        armed = {f["id"] for f in pair.kgroup.handle.faults()}
        if fault in armed:
            pair.kgroup.handle.remove_fault(fault)
    assert fault not in armed, "the flipped answer was never given"
    assert not wrong.errors, wrong.explain()
    assert not wrong.agree
    diff = wrong.comparison.diff
    assert "-heartbeat of an unknown member" in diff and "UNKNOWN_MEMBER_ID" in diff
    assert "+heartbeat of an unknown member" in diff and "REBALANCE_IN_PROGRESS" in diff
