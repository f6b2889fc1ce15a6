"""Fixtures of the streams scenarios: the broker each scenario runs on (Apache Kafka 4.4, the
session's `kafka_reference`; kgroup beside it once it serves streams groups), and one Streams
JVM per module (instances of every scenario of the module run in it; a test that kill -9s an
instance starts a JVM of its own for it)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Iterator

import pytest

from kgroup.testing import Broker
from tests.interop.toolchain import build
from tests.streams.app import StreamsJvm

# kgroup's test broker runs streams groups as REFERENCE_SETTINGS make Kafka run them.
KGROUP_GROUP = {"streams_initial_rebalance_delay_ms": 0}

pytestmark = pytest.mark.integration


@dataclass
class Target:
    """A broker a scenario runs on."""

    kind: str                 # "kafka" (Apache Kafka 4.4) or "kgroup"
    bootstrap: str
    handle: object


@pytest.fixture(scope="session")
def streams_build():
    return build("java")


@pytest.fixture(scope="module")
def jvm(streams_build, tmp_path_factory) -> Iterator[StreamsJvm]:
    with StreamsJvm(streams_build, tmp_path_factory.mktemp("streams") / "jvm.log") as j:
        yield j


@pytest.fixture(scope="module")
def kgroup_broker() -> Iterator[Broker]:
    broker = Broker(group=KGROUP_GROUP).start()
    try:
        yield broker
    finally:
        if not broker.process.alive():
            print(broker.log()[-5000:])
        broker.close()


@pytest.fixture(params=["kgroup", "kafka"])
def broker(request) -> Target:
    """Each scenario on kgroup and on Apache Kafka 4.4 (the session's reference)."""
    if request.param == "kafka":
        kafka = request.getfixturevalue("kafka_reference")
        return Target("kafka", kafka.bootstrap, kafka)
    kgroup = request.getfixturevalue("kgroup_broker")
    return Target("kgroup", kgroup.bootstrap, kgroup)


@pytest.fixture
def name() -> str:
    return uuid.uuid4().hex[:8]
