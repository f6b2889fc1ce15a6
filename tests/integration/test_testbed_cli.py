"""`kgroup control ...` against a broker's control API, as a shell script would use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kgroup.testing import Broker
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import ConsumerThread, wait_for
from tests.integration.testbed_support import names

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b
        assert "Traceback" not in b.log()


def kgroup(broker, *args: str, env_control: bool = False) -> subprocess.CompletedProcess:
    """`kgroup control ARGS`, through the script's own `main` in this process."""
    argv = ["control", *args]
    env = {}
    if env_control:
        env["KGROUP_CONTROL"] = broker.control_address
    else:
        argv += ["--control", broker.control_address]
    return kgroup_inprocess(argv, env=env)


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kgroup: error: "), done.stderr
    return lines[0]


def test_faults_add_list_and_clear(broker):
    added = kgroup(broker, "faults", "add", "--api", "Heartbeat", "--error", "REBALANCE_IN_PROGRESS",
                   "--group", "g", "--count", "3")
    assert added.returncode == 0, added.stderr
    fault_id = added.stdout.strip()
    kgroup(broker, "faults", "add", "--api", "Fetch", "--delay-ms", "800", "--topic", "orders", env_control=True)
    table = kgroup(broker, "faults", "list").stdout.splitlines()
    assert table[0].split() == ["ID", "API", "ACTION", "MATCHING", "REMAINING", "HITS"]
    assert table[1].split() == [fault_id, "Heartbeat", "REBALANCE_IN_PROGRESS", "group=g", "3", "0"]
    assert table[2].split()[1:] == ["Fetch", "delay", "800", "ms", "topic=orders", "1", "0"]
    listed = json.loads(kgroup(broker, "faults", "list", "--json").stdout)
    assert [f["api"] for f in listed] == ["Heartbeat", "Fetch"]
    assert kgroup(broker, "faults", "clear", fault_id).stdout == f"cleared fault {fault_id}\n"
    assert kgroup(broker, "faults", "clear").stdout == "cleared 1 faults\n"
    assert broker.faults() == []


def test_mistakes_are_one_line_errors(broker):
    line = one_error_line(kgroup(broker, "faults", "add", "--api", "Heartbeat", "--error", "NOT_AN_ERROR"))
    assert "error must be a Kafka error name" in line
    line = one_error_line(kgroup(broker, "faults", "clear", "nope"))
    assert "no fault nope" in line
    line = one_error_line(kgroup(broker, "wait", "nobody", "--state", "Stable", "--timeout-ms", "300"))
    assert "was not Stable within 300 ms (it is Dead with 0 members)" in line
    line = one_error_line(kgroup(broker, "rebalance", "nobody"))
    assert "group nobody does not exist" in line
    missing = subprocess.run([sys.executable, "-m", "kgroup", "control", "faults", "list"], capture_output=True,
                             text=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "KGROUP_CONTROL"})
    assert missing.returncode == 2 and "pass --control HOST:PORT" in missing.stderr


def test_wait_rebalance_and_expire_on_a_real_group(broker):
    topic, group = names("cli")
    broker.create_topic(topic, 2)
    consumers = [ConsumerThread("confluent-kafka", broker.bootstrap, group, topic, f"cli{i}") for i in range(2)]
    for c in consumers:
        c.start()
    try:
        waited = kgroup(broker, "wait", group, "--state", "Stable", "--members", "2")
        assert waited.returncode == 0, waited.stderr
        view = json.loads(waited.stdout)
        assert view["state"] == "Stable" and len(view["members"]) == 2
        started = json.loads(kgroup(broker, "rebalance", group).stdout)
        assert started["state"] == "PreparingRebalance"
        victim = view["members"][0]["member_id"]
        wait_for(lambda: broker.group(group)["state"] == "Stable", timeout=30, what="stable again")
        expired = kgroup(broker, "expire", group, victim)
        assert expired.returncode == 0, expired.stderr
        assert json.loads(expired.stdout)["expired"] == victim
        shown = json.loads(kgroup(broker, "group", group).stdout)
        assert victim not in [m["member_id"] for m in shown["members"]]
    finally:
        for c in consumers:
            c.stop(commit=False)
