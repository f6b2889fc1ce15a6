"""The group events stay what they were: recorded event streams, played again.

fixtures/group_events.jsonl holds op scripts (event_scenarios.py) over groups of every kind
-- classic joins, syncs, static restarts and leaves, consumer and share members joining,
reconciling, stepping out and timing out, a classic group migrating to the consumer protocol
and back, deletes, rebalances and expiries on request, transactional offset commits -- with
the `__kgroup_events` values the coordinator gave for them when they were recorded (by the
summary-diffing event tracker the handlers' own events replaced). Each script is run again
and every value must come out byte for byte; the recorded values must also still read as
the contract says (the broker's group timelines and the lab's replay fold them).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kgroup.broker.observe.group_history import GroupHistory
from kgroup.lab.recorded import group_ids, recording
from kgroup.lab.results import simulate
from kgroup.lab.scenario import scenario_from_dict

from tests.unit.core.event_scenarios import run

FIXTURES = Path(__file__).parent / "fixtures" / "group_events.jsonl"
SCENARIOS = [json.loads(line) for line in FIXTURES.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_the_recorded_events_come_out_again_byte_for_byte(scenario):
    got = [e.decode() for e in run(scenario["ops"])]
    want = scenario["events"]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"event {i} of {scenario['name']}"
    assert len(got) == len(want)


def test_the_recorded_streams_still_read_as_the_contract_says():
    events = [json.loads(e) for s in SCENARIOS for e in s["events"]]
    kinds = {e["kind"] for e in events}
    assert {"member_joined", "member_left", "member_expired", "member_fenced", "rebalance_started",
            "rebalance_completed", "assignment_changed", "group_state", "txn_offsets_committed"} <= kinds
    assert {e["protocol"] for e in events} == {"classic", "consumer", "share"}
    for e in events:
        assert e["v"] == 1 and isinstance(e["time_ms"], int) and isinstance(e["generation"], int)
    history = GroupHistory()
    completed = [history.apply(e) for e in events]
    assert sum(r is not None for r in completed) == sum(e["kind"] == "rebalance_completed" for e in events)
    assert set(group_ids(events)) >= {"g", "cg", "sg", "mg"}
    # The lab replays a classic and a consumer group of a recorded stream.
    mixed = [json.loads(e) for e in SCENARIOS[0]["events"]]
    for group, protocol in (("g", "classic"), ("cg", "consumer")):
        replay = recording(mixed, group)
        assert replay.protocol == protocol and replay.members > 0
        result = simulate(scenario_from_dict(replay.scenario), group=group)
        assert result.summary["protocol"] == protocol
