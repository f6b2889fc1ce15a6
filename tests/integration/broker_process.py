"""A real `kgroup serve` process on a free loopback port, for integration tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kgroup.testing.process import stop_process

KGROUP = str(Path(sys.executable).with_name("kgroup"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class BrokerProcess:
    """Starts, stops, kills and restarts one broker with one data dir (or one node of a
    cluster: `node_id` and `cluster`, the `--cluster` list, with its own `port` and `name`)."""

    def __init__(self, data_dir: Path, *, group: dict | None = None, extra: dict | None = None,
                 transactions: dict | None = None, node_id: int | None = None, cluster: str | None = None,
                 port: int | None = None, name: str | None = None, tables: str = "",
                 listen: bool = True) -> None:
        """`tables`: more TOML after [group] ([[listeners]], [auth]); `listen=False` passes no
        --listen (only the [[listeners]] of `tables`), `port` is then the one to wait for."""
        self.data_dir = data_dir
        self.port = port or free_port()
        self.listen = listen
        self.node_id, self.cluster = node_id, cluster
        name = name or data_dir.name
        self.config_path = data_dir.parent / f"{name}.toml"
        lines = [f"{k} = {_toml(v)}" for k, v in (extra or {}).items()]
        # A short initial delay, as a real deployment has (3 s default): kafka-python leaders
        # that join before their first metadata response otherwise assign nothing.
        group = {"initial_rebalance_delay_ms": 1000, **(group or {})}
        lines.append("[group]")
        lines += [f"{k} = {_toml(v)}" for k, v in group.items()]
        if transactions:
            lines.append("[transactions]")
            lines += [f"{k} = {_toml(v)}" for k, v in transactions.items()]
        lines.append(tables)
        self.config_path.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"{name}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def launch(self) -> int:
        """Start the process; returns how many "coordinator loaded" lines its log had."""
        loaded_before = self.log().count("coordinator loaded")
        self._log = open(self.log_path, "ab")
        listen = ["--listen", self.bootstrap] if self.listen else []
        command = [KGROUP, "serve", *listen, "--data-dir", str(self.data_dir), "--config", str(self.config_path)]
        if self.cluster is not None:
            command += ["--node-id", str(self.node_id), "--cluster", self.cluster]
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT)
        return loaded_before

    def start(self, timeout: float = 30.0) -> "BrokerProcess":
        return self.wait_ready(self.launch(), timeout)

    def wait_ready(self, loaded_before: int, timeout: float = 30.0) -> "BrokerProcess":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kgroup serve exited with {self.proc.returncode}:\n{self.log()}")
            if self.log().count("coordinator loaded") > loaded_before:
                # Listening and every coordinator shard loaded: groups can be used.
                with socket.create_connection(("127.0.0.1", self.port), timeout=5):
                    return self
            time.sleep(0.05)
        raise RuntimeError(f"kgroup serve did not listen and load within {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        assert self.proc is not None
        status = stop_process(self.proc, timeout)
        self._log.close()
        return status

    def kill9(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self._log.close()

    def pause(self) -> None:
        """SIGSTOP: the process keeps its locks and sockets but does nothing."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def finish(self) -> None:
        """End of a fixture: print the log's tail (pytest shows it when the test failed),
        stop the broker and check it exited cleanly without a traceback."""
        print("---- broker log (tail) ----\n" + "\n".join(self.log().splitlines()[-80:]))
        if self.alive():
            status = self.stop()
            assert status == 0, f"broker exited with {status}:\n{self.log()}"
        assert "Traceback" not in self.log(), self.log()


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return '"' + str(value).replace('"', '\\"') + '"'
