"""One `kgroup serve` process for tests: free ports, a log file, ready when the control API
says every coordinator shard has loaded, and stop / kill / pause by signal.

The process runs this Python's kgroup (`python -m kgroup serve`), so a test project needs
nothing but `pip install kgroup`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kgroup.testing.control import ControlClient, ControlError

# A start that loses its free port to another process (they are picked, then bound by the
# broker) is retried on new ports this many times.
PORT_RETRIES = 3
_BIND_FAILED = "cannot listen on"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_config(path: Path, settings: dict, group: dict) -> None:
    lines = [f"{k} = {toml_value(v)}" for k, v in settings.items()]
    lines.append("[group]")
    lines += [f"{k} = {toml_value(v)}" for k, v in group.items()]
    path.write_text("\n".join(lines) + "\n")


def stop_process(proc: subprocess.Popen, timeout: float) -> int:
    """SIGTERM (a graceful stop) and wait; SIGKILL if it has not exited within `timeout`
    seconds. Returns the exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class ChildProcess:
    """A child process that a test or a supervisor stops, kills, pauses and resumes: a
    node of `kgroup cluster`, a `kgroup serve` of the test bed. Subclasses start `proc`."""

    proc: subprocess.Popen | None = None
    paused_until = 0.0

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (a graceful stop) and wait; returns the exit status."""
        if self.proc is None:
            return None
        self.resume()
        status = stop_process(self.proc, timeout)
        self._ended()
        return status

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        self._ended()

    def pause(self, ms: int) -> None:
        """SIGSTOP now, SIGCONT after `ms` (as a long GC pause would); returns at once."""
        if not self.alive():
            raise RuntimeError("the process is not running")
        pause_process(self.proc.pid, ms)
        self.paused_until = time.monotonic() + ms / 1000

    def paused(self) -> bool:
        return self.alive() and time.monotonic() < self.paused_until

    def resume(self) -> None:
        if self.alive() and self.paused_until:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused_until = 0.0

    def _ended(self) -> None:
        """After a stop or a kill (a subclass lets go of what it held on the process)."""


class ServeProcess(ChildProcess):
    """A `kgroup serve` with a data dir, a config file and a log file of its own."""

    def __init__(self, data_dir: Path, config_path: Path, log_path: Path, host: str = "127.0.0.1",
                 extra_args: tuple[str, ...] = (), ports: tuple[int, int] | None = None) -> None:
        """`ports`: the Kafka and control ports to use (a cluster's node, whose address is in
        every node's --cluster list); without them free ones are picked at the first start."""
        self.data_dir = data_dir
        self.fixed_ports = ports is not None
        self.config_path = config_path
        self.log_path = log_path
        self.host = host
        self.extra_args = extra_args
        self.port, self.control_port = ports or (0, 0)
        self.control: ControlClient | None = ControlClient(self.control_address) if ports else None

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def control_address(self) -> str:
        return f"{self.host}:{self.control_port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start on free ports (the same ones again after a stop) and wait until it serves."""
        for attempt in range(1 if self.fixed_ports else PORT_RETRIES):
            if not self.port or attempt:
                self.port, self.control_port = free_port(self.host), free_port(self.host)
                self.control = ControlClient(self.control_address)
            if self.wait_ready(self.launch(), timeout):
                return
        raise RuntimeError(f"kgroup serve could not bind its ports:\n{self.log_tail()}")

    def launch(self) -> int:
        """Start the process; returns where its log starts (for `wait_ready`)."""
        mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kgroup", "serve", "--listen", self.bootstrap,
                 "--control-listen", self.control_address, "--data-dir", str(self.data_dir),
                 "--config", str(self.config_path), *self.extra_args],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )
        return mark

    def wait_ready(self, mark: int, timeout: float) -> bool:
        """Wait until it serves: True; False if it could not bind its ports."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if _BIND_FAILED in self._log_since(mark):
                    return False
                raise RuntimeError(f"kgroup serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.control.status()["ready"]:
                    return True
            except ControlError:
                pass
            time.sleep(0.01)
        self.kill()
        raise RuntimeError(f"kgroup serve was not ready within {timeout:.0f} s:\n{self.log_tail()}")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def _ended(self) -> None:
        if self.control is not None:
            self.control.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def _log_since(self, offset: int) -> str:
        with open(self.log_path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")


def pause_process(pid: int, ms: int) -> None:
    """SIGSTOP `pid` now and SIGCONT it after `ms`: a detached helper resumes it even if
    this process is busy or gone by then."""
    os.kill(pid, signal.SIGSTOP)
    subprocess.Popen([sys.executable, "-c", _RESUME, str(pid), str(ms / 1000)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


_RESUME = ("import os, signal, sys, time\n"
           "time.sleep(float(sys.argv[2]))\n"
           "try:\n    os.kill(int(sys.argv[1]), signal.SIGCONT)\nexcept ProcessLookupError:\n    pass\n")
