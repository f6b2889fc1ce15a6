"""The one helper for ports and child processes (kgroup.testing.ports, .process): a port is
handed out once on this machine, however many suites run; every child is reaped; a failing
test's report carries what each child printed while it ran."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgroup.testing import ports, process
from kgroup.testing.process import ChildProcess

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]


def test_ports_are_below_the_ephemeral_range_and_never_handed_out_twice():
    picked = ports.free_ports(50)
    assert len(set(picked)) == 50
    span = ports.port_range()
    assert all(p in span for p in picked)
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert max(picked) < low                 # no outgoing connection takes one of them
    for port in picked:
        ports.release(port)


def test_another_process_never_gets_a_port_this_one_holds(tmp_path, monkeypatch):
    monkeypatch.setenv(ports.DIR_ENV, str(tmp_path))
    mine = set(ports.free_ports(20))
    script = textwrap.dedent("""
        import json, sys
        from kgroup.testing import ports
        print(json.dumps(ports.free_ports(200)))
    """)
    theirs = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**__import__("os").environ, ports.DIR_ENV: str(tmp_path)}, timeout=60)
    assert not mine & set(__import__("json").loads(theirs.stdout))
    for port in mine:
        ports.release(port)


def test_every_port_of_a_run_is_held_so_another_process_never_gets_one(tmp_path, monkeypatch):
    # A run once held only its first port: another suite's free_port took base + 1 and a
    # broker failed with "the port is in use" beside a `kgroup cluster --base-port` test.
    monkeypatch.setenv(ports.DIR_ENV, str(tmp_path))
    bases = [ports.free_run(3) for _ in range(10)]
    mine = {base + i for base in bases for i in range(3)}
    assert len(mine) == 30 and mine <= ports.held()           # ten runs, none overlapping
    script = textwrap.dedent("""
        import json
        from kgroup.testing import ports
        print(json.dumps(ports.free_ports(300)))
    """)
    theirs = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                            env={**os.environ, ports.DIR_ENV: str(tmp_path)}, timeout=60)
    assert not mine & set(__import__("json").loads(theirs.stdout))
    for port in mine:
        ports.release(port)


def test_a_run_skips_a_port_that_cannot_be_bound(monkeypatch, tmp_path):
    monkeypatch.setenv(ports.DIR_ENV, str(tmp_path))
    monkeypatch.setattr(ports, "port_range", lambda: range(40000, 40006))
    monkeypatch.setattr(ports, "_bindable", lambda host, port: port != 40002)
    base = ports.free_run(3)
    assert base == 40003                          # the only run of three without 40002
    assert 40002 not in ports.held() and 40000 not in ports.held()   # a failed try holds nothing
    for port in range(base, base + 3):
        ports.release(port)


def test_a_port_something_listens_on_is_not_handed_out(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        monkeypatch.setattr(ports, "port_range", lambda: range(taken, taken + 1))
        with pytest.raises(ports.NoFreePort):
            ports.free_port()


def test_a_child_runs_logs_and_is_stopped_killed_or_reaped(tmp_path):
    child = ChildProcess([sys.executable, "-c", "import time; print('hello', flush=True); time.sleep(60)"],
                         name="sleeper").start()
    assert child in process.children() and child.alive()
    from tests.integration.waits import wait_for
    wait_for(lambda: "hello" in child.log(), 30, what="the child's first line")
    assert child.stop(5) == -15 and "killed by SIGTERM" in child.describe()
    child.start()
    child.kill()
    assert child.returncode == -9 and not child.alive()
    # Only what this test started: a session's shared brokers are children too (this test
    # reaping them all broke every later module of its pytest-xdist worker).
    before = process.mark()
    left = ChildProcess([sys.executable, "-c", "import time; time.sleep(60)"], name="forgotten").start()
    assert process.reap_all(5, since=before) == ["forgotten"]
    assert not left.alive() and left not in process.children()


def test_a_piped_child_hands_its_lines_over_and_keeps_them_for_the_report():
    child = ChildProcess([sys.executable, "-c", "import sys; print('one'); print('two'); sys.exit(3)"],
                         name="talker", stdout_pipe=True).start()
    assert [line.strip() for line in child.lines()] == ["one", "two"]
    assert child.wait(30) == 3
    assert "---- stdout ----\none\ntwo" in child.log()


def test_a_failing_test_shows_what_its_children_printed(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_children="""
        import sys
        import pytest
        from kgroup.testing.process import ChildProcess

        @pytest.fixture(scope="module")
        def shared():
            child = ChildProcess([sys.executable, "-u", "-c",
                                  "import sys, time\\nfor line in sys.stdin: print('shared saw', line.strip())"],
                                 name="shared", stdin=__import__("subprocess").PIPE).start()
            say(child, "before")
            yield child
            child.stop(5)

        def say(child, text):
            child.proc.stdin.write(text.encode() + b"\\n"); child.proc.stdin.flush()
            import time
            deadline = time.monotonic() + 30
            while text not in child.log() and time.monotonic() < deadline:
                time.sleep(0.05)

        def test_passes(shared):
            say(shared, "in the passing test")

        def test_fails(shared):
            say(shared, "in the failing test")
            crash = ChildProcess([sys.executable, "-c", "import sys; print('dying words'); sys.exit(7)"],
                                 name="crasher").start()
            crash.wait(30)
            assert False, "the test fails"

        def test_leaves_one_running():
            ChildProcess([sys.executable, "-c", "import time; time.sleep(600)"], name="leaked").start()
    """)
    result = pytester.runpytest_subprocess()      # the kgroup plugin comes with the package
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "kgroup child crasher (pid" in out and "exit status 7) during call" in out and "dying words" in out
    failing = out.split("kgroup child shared")[1].split("kgroup child crasher")[0]
    assert "in the failing test" in failing and "in the passing test" not in failing
    assert "kgroup: stopped 1 child process(es) left running at the end: leaked" in out


def test_a_session_ended_by_sigterm_still_reaps_its_children(pytester, monkeypatch, tmp_path):
    """A CI timeout or `kill` sends pytest SIGTERM: its children (each in a session of its
    own, out of reach of a signal to pytest's process group) must not outlive it."""
    from tests.integration.waits import wait_for

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    pid_file = tmp_path / "child.pid"
    pytester.makepyfile(test_terminated=f"""
        import sys, time
        from pathlib import Path
        from kgroup.testing.process import ChildProcess

        def test_waits_to_be_terminated():
            child = ChildProcess([sys.executable, "-c", "import time; time.sleep(600)"],
                                 name="survivor", new_session=True).start()
            Path({str(pid_file)!r}).write_text(str(child.proc.pid))
            time.sleep(600)
    """)
    session = pytester.popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for(pid_file.exists, 60, what="the test's child to start")
        child_pid = int(pid_file.read_text())
        session.terminate()
        session.wait(60)
        out = session.stdout.read()
        survived = _running(child_pid)
    finally:
        if session.poll() is None:
            session.kill()
        if pid_file.exists() and _running(int(pid_file.read_text())):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)      # never left behind by this test
    assert session.returncode != 0
    text = out.decode(errors="replace")
    assert "KeyboardInterrupt" in text and "SIGTERM" in text
    assert "kgroup: stopped 1 child process(es) left running at the end: survivor" in text
    assert not survived


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not: it has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"
