"""The differential suite's pair: the session's Kafka 4.4 and one kgroup broker with the same
group settings, each behind a recording proxy (kgroup.conformance)."""

from __future__ import annotations

from typing import Any, Iterator

import pytest


@pytest.fixture(scope="session")
def differential_pair(kafka_reference_side: Any) -> Iterator[Any]:
    from kgroup.conformance.sides import close_side, kgroup_side, pair_of

    side = kgroup_side()
    try:
        yield pair_of(kafka_reference_side, side)
    finally:
        close_side(side)


@pytest.fixture(scope="session")
def secured_pair(kafka_reference_side: Any) -> Iterator[Any]:
    """A second pair only for the scenarios that need SASL/SCRAM, an authorizer, an initial
    rebalance delay or a group size limit (kgroup.conformance.sides.start_secured_pair)."""
    from kgroup.conformance.sides import close_pair, start_secured_pair

    pair = start_secured_pair()
    try:
        yield pair
    finally:
        close_pair(pair)
