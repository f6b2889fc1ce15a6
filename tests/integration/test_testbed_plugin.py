"""The pytest plugin in a project that only did `pip install kgroup`: a throwaway project in
a temp dir, a fresh venv with the wheel built from this checkout plus pytest and one Kafka
client, and a test suite there that uses the fixtures. And `kgroup.testing` stays light."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

# The user's tests: their own consumer code, a fault, a wait, settings by marker, and the
# session broker shared by two tests (faults cleared between them).
USER_TESTS = '''
import pytest
from confluent_kafka import Consumer, Producer


def consume(bootstrap, topic, group, count):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "heartbeat.interval.ms": 300})
    consumer.subscribe([topic])
    seen = []
    while len(seen) < count:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.append(msg.value())
    return consumer, seen


def test_my_consumer_reads_through_a_refused_heartbeat(kgroup_broker):
    kgroup_broker.create_topic("orders", 2)
    producer = Producer({"bootstrap.servers": kgroup_broker.bootstrap})
    for i in range(10):
        producer.produce("orders", value=str(i).encode())
    assert producer.flush(10) == 0
    kgroup_broker.add_fault("Heartbeat", "NOT_COORDINATOR", group="app", count=2)
    consumer, seen = consume(kgroup_broker.bootstrap, "orders", "app", 10)
    group = kgroup_broker.wait_for_group("app", state="Stable", members=1)
    assert sorted(int(v) for v in seen) == list(range(10))
    assert group["members"][0]["assignment"] == {"orders": [0, 1]}
    consumer.close()


@pytest.mark.kgroup(group={"min_session_timeout_ms": 1000})
def test_settings_come_from_the_marker(kgroup_broker):
    # A 1 s session is below the broker's default minimum (6 s): only the marker lets it in.
    kgroup_broker.create_topic("short-topic", 1)
    consumer = Consumer({"bootstrap.servers": kgroup_broker.bootstrap, "group.id": "short",
                         "session.timeout.ms": 1000, "heartbeat.interval.ms": 200})
    consumer.subscribe(["short-topic"])
    for _ in range(300):
        consumer.poll(0.1)
        if stable(kgroup_broker, "short"):
            break
    assert kgroup_broker.group("short")["state"] == "Stable"
    consumer.close()


def stable(broker, group):
    from kgroup.testing import ControlError
    try:
        return broker.group(group)["state"] == "Stable"
    except ControlError:
        return False


def test_the_session_broker_first(kgroup_broker_session):
    kgroup_broker_session.add_fault("Fetch", delay_ms=100, count=5)
    assert len(kgroup_broker_session.faults()) == 1


def test_the_session_broker_second(kgroup_broker_session):
    # The same broker, its faults cleared after the test before.
    assert kgroup_broker_session.faults() == []
'''


def run(*cmd: str, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=900, **kw)
    assert done.returncode == 0, f"{' '.join(cmd)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_kgroup_testing_imports_neither_pytest_nor_the_broker():
    code = ("import sys, kgroup.testing\n"
            "loaded = [m for m in ('pytest', 'kgroup.broker.server', 'kgroup.client.consumer') if m in sys.modules]\n"
            "assert not loaded, loaded\n")
    run(sys.executable, "-c", code)


def test_the_fixtures_work_in_a_project_that_only_installed_kgroup(tmp_path):
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT))
    (wheel,) = (tmp_path / "dist").glob("kgroup-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", str(venv))
    python = str(venv / "bin" / "python")
    run(python, "-m", "pip", "install", "-q", str(wheel), "pytest", "confluent-kafka==2.16.1")
    project = tmp_path / "my-app"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_app.py").write_text(textwrap.dedent(USER_TESTS))
    done = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout[-5000:] + done.stderr[-2000:]
    # The plugin came from the installed wheel, not from this checkout.
    listed = run(python, "-c", "import kgroup.testing.pytest_plugin as p; print(p.__file__)").stdout
    assert str(venv) in listed
