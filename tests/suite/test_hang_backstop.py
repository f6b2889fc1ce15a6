"""A test that pytest-timeout cannot end is ended by the backstop (tests/plugins/hang_backstop.py):
its stacks printed, its children stopped, and under pytest-xdist the run goes on."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

# SIGALRM blocked: pytest-timeout's handler never runs, as with a main thread stuck in C.
HANGS = """
import os, signal, threading
from kgroup.testing.process import ChildProcess

def test_hangs():
    child = ChildProcess(["sleep", "600"], name="left-behind").start()
    with open(os.environ["HANG_PID_FILE"], "w") as f:
        f.write(str(child.pid))
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
    threading.Event().wait(120)

def test_after():
    pass
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def test_a_hung_test_is_ended_with_its_stacks_and_its_children_stopped_and_the_run_goes_on(
        pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{REPO / 'src'}")
    monkeypatch.setenv("HANG_PID_FILE", str(pytester.path / "child.pid"))
    pytester.makepyfile(test_hang=HANGS)
    result = pytester.runpytest_subprocess(
        "-n", "1", "-p", "tests.plugins.hang_backstop", "-p", "no:kgroup", "-p", "no:randomly",
        "--timeout=1", "-o", "kgroup_hang_grace=1")
    out = result.stdout.str() + result.stderr.str()
    assert "kgroup hang backstop: test_hang.py::test_hangs still running 2s" in out, out
    assert "in test_hangs" in out, out                       # the hung thread's stack
    assert "stopped: left-behind" in out, out
    result.assert_outcomes(passed=1, failed=1)               # the worker's crash, then test_after
    pid = int((pytester.path / "child.pid").read_text())
    assert _gone(pid), f"the hung test's child {pid} is still running"


def test_a_test_within_its_timeout_is_left_alone(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", f"{REPO}:{REPO / 'src'}")
    pytester.makepyfile(test_quick="import threading\n"
                                   "def test_waits_a_little():\n"
                                   "    threading.Event().wait(1.5)\n")
    result = pytester.runpytest_subprocess("-p", "tests.plugins.hang_backstop", "-p", "no:kgroup",
                                           "--timeout=30", "-o", "kgroup_hang_grace=0.5")
    result.assert_outcomes(passed=1)
    assert "hang backstop" not in result.stdout.str() + result.stderr.str()
