"""Scenario: a real `kgroup serve --config FILE` takes its data dir, fsync policy, listener
and log format from the file, and a flag given on the command line wins over the file.

Before the fix the --data-dir flag's default was passed as an override every time, so the
broker wrote to ./kgroup-data whatever the file said (unit tests per key:
tests/unit/broker/test_config_precedence.py).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.broker_process import KGROUP, free_port
from tests.integration.waits import until

pytestmark = pytest.mark.integration


def serve(cwd: Path, log: Path, *flags: str) -> subprocess.Popen:
    out = open(log, "wb")
    return subprocess.Popen([KGROUP, "serve", *flags], cwd=cwd, stdout=out, stderr=subprocess.STDOUT)


def wait_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    def listening() -> bool:
        assert proc.poll() is None, log.read_text()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            return False

    until(listening, timeout=60, interval=0.05, what=f"kgroup serve listening on {port}")


def stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(30)


def create_topic(port: int, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(20)


def topics(port: int) -> set[str]:
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    return set(admin.list_topics(timeout=20).topics)


def test_the_config_file_sets_the_data_dir_and_a_flag_overrides_it(tmp_path):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    port = free_port()
    config = tmp_path / "kgroup.toml"
    config.write_text(f'listen = "127.0.0.1:{port}"\ndata_dir = "{tmp_path / "from-file"}"\n'
                      'fsync = "never"\n[log]\nformat = "json"\n')
    log = tmp_path / "serve.log"

    proc = serve(cwd, log, "--config", str(config))
    try:
        wait_listening(proc, port, log)
        create_topic(port, "kept-in-file-dir")
    finally:
        assert stop(proc) == 0, log.read_text()
    assert (tmp_path / "from-file").is_dir()
    assert not (cwd / "kgroup-data").exists()               # the flag's default never applied
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert lines and all(json.loads(line) for line in lines)  # [log] format = "json"

    # The flag wins over the file: a fresh data dir, without the topic.
    proc = serve(cwd, log, "--config", str(config), "--data-dir", str(tmp_path / "from-flag"))
    try:
        wait_listening(proc, port, log)
        assert "kept-in-file-dir" not in topics(port)
    finally:
        assert stop(proc) == 0, log.read_text()
    assert (tmp_path / "from-flag").is_dir()

    # And the file's again: the topic is where the file said.
    proc = serve(cwd, log, "--config", str(config))
    try:
        wait_listening(proc, port, log)
        assert "kept-in-file-dir" in topics(port)
    finally:
        assert stop(proc) == 0, log.read_text()
