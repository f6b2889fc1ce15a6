"""The processes a test starts, through one helper: `ChildProcess`.

    proc = ChildProcess([sys.executable, "-m", "my_worker", bootstrap], name="worker").start()
    ...
    proc.stop()          # SIGTERM, SIGKILL after a timeout; proc.kill() is SIGKILL at once

Every child's output goes to a log file of its own (or, `stdout_pipe=True`, stdout to the
test and stderr to the log). Every child is registered here until it has been reaped:
`reap_all()` ends whatever is still running (the pytest plugin calls it when the session
ends, and so does `atexit`), and `output_since(mark)` gives each child's output since a
moment — the plugin attaches it to a failing test's report, so a failure shows what every
process it started (or shared) printed meanwhile.

`ServeProcess` is a `kgroup serve` (the test bed's `Broker` and `Cluster`, and `kgroup
cluster`'s nodes); its ports come from `kgroup.testing.ports`, which hands each port out
once on this machine. The process runs this Python's kgroup (`python -m kgroup serve`), so
a test project needs nothing but `pip install kgroup`.
"""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Iterator, Mapping, Sequence

from kgroup.testing.control import ControlClient, ControlError
from kgroup.testing.ports import free_port
from kgroup.toml_values import toml_value

__all__ = ["ChildProcess", "ServeProcess", "free_port", "output_since", "mark", "reap_all", "stop_process",
           "pause_process", "write_config", "toml_value"]

# A start that loses its free port to another process (they are picked, then bound by the
# broker) is retried on new ports this many times.
PORT_RETRIES = 3
_BIND_FAILED = "cannot listen on"
# How many of a child's last lines a failure report shows.
REPORT_LINES = 80


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


# ---- the registry of children ---------------------------------------------------------------

_children: list["ChildProcess"] = []
_registry_lock = threading.Lock()
_sequence = itertools.count(1)
_log_dir: Path | None = None


def _register(child: "ChildProcess") -> None:
    with _registry_lock:
        if child not in _children:
            _children.append(child)


def _default_log(name: str) -> Path:
    global _log_dir
    with _registry_lock:
        if _log_dir is None:
            _log_dir = Path(tempfile.mkdtemp(prefix="kgroup-children-"))
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:60]
    return _log_dir / f"{next(_sequence):04d}-{safe}.log"


def children() -> list["ChildProcess"]:
    """Every child started through this module and not yet forgotten (see `forget_ended`)."""
    with _registry_lock:
        return list(_children)


class Mark:
    """A moment to report children's output from (`mark()`)."""

    def __init__(self, at: float | None = None) -> None:
        self.at = time.monotonic() if at is None else at
        self.sizes = {id(c): c.log_size() for c in children()} if at is None else {}

    @classmethod
    def beginning(cls) -> "Mark":
        """Before any child: everything every child printed."""
        return cls(at=float("-inf"))


def mark() -> Mark:
    return Mark()


def output_since(moment: Mark, lines: int = REPORT_LINES) -> list[tuple[str, str]]:
    """(title, text) for each child that was started, printed something, or ended since
    `moment`: the last `lines` lines of what it printed since then, and its state."""
    out = []
    for child in children():
        offset = moment.sizes.get(id(child))
        text = child.log_since(offset or 0)
        started = offset is None or child.started_at >= moment.at
        ended = child.returncode is not None and child.ended_at >= moment.at
        if not (started or ended or text.strip()):
            continue
        tail = "\n".join(text.splitlines()[-lines:])
        out.append((f"kgroup child {child.name} ({child.describe()})", tail or "(no output)"))
    return out


def forget_ended() -> None:
    """Drop children that have ended and been reaped (a long session keeps no history)."""
    with _registry_lock:
        _children[:] = [c for c in _children if c.returncode is None]


def reap_all(timeout: float = 10.0, since: "Mark | None" = None) -> list[str]:
    """Stop every child still running (SIGTERM, SIGKILL after `timeout`); returns their names.
    Children a test or fixture forgot are ended here, never left behind. `since` (a
    `mark()`): only the children registered after it, so a test of this very helper never
    ends the brokers its session shares with the tests after it."""
    left = [c for c in children() if c.alive() and (since is None or id(c) not in since.sizes)]
    for child in left:
        child.resume()
        child.terminate()
    for child in left:
        child.stop(timeout)
    forget_ended()
    return [c.name for c in left]


atexit.register(reap_all, 5.0)


class ChildProcess:
    """A child process a test (or a supervisor) starts, stops, kills, pauses and resumes,
    with its output in a log file; always registered, so it is reaped and reported.

    `argv` may be left out by a subclass that builds it at each start (`command()`).
    `log_path`: where its output goes (a file of its own in a temp dir if not given; None
    with `inherit_output=True`: the parent's stdout and stderr, as `kgroup cluster` wants).
    `stdout_pipe`: stdout to the parent (`lines()` reads it, and keeps a copy for the
    report), stderr to the log. `new_session`: a process group of its own, so a terminal's
    Ctrl-C reaches only the parent. `sigint_default`: SIGINT's default action in the child
    even if this process ignores it (as a background CI job does).
    """

    proc: subprocess.Popen | None = None
    paused_until = 0.0
    ended_at = -1.0

    def __init__(self, argv: Sequence[str] | None = None, *, name: str | None = None,
                 log_path: Path | str | None = None, env: Mapping[str, str] | None = None,
                 cwd: Path | str | None = None, stdin: int | IO | None = subprocess.DEVNULL,
                 stdout_pipe: bool = False, inherit_output: bool = False, new_session: bool = False,
                 sigint_default: bool = False, text: bool = True) -> None:
        self.argv = list(argv) if argv is not None else None
        self.name = name or (Path(self.argv[0]).name if self.argv else type(self).__name__)
        self.inherit_output = inherit_output
        self.log_path = None if inherit_output else Path(log_path) if log_path else _default_log(self.name)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.stdin = stdin
        self.stdout_pipe = stdout_pipe
        self.new_session = new_session
        self.sigint_default = sigint_default
        self.text = text
        self._piped: deque[str] = deque(maxlen=REPORT_LINES)
        self.started_at = -1.0

    # ---- starting -----------------------------------------------------------------------------

    def command(self) -> list[str]:
        """The command line of the next start (a subclass may build it from its state)."""
        if not self.argv:
            raise ValueError(f"{self.name}: no command to run")
        return self.argv

    def start(self) -> "ChildProcess":
        """Start it (again, after a stop); returns at once."""
        self.launch()
        return self

    def launch(self) -> int:
        """Start the process; returns where its output starts in the log (for waits on it)."""
        mark_at = self.log_size()
        log = None if self.log_path is None else open(self.log_path, "ab")
        try:
            stdout = subprocess.PIPE if self.stdout_pipe else log
            stderr = log if self.stdout_pipe or log is None else subprocess.STDOUT
            if log is None:
                stderr = None
            self.proc = subprocess.Popen(
                self.command(), stdout=stdout, stderr=stderr, stdin=self.stdin, cwd=self.cwd,
                env=self.env, start_new_session=self.new_session, text=self.text if self.stdout_pipe else None,
                preexec_fn=_default_sigint if self.sigint_default else None)
        finally:
            if log is not None:
                log.close()
        self.paused_until = 0.0
        self.ended_at = -1.0
        self.started_at = time.monotonic()
        _register(self)
        return mark_at

    # ---- state --------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def returncode(self) -> int | None:
        if self.proc is None:
            return None
        status = self.proc.poll()
        if status is not None and self.ended_at < 0:
            self.ended_at = time.monotonic()
        return status

    def alive(self) -> bool:
        return self.proc is not None and self.returncode is None

    def paused(self) -> bool:
        return self.alive() and time.monotonic() < self.paused_until

    def describe(self) -> str:
        if self.proc is None:
            return "not started"
        status = self.returncode
        if status is None:
            return f"pid {self.proc.pid}, {'paused' if self.paused() else 'running'}"
        how = f"killed by {signal.Signals(-status).name}" if status < 0 else f"exit status {status}"
        return f"pid {self.proc.pid}, {how}"

    # ---- signals ------------------------------------------------------------------------------

    def terminate(self) -> None:
        """SIGTERM, without waiting."""
        if self.alive():
            self.proc.terminate()

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (a graceful stop) and wait; SIGKILL after `timeout`. Returns the exit status."""
        if self.proc is None:
            return None
        self.resume()
        status = stop_process(self.proc, timeout)
        self.returncode  # noqa: B018 (records when it ended)
        self._ended()
        return status

    def kill(self) -> None:
        """SIGKILL: the process dies at once, as in a crash."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        self.returncode  # noqa: B018
        self._ended()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for it to exit by itself; subprocess.TimeoutExpired after `timeout`."""
        assert self.proc is not None, f"{self.name} was never started"
        status = self.proc.wait(timeout)
        self.returncode  # noqa: B018
        return status

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def pause(self, ms: int) -> None:
        """SIGSTOP now, SIGCONT after `ms` (as a long GC pause would); returns at once."""
        if not self.alive():
            raise RuntimeError(f"{self.name} is not running")
        pause_process(self.proc.pid, ms)
        self.paused_until = time.monotonic() + ms / 1000

    def resume(self) -> None:
        if self.alive() and self.paused_until:
            os.kill(self.proc.pid, signal.SIGCONT)
        self.paused_until = 0.0

    def _ended(self) -> None:
        """After a stop or a kill (a subclass lets go of what it held on the process)."""

    # ---- output -------------------------------------------------------------------------------

    def lines(self) -> Iterator[str]:
        """Its stdout, line by line (`stdout_pipe=True`); each line is kept for the report."""
        assert self.proc is not None and self.proc.stdout is not None, f"{self.name}: stdout is not piped"
        for line in self.proc.stdout:
            self._piped.append(line.rstrip("\n"))
            yield line

    def log_size(self) -> int:
        try:
            return self.log_path.stat().st_size if self.log_path is not None else 0
        except OSError:
            return 0

    def log(self) -> str:
        """Everything it wrote to its log so far."""
        return self.log_since(0)

    def log_since(self, offset: int) -> str:
        text = ""
        if self.log_path is not None and self.log_path.exists():
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
        if self._piped:
            text += ("\n" if text else "") + "---- stdout ----\n" + "\n".join(self._piped)
        return text

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def _log_since(self, offset: int) -> str:
        return self.log_since(offset)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class ServeProcess(ChildProcess):
    """A `kgroup serve` with a data dir, a config file and a log file of its own."""

    def __init__(self, data_dir: Path, config_path: Path, log_path: Path, host: str = "127.0.0.1",
                 extra_args: tuple[str, ...] = (), ports: tuple[int, int] | None = None) -> None:
        """`ports`: the Kafka and control ports to use (a cluster's node, whose address is in
        every node's --cluster list); without them free ones are picked at the first start."""
        super().__init__(name=f"kgroup serve {log_path.stem}", log_path=log_path)
        self.data_dir = data_dir
        self.fixed_ports = ports is not None
        self.config_path = config_path
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

    def command(self) -> list[str]:
        return [sys.executable, "-m", "kgroup", "serve", "--listen", self.bootstrap,
                "--control-listen", self.control_address, "--data-dir", str(self.data_dir),
                "--config", str(self.config_path), *self.extra_args]

    def start(self, timeout: float = 60.0) -> None:
        """Start on free ports (the same ones again after a stop) and wait until it serves."""
        for attempt in range(1 if self.fixed_ports else PORT_RETRIES):
            if not self.port or attempt:
                self.port, self.control_port = free_port(self.host), free_port(self.host)
                self.control = ControlClient(self.control_address)
            if self.wait_ready(self.launch(), timeout):
                return
        raise RuntimeError(f"kgroup serve could not bind its ports:\n{self.log_tail()}")

    def wait_ready(self, mark: int, timeout: float) -> bool:
        """Wait until it serves: True; False if it could not bind its ports."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                if _BIND_FAILED in self.log_since(mark):
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

    def _ended(self) -> None:
        if self.control is not None:
            self.control.close()


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
