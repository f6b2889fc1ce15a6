"""The control API over plain HTTP: its errors, faults that never outlive their count or the
broker, and no listener at all without `--control-listen`."""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kgroup.testing import Broker, ControlError
from tests.integration.broker_process import BrokerProcess

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker():
    with Broker() as b:
        yield b
        print("---- broker log (tail) ----\n" + "\n".join(b.log().splitlines()[-60:]))
        assert "Traceback" not in b.log()


def call(broker, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    host, port = broker.control_address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        raw = response.read()
        return response.status, json.loads(raw) if raw.strip().startswith(b"{") else raw.decode()
    finally:
        conn.close()


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"api": "Heartbeat", "error": "NOT_COORDINATOR", "count": -1}', "count must be a whole number"),
    (b'{"api": "Heartbeat"}', "a fault needs error, delay_ms, throttle_ms or close_connection"),
    (b'{"api": "Heartbeat", "error": "NOT_COORDINATOR"', "the body is not JSON"),
    (b'"Heartbeat"', "a fault is a JSON object"),
])
def test_a_bad_fault_gets_400_with_a_one_line_reason(broker, body, reason):
    status, answer = call(broker, "POST", "/faults", body, {"Content-Type": "application/json"})
    assert status == 400
    assert reason in answer["error"] and "\n" not in answer["error"]
    assert broker.faults() == []


def test_errors_of_the_group_endpoints(broker):
    status, answer = call(broker, "GET", "/groups/nobody")
    assert status == 404 and answer["state"] == "Dead" and answer["error"] == "group nobody does not exist"
    status, answer = call(broker, "POST", "/groups/nobody/rebalance")
    assert status == 404
    status, answer = call(broker, "POST", "/groups/nobody/members/m/expire")
    assert status == 404
    status, answer = call(broker, "GET", "/groups/nobody/wait?members=x")
    assert status == 400 and "members must be a whole number" in answer["error"]
    status, answer = call(broker, "GET", "/groups/nobody/wait?stat=Stable")
    assert status == 400 and "unknown parameter 'stat'" in answer["error"]
    status, answer = call(broker, "GET", "/groups/nobody/wait?state=Stable&timeout_ms=200")
    assert status == 408 and answer["state"] == "Dead" and "was not Stable within 200 ms" in answer["error"]
    status, answer = call(broker, "DELETE", "/groups/nobody")
    assert status == 405
    status, answer = call(broker, "GET", "/nothing/here")
    assert status == 404
    status, answer = call(broker, "DELETE", "/faults/no-such-fault")
    assert status == 404


def test_a_group_id_with_a_slash_is_one_path_segment(broker):
    from urllib.parse import quote

    status, answer = call(broker, "GET", "/groups/" + quote("team/app", safe="") + "/wait?state=Stable&timeout_ms=0")
    assert status == 408 and answer["group"] == "team/app"


def test_a_fault_never_outlives_its_count(broker):
    fault = broker.add_fault("ListGroups", "COORDINATOR_NOT_AVAILABLE", count=2)

    def list_groups() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kgroup", "--bootstrap-server", broker.bootstrap,
                               "groups", "list"], capture_output=True, text=True, timeout=60)

    refused = [list_groups(), list_groups()]
    assert all(r.returncode == 1 and "COORDINATOR_NOT_AVAILABLE" in r.stderr for r in refused), refused
    assert list_groups().returncode == 0          # the third is served
    assert broker.faults() == []                  # used up: gone, not left at zero
    with pytest.raises(ControlError) as gone:
        broker.remove_fault(fault)
    assert gone.value.status == 404


def test_a_fault_never_outlives_the_broker(tmp_path):
    with Broker(tmp_path / "b") as b:
        b.add_fault("Fetch", delay_ms=5_000, count=1_000)
        assert len(b.faults()) == 1
        assert b.stop() == 0
        b.start()
        assert b.faults() == []


def listening_sockets(pid: int) -> int:
    """TCP sockets in LISTEN state that process `pid` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                count += 1
    return count


def test_without_control_listen_nothing_but_kafka_listens(tmp_path, broker):
    plain = BrokerProcess(tmp_path / "data").start()
    try:
        assert listening_sockets(plain.proc.pid) == 1
        assert listening_sockets(broker.process.proc.pid) == 2      # Kafka and control
    finally:
        plain.finish()


def test_the_control_listener_refuses_what_is_not_http_and_the_broker_goes_on(broker):
    host, port = broker.control_address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"\x00\x00\x00\x10garbage garbage\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /faults HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 413")
    assert broker.control.status()["ready"] is True


def test_a_second_broker_cannot_take_a_busy_control_port(tmp_path, broker):
    port = broker.control_address.rsplit(":", 1)[1]
    kafka_port = BrokerProcess(tmp_path / "x").port
    done = subprocess.run([sys.executable, "-m", "kgroup", "serve", "--listen", f"127.0.0.1:{kafka_port}",
                           "--control-listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kgroup: error: cannot listen on 127.0.0.1:") and "control API" in last
    assert "Traceback" not in done.stderr
