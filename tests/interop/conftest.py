"""Fixtures of the interop tests: one kgroup broker and one Java worker per module (a JVM per
group of scenarios, not per test), the reference Kafka 4.4 of the session (`kafka_reference`,
from kgroup's pytest plugin) for the differential ones."""

from __future__ import annotations

import uuid
from typing import Iterator

import pytest

from kgroup.testing import Broker
from tests.interop.java import JavaWorker
from tests.interop.toolchain import build

pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def java_build():
    return build("java")


@pytest.fixture(scope="session")
def go_build():
    return build("go")


@pytest.fixture(scope="module")
def java(java_build, tmp_path_factory) -> Iterator[JavaWorker]:
    worker = JavaWorker(java_build, tmp_path_factory.mktemp("java") / "worker.log")
    try:
        yield worker
    finally:
        worker.close()


@pytest.fixture(autouse=True)
def _fresh_java_events(request) -> None:
    """Each test reads only the events of its own clients (the worker lives for the module)."""
    if "java" in request.fixturenames:
        request.getfixturevalue("java").clear_events()


@pytest.fixture(scope="module")
def kgroup(request) -> Iterator[Broker]:
    """A kgroup broker for the module; a module's `KGROUP_GROUP` / `KGROUP_SETTINGS` adjust it."""
    broker = Broker(group=getattr(request.module, "KGROUP_GROUP", None),
                    settings=getattr(request.module, "KGROUP_SETTINGS", None)).start()
    try:
        yield broker
    finally:
        if not broker.process.alive():
            print(broker.log()[-5000:])
        broker.close()


@pytest.fixture
def name() -> str:
    """A short unique suffix for the topics and groups of one test."""
    return uuid.uuid4().hex[:8]
