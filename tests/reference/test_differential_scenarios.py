"""Every differential scenario (kgroup.conformance.scenarios), run on Apache Kafka 4.4 and on
kgroup at once, the transcripts compared after the named normalizations only. A scenario
with an explained divergence (kgroup.conformance.divergences) must still differ exactly
there and agree everywhere else. The scenarios of the secured pair (SASL/SCRAM, ACLs, the
initial rebalance delay, group.max.size) run on a second pair started for them."""

from __future__ import annotations

import asyncio

import pytest

from kgroup.conformance.divergences import SCENARIO_DIVERGENCES
from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.conformance.scenarios import load

pytestmark = pytest.mark.integration

SCENARIOS = load()


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_agrees_with_kafka(request, name):
    scenario = SCENARIOS[name]
    # The secured pair (SASL, an authorizer, ...) starts only when a scenario needs it.
    pair = request.getfixturevalue("secured_pair" if scenario.pair == "secured" else "differential_pair")
    known = SCENARIO_DIVERGENCES.get(name)
    outcome = pair.run_scenario(name, scenario.fn, scenario.timeout, known=known.labels if known else ())
    assert not outcome.errors, outcome.explain()
    assert outcome.agree, f"{name}: {scenario.rule}\n{outcome.explain()}"
    if known is not None:
        assert outcome.comparison.known_differs, (
            f"{name} now agrees with Kafka where divergences.py says it differs ({known.kind}): "
            "remove its entry")


async def _group_ids(address: str) -> list[str]:
    client = await RawClient.open(address, "kgroup-test-list")
    try:
        listed = await client.call(request("ListGroups", 5, states_filter=[], types_filter=[]))
        return [g.group_id for g in listed.groups]
    finally:
        await client.close()


def test_a_scenario_leaves_no_group_of_its_own_behind(differential_pair):
    """The brokers are shared by every scenario and by other modules' tests: a group left in a
    state no real client leaves one in (a JoinGroup with an empty protocol type) made Kafka's
    `kafka-consumer-groups --describe --all-groups` fail as a whole in a later module on the
    same reference Kafka. A scenario's groups are deleted when it ends."""
    name = "classic_invalid_join"
    prefix = differential_pair.next_names(name).prefix
    outcome = differential_pair.run_scenario(name, SCENARIOS[name].fn, SCENARIOS[name].timeout)
    assert not outcome.errors, outcome.explain()
    for side in (differential_pair.kafka, differential_pair.kgroup):
        left = [g for g in asyncio.run(_group_ids(side.direct)) if g.startswith(prefix)]
        assert not left, f"{side.name} still holds {left}"
