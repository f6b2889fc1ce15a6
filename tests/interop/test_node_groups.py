"""The Node.js clients in groups, producing idempotently and in transactions, against kgroup:
kafkajs 2.2.4 (classic groups only: it has no static membership, no cooperative rebalancing,
no consumer protocol) and @platformatic/kafka 1.35.0 (classic and consumer-protocol groups,
static members). tests/integration/test_node_clients.py covers their admin calls."""

from __future__ import annotations

import pytest

from tests.interop.node import node, node_available

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module", autouse=True)
def _node():
    node_available()


def _expect(got: dict, count: int, group_members: int | None = None) -> None:
    assert got["produced"] == count
    assert sorted(got["consumed"]) == sorted(f"v{i}" for i in range(count))   # each once, nothing aborted


@pytest.mark.parametrize("produce", ["plain", "idempotent", "transactional"])
def test_kafkajs_group_and_producers(kgroup, name, produce):
    got = node("kafkajs_client.mjs", {"bootstrap": kgroup.bootstrap, "topic": f"kj-{name}", "group": f"kj-{name}",
                                       "count": 10, "produce": produce})
    _expect(got, 10)
    assert got["group"] == {"state": "Stable", "protocol": "RoundRobinAssigner", "members": 1}
    # A transaction's records are followed by its marker: the last record of 5 is offset 6
    # after one aborted record and its marker.
    assert got["committed"] == ([[0, 7], [1, 7]] if produce == "transactional" else [[0, 5], [1, 5]])


@pytest.mark.parametrize("protocol,produce", [("classic", "plain"), ("classic", "transactional"),
                                              ("consumer", "idempotent")])
def test_platformatic_group_and_producers(kgroup, name, protocol, produce):
    topic = f"pk-{name}"
    got = node("platformatic_client.mjs", {"bootstrap": kgroup.bootstrap, "topic": topic, "group": topic,
                                            "count": 10, "produce": produce, "protocol": protocol})
    _expect(got, 10)
    view = kgroup.group(topic)
    assert view["kind"] == {"classic": "classic", "consumer": "consumer"}[protocol]


def test_platformatic_static_member(kgroup, name):
    topic = f"ps-{name}"
    got = node("platformatic_client.mjs", {"bootstrap": kgroup.bootstrap, "topic": topic, "group": topic,
                                            "count": 4, "produce": "plain", "instance": "node-static"})
    _expect(got, 4)
    assert got["group"] == {"state": "STABLE", "instances": ["node-static"]}
