"""The scenario format: what parses, what is refused (and how clearly), and the timeline."""

from __future__ import annotations

import pytest

from kgroup.lab.scenario import ScenarioError, parse_scenario, timeline

GOOD = """
name: demo
seed: 3
duration_s: 120
topics: {a: 6, b: 3}
members: {count: 3, protocol: consumer, assignor: range, static: true}
coordinator: {consumer_session_timeout_ms: 45000}
network: {delay_ms: 2, jitter_ms: 1}
events:
  - bounce: {at_s: 10, member: 1, down_s: 2}
  - rolling_bounce: {at_s: 30, down_s: 1, interval_s: 5}
  - scale: {at_s: 60, to: 5}
  - crash: {at_s: 70, member: 4, restart_after_s: 3}
  - add_partitions: {at_s: 80, topic: b, to: 6}
  - coordinator_restart: {at_s: 90, down_s: 2}
"""


def test_a_full_scenario_parses_with_its_settings():
    sc = parse_scenario(GOOD)
    assert sc.topics == (("a", 6), ("b", 3))
    assert sc.members.protocol == "consumer" and sc.members.assignor == ("range",)
    assert sc.members.static and sc.network.delay_ms == 2
    kinds = [a.kind for a in timeline(sc)]
    assert kinds[:3] == ["start"] * 3
    assert kinds.count("bounce") == 1 + 3 and kinds.count("start") == 3 + 2


def test_the_rolling_bounce_hits_each_member_in_turn():
    sc = parse_scenario(GOOD)
    rolling = [a for a in timeline(sc) if a.kind == "bounce" and a.event == 1]
    assert [(a.member, a.at_ms, a.until_ms) for a in rolling] == [
        (0, 30_000, 31_000), (1, 35_000, 36_000), (2, 40_000, 41_000)]


@pytest.mark.parametrize("text, says", [
    ("members: {protocol: kraft}", "members: protocol must be classic or consumer"),
    ("members: {assignor: fancy}", "unknown client assignor 'fancy'"),
    ("members: {protocol: consumer, assignor: cooperative-sticky}", "unknown server assignor"),
    ("members: {count: 2}\nevents: [{crash: {at_s: 1, member: 5}}]", "member 5 does not exist"),
    ("events: [{explode: {at_s: 1}}]", "unknown event 'explode'"),
    ("events: [{crash: {member: 1}}]", "missing at_s"),
    ("topics: {a: 0}", "topics.a must be a partition count >= 1"),
    ("topics: {a: 3}\nevents: [{add_partitions: {at_s: 1, topic: a, to: 2}}]", "to must be larger"),
    ("durationn_s: 5", "unknown field 'durationn_s'"),
    ("coordinator: {min_session_timeout_ms: 9, max_session_timeout_ms: 1}", "coordinator"),
    ("seed: [1]", "seed must be an integer"),
    ("members: {heartbeat_interval_ms: 20000, session_timeout_ms: 10000}", "below session_timeout_ms"),
    ("topics: {a: 3\n", "not valid YAML"),
    ("events: [{coordinator_failover: {at_s: 5, load_s: -1}}]", "must not be negative"),
])
def test_mistakes_are_refused_with_a_message_that_names_the_field(text, says):
    with pytest.raises(ScenarioError) as info:
        timeline(parse_scenario(text, source="s.yaml"))
    assert says in str(info.value)
    assert str(info.value).startswith("s.yaml")


def test_churn_draws_its_victims_from_the_seed():
    text = "seed: {}\nduration_s: 3600\nmembers: {{count: 8}}\nevents: [{{churn: {{every_s: 120, kinds: [bounce, crash, gc_pause]}}}}]"
    first = timeline(parse_scenario(text.format(1)))
    again = timeline(parse_scenario(text.format(1)))
    other = timeline(parse_scenario(text.format(2)))
    assert first == again
    assert [(a.kind, a.member) for a in first] != [(a.kind, a.member) for a in other]
    hits = [a for a in first if a.kind != "start"]
    assert len(hits) == 30 and {a.kind for a in hits} == {"bounce", "crash", "gc_pause"}


def test_a_coordinator_failover_is_one_window_whose_last_part_is_the_load():
    actions = timeline(parse_scenario("events: [{coordinator_failover: {at_s: 10, detect_s: 0.5, load_s: 2}}]"))
    (a,) = [a for a in actions if a.kind != "start"]
    assert (a.kind, a.at_ms, a.until_ms, a.load_ms) == ("coordinator_failover", 10_000, 12_500, 2_000)
