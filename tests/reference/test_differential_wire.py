"""Differential wire checks (kgroup.conformance.wire): for every API version either broker
advertises, hypothesis-generated well-formed requests (a fixed seed) go to Kafka 4.4 and to
kgroup — as encoded, with bytes after the body and with an unknown tagged field — and the
answers are compared field by field after the named normalizations. A version only Kafka
serves must have its reason (wire.NOT_SERVED, wire.VERSION_GAPS); an explained difference
(wire.WIRE_DIVERGENCES) must still show, and nothing else may differ. One test per API key,
on the session's differential pair."""

from __future__ import annotations

import pytest

from kgroup.conformance.messages import NAMES
from kgroup.conformance.wire import NOT_SERVED
from kgroup.broker.concerns import SERVED as SUPPORTED_APIS

pytestmark = pytest.mark.integration

# Every API key either broker might advertise: kgroup's own, and Kafka's others (named, or
# listed as not served with their reason).
KEYS = sorted(set(SUPPORTED_APIS) | set(NAMES) | set(NOT_SERVED))


def _check(pair, only) -> list:
    from kgroup.conformance import wire

    results = wire.run_wire_checks(pair.kafka.direct, pair.kgroup.direct, pair.advertised, pair.run, only=only)
    bad = [r for r in results if r.unexplained]
    assert not bad, "\n\n".join(f"{r.name} v{r.version}: {r.detail}" for r in bad)
    return results


@pytest.mark.parametrize("api_key", KEYS, ids=[f"{k}-{NAMES.get(k, k)}" for k in KEYS])
def test_every_advertised_version_answers_as_kafka_does(differential_pair, api_key):
    results = _check(differential_pair, lambda key, version: key == api_key)
    advertised = [r for r in differential_pair.advertised.values() if api_key in r]
    if advertised:
        assert [r for r in results if r.version >= 0], "an advertised API with no version checked"


def test_no_api_is_advertised_that_the_checks_do_not_know(differential_pair):
    """A new API key in either broker's ApiVersions must be added to the table above."""
    seen = set(differential_pair.advertised["kafka"]) | set(differential_pair.advertised["kgroup"])
    assert seen <= set(KEYS), sorted(seen - set(KEYS))
