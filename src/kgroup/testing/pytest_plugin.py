"""The pytest plugin of kgroup (registered under `pytest11`, so `pip install kgroup` is all
a project needs): brokers and clusters as fixtures.

    def test_my_consumer_survives_a_rebalance(kgroup_broker):
        app = start_my_app(kgroup_broker.bootstrap)
        kgroup_broker.wait_for_group("my-app", state="Stable", members=1)
        kgroup_broker.add_fault("Heartbeat", "REBALANCE_IN_PROGRESS", group="my-app")
        ...

- `kgroup_broker`: a fresh `kgroup.testing.Broker` for the test, closed after it.
- `kgroup_broker_session`: one broker for the whole session (faster for many small
  tests); its faults are cleared after each test that used it, its groups and topics stay.
- `kgroup_cluster` / `kgroup_cluster_session`: the same for a `kgroup.testing.Cluster`.
- `kafka_reference`: one Apache Kafka 4.4 (`kgroup.testing.reference.ReferenceKafka`) for the
  whole session, the oracle of differential tests (`kafka_reference_side`: the same broker
  with the recording proxy of `kgroup.conformance`). Without Java or the jars (`make
  reference`) the tests that use it are skipped with the reason — or fail, when
  `KGROUP_REQUIRE_REFERENCE=1` (as `make test` sets), so CI never skips them.

Settings for the per-test fixtures come from the `kgroup` marker:
`@pytest.mark.kgroup(group={"min_session_timeout_ms": 1000}, settings={...}, nodes=3)`.

Every process these fixtures start (and any other started through
`kgroup.testing.process.ChildProcess`) is watched: a failing test's report shows what each
of them printed while the test ran (the last lines of it, and whether it is still running
or how it ended), and whatever is still running when the session ends is stopped — also
when the session is ended by SIGTERM (a CI timeout, `kill`), which pytest would otherwise
die of at once, leaving every child (each in a session of its own) running.
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any, Iterator

import pytest

LOG_TAIL_LINES = 60
_MARK = pytest.StashKey[Any]()
_REAPED = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    _interrupt_on_sigterm()
    config.addinivalue_line(
        "markers", "kgroup(settings=None, group=None, nodes=3): settings of the kgroup_broker / "
        "kgroup_cluster fixtures for this test (TOML settings, the [group] table, cluster size)")


def _interrupt_on_sigterm() -> None:
    """SIGTERM ends the session as Ctrl-C does (KeyboardInterrupt: fixtures torn down,
    `pytest_sessionfinish` reaps the children), unless someone else handles SIGTERM here."""
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _sigterm)


def _sigterm(signum: int, frame: Any) -> None:
    # Once only: a second SIGTERM during the teardown ends the process the default way.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


def _children() -> Any:
    """kgroup.testing.process if anything imported it (no child was started otherwise)."""
    return sys.modules.get("kgroup.testing.process")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    module = _children()
    if module is not None:
        module.forget_ended()           # what ended before this test is not its concern
    item.stash[_MARK] = module.mark() if module is not None else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A failing test's report gets each child's output since the test began."""
    outcome = yield
    report = outcome.get_result()
    module = _children()
    if not report.failed or module is None:
        return
    moment = item.stash.get(_MARK, None) or module.Mark.beginning()
    shown = {name for name, _ in report.sections}
    for title, text in module.output_since(moment):
        title = f"{title} during {report.when}"
        if title not in shown:
            report.sections.append((title, text))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Whatever child is still running now was left behind by a test or fixture: stop it."""
    module = _children()
    session.config.stash[_REAPED] = module.reap_all() if module is not None else []


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    reaped = config.stash.get(_REAPED, [])
    if reaped:
        terminalreporter.write_line(f"kgroup: stopped {len(reaped)} child process(es) left running at the end: "
                                    + ", ".join(reaped[:10]) + (" ..." if len(reaped) > 10 else ""))


def _marker_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("kgroup")
    return dict(marker.kwargs) if marker is not None else {}


def _print_logs(handle: Any) -> None:
    for name, text in handle.logs().items():
        tail = "\n".join(text.splitlines()[-LOG_TAIL_LINES:])
        print(f"---- kgroup {name} log (last {LOG_TAIL_LINES} lines) ----\n{tail}")


@pytest.fixture
def kgroup_broker(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh broker for this test (`kgroup.testing.Broker`), stopped and removed after it."""
    from kgroup.testing import Broker

    options = _marker_options(request)
    options.pop("nodes", None)
    with Broker(**options) as broker:   # started; stopped and its dir removed at the end
        yield broker


@pytest.fixture(scope="session")
def _kgroup_shared_broker() -> Iterator[Any]:
    from kgroup.testing import Broker

    with Broker() as broker:
        yield broker


@pytest.fixture
def kgroup_broker_session(_kgroup_shared_broker: Any) -> Iterator[Any]:
    """One broker for the whole test session; faults are cleared after each test."""
    yield _kgroup_shared_broker
    if _kgroup_shared_broker.process.alive():
        _kgroup_shared_broker.clear_faults()


@pytest.fixture
def kgroup_cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh cluster for this test (`kgroup.testing.Cluster`, 3 nodes unless the `kgroup`
    marker says `nodes=N`), stopped and removed after it."""
    from kgroup.testing import Cluster

    with Cluster(**_marker_options(request)) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def _kgroup_shared_cluster() -> Iterator[Any]:
    from kgroup.testing import Cluster

    with Cluster() as cluster:
        yield cluster


@pytest.fixture
def kgroup_cluster_session(_kgroup_shared_cluster: Any) -> Iterator[Any]:
    """One 3-node cluster for the whole test session. After each test its faults are
    cleared and every node that test killed, stopped or paused is running again; moved
    coordinators stay where they were moved."""
    yield _kgroup_shared_cluster
    for i, node in enumerate(_kgroup_shared_cluster.nodes):
        node.resume()
        if not node.alive():
            _kgroup_shared_cluster.start_node(i)
    _kgroup_shared_cluster.clear_faults()


@pytest.fixture(scope="session")
def kafka_reference_side() -> Iterator[Any]:
    """The session's Apache Kafka 4.4 as a side of a differential comparison
    (`kgroup.conformance.target.Side`): the broker, and the recording proxy its RECORDED
    listener is advertised at (its PLAINTEXT listener stays direct)."""
    from kgroup.testing.reference import require_reference

    require_reference()
    from kgroup.conformance.sides import close_side, reference_side

    side = reference_side()
    try:
        yield side
    finally:
        if not side.handle.alive():
            _print_logs(side.handle)
        close_side(side)


@pytest.fixture(scope="session")
def kafka_reference(kafka_reference_side: Any) -> Any:
    """Apache Kafka 4.4 itself (`ReferenceKafka`), single-node KRaft, started once for the
    session with the settings that make it comparable with kgroup."""
    return kafka_reference_side.handle
