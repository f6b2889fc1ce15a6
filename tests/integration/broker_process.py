"""A real `kgroup serve` process on a free loopback port, for integration tests: a
`ChildProcess` (kgroup.testing.process), so it is reaped and its output is attached to a
failing test's report."""

from __future__ import annotations

import signal
import socket
import sys
from pathlib import Path

from kgroup.testing.ports import free_port
from kgroup.testing.process import ChildProcess
from tests.integration.waits import wait_for

__all__ = ["KGROUP", "BrokerProcess", "free_port"]

KGROUP = str(Path(sys.executable).with_name("kgroup"))


class BrokerProcess(ChildProcess):
    """Starts, stops, kills and restarts one broker with one data dir (or one node of a
    cluster: `node_id` and `cluster`, the `--cluster` list, with its own `port` and `name`)."""

    def __init__(self, data_dir: Path, *, group: dict | None = None, extra: dict | None = None,
                 transactions: dict | None = None, node_id: int | None = None, cluster: str | None = None,
                 port: int | None = None, name: str | None = None, tables: str = "",
                 listen: bool = True) -> None:
        """`tables`: more TOML after [group] ([[listeners]], [auth]); `listen=False` passes no
        --listen (only the [[listeners]] of `tables`), `port` is then the one to wait for."""
        name = name or data_dir.name
        super().__init__(name=f"kgroup serve {name}", log_path=data_dir.parent / f"{name}.log")
        self.data_dir = data_dir
        self.port = port or free_port()
        self.listen = listen
        self.node_id, self.cluster = node_id, cluster
        self.config_path = data_dir.parent / f"{name}.toml"
        lines = [f"{k} = {_toml(v)}" for k, v in (extra or {}).items()]
        # A short initial delay, as a real deployment has (3 s default): kafka-python leaders
        # that join before their first metadata response otherwise assign nothing.
        # Target assignments at once (KIP-1263's intervals at 0), as every test broker runs.
        group = {"initial_rebalance_delay_ms": 1000, "consumer_assignment_interval_ms": 0,
                 "share_assignment_interval_ms": 0, **(group or {})}
        lines.append("[group]")
        lines += [f"{k} = {_toml(v)}" for k, v in group.items()]
        if transactions:
            lines.append("[transactions]")
            lines += [f"{k} = {_toml(v)}" for k, v in transactions.items()]
        lines.append(tables)
        self.config_path.write_text("\n".join(lines) + "\n")

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        listen = ["--listen", self.bootstrap] if self.listen else []
        command = [KGROUP, "serve", *listen, "--data-dir", str(self.data_dir), "--config", str(self.config_path)]
        if self.cluster is not None:
            command += ["--node-id", str(self.node_id), "--cluster", self.cluster]
        return command

    def launch(self) -> int:
        """Start the process; returns how many "coordinator loaded" lines its log had."""
        loaded_before = self.log().count("coordinator loaded")
        super().launch()
        return loaded_before

    def start(self, timeout: float = 60.0) -> "BrokerProcess":
        return self.wait_ready(self.launch(), timeout)

    def wait_ready(self, loaded_before: int, timeout: float = 60.0) -> "BrokerProcess":
        def loaded() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kgroup serve exited with {self.proc.returncode}:\n{self.log()}")
            return self.log().count("coordinator loaded") > loaded_before
        # Listening and every coordinator shard loaded: groups can be used.
        wait_for(loaded, timeout, 0.05, what=f"{self.name} to listen and load")
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            return self

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait (SIGKILL after `timeout`); returns the exit status."""
        assert self.proc is not None
        return super().stop(timeout)

    def kill9(self) -> None:
        assert self.proc is not None
        self.kill()

    def pause(self) -> None:  # type: ignore[override]
        """SIGSTOP: the process keeps its locks and sockets but does nothing (until `resume`)."""
        self.signal(signal.SIGSTOP)
        self.paused_until = float("inf")

    def finish(self) -> None:
        """End of a fixture: stop the broker and check it exited cleanly without a traceback
        (a failing test's report shows its log, through ChildProcess)."""
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
