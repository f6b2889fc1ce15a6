"""Every differential scenario (kgroup.conformance.scenarios), run on Apache Kafka 4.4 and on
kgroup at once, the transcripts compared after the named normalizations only. A scenario
with an explained divergence (kgroup.conformance.divergences) must still differ exactly
there and agree everywhere else. The scenarios of the secured pair (SASL/SCRAM, ACLs, the
initial rebalance delay, group.max.size) run on a second pair started for them."""

from __future__ import annotations

import pytest

from kgroup.conformance.divergences import SCENARIO_DIVERGENCES
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
