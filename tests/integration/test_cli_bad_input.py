"""Mistakes an operator makes get one line and a non-zero exit, never a traceback; Ctrl-C
ends every long-running command with one line and exit 130; a non-Kafka client on the
Kafka port is named in the broker's log."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess, free_port
from tests.integration.clients import create_topic
from tests.integration.waits import wait_for

pytestmark = pytest.mark.integration
KGROUP = str(Path(sys.executable).with_name("kgroup"))
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "lab"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("bad") / "data").start()
    create_topic(proc.bootstrap, "t-bad", 2)
    yield proc
    proc.finish()


def one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("kgroup: error: "), done.stderr
    return lines[0]


def late_event(tmp_path: Path) -> str:
    path = tmp_path / "late.yaml"
    path.write_text("name: late\nduration_s: 100\nmembers: {count: 3}\nevents:\n"
                    "  - bounce: {at_s: 150, member: 1}\n")
    return str(path)


# (argv, stdin, exit status, what the line must say). {late} is a scenario with an event
# after its end; client commands get --bootstrap-server of the module's broker.
MISTAKES = [
    (["topics", "delete", "__kgroup_events"], None, 1, "internal topic"),
    (["produce", "__kgroup_events"], "x\n", 1, "Cannot append to internal topic"),
    (["topics", "create", "__consumer_offsets"], None, 1, "internal topic"),
    (["topics", "create", "t-cfg", "--config", "retention.mss=1000"], None, 1, "did you mean retention.ms?"),
    (["topics", "alter-config", "t-bad", "--add-config", "retention.mss=5"], None, 1, "valid names: cleanup.policy"),
    (["topics", "alter-config", "t-bad", "--add-config", "retention.ms=soon"], None, 1, "Invalid value soon"),
    (["groups", "alter-config", "g", "--add-config", "consumer.session.timeout=50000"], None, 1,
     "valid names: consumer.assignment.interval.ms, consumer.heartbeat.interval.ms, consumer.session.timeout.ms"),
    (["groups", "alter-config", "g", "--add-config", "consumer.session.timeout.ms=1000"], None, 1,
     "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive"),
    (["groups", "list", "--state", "stabel"], None, 2, "unknown group state 'stabel'"),
    (["groups", "list", "--type", "kraft"], None, 2, "unknown group type 'kraft'"),
    (["groups", "describe", "no-such-group"], None, 1, "does not exist"),
    (["groups", "describe", "g", "--members", "--lag-per-topic"], None, 2, "--lag-per-topic goes with --offsets"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad", "--to-earlist"], None, 2,
     "unknown option --to-earlist for groups reset-offsets (did you mean --to-earliest?) — see `kgroup groups "
     "reset-offsets --help`"),
    (["groups", "describe", "--regex", "("], None, 2, "invalid regular expression '('"),
    (["groups", "delete", "--regex", "^no-such-"], None, 1, "no group matches '^no-such-'"),
    (["groups", "delete", "no-such-group"], None, 1, "group 'no-such-group' does not exist"),
    (["groups", "reset-offsets", "g", "--to-earliest"], None, 2, "--topic"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad", "--to-earliest", "--dry-run", "--execute"], None, 2,
     "not allowed with"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad:7", "--to-earliest"], None, 1, "no partition 7"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad", "--shift-by", "-1"], None, 1, "no committed offset"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad", "--to-datetime", "yesterday"], None, 2,
     "invalid date-time"),
    (["groups", "reset-offsets", "g", "--topic", "t-bad", "--by-duration", "30m"], None, 2, "invalid duration"),
    (["groups", "reset-offsets", "g", "--from-file", "/nonexistent/plan.csv"], None, 1, "no such file"),
    (["groups", "delete-offsets", "g", "--topic", "nope"], None, 1, "does not exist"),
    (["consume", "t-bad", "--offset", "soon"], None, 2, "invalid offset"),
    (["consume", "t-bad", "--format", "%k %x"], None, 2, "unknown placeholder '%x'"),
    (["produce", "t-bad", "--header", "novalue"], "x\n", 2, "invalid header"),
    (["topics", "describe", "nope"], None, 1, "does not exist"),
    (["client-metrics", "--alter", "--name", "cm-bad", "--interval", "5"], None, 1,
     "Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)) — --interval is 100"),
    (["lab", "run", "{late}", "--out", "{tmp}"], None, 2, "is outside the scenario, which runs 0 <= at_s < 100"),
]


@pytest.mark.parametrize(("argv", "stdin", "status", "says"), MISTAKES, ids=[" ".join(m[0][:3]) for m in MISTAKES])
def test_each_mistake_gets_one_line_and_a_non_zero_exit(broker, tmp_path, argv, stdin, status, says):
    argv = [a.format(late=late_event(tmp_path), tmp=tmp_path / "out") for a in argv]
    if argv[0] != "lab":
        argv += ["--bootstrap-server", broker.bootstrap]
    done = subprocess.run([KGROUP, *argv], input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == status, done.stderr
    assert says in one_error_line(done)


def test_lab_sweep_without_java_says_to_install_java_17(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(Path(sys.executable).parent)            # no java there
    done = subprocess.run([KGROUP, "lab", "sweep", str(EXAMPLES / "rolling-bounce-sweep.yaml"), "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1
    assert "install Java 17" in one_error_line(done)


@pytest.mark.parametrize(("address", "says"), [
    ("192.0.2.1:9092", "this host has no address 192.0.2.1"),         # TEST-NET-1: never local
    ("no-such-host.invalid:9092", "is not an address of this host"),
])
def test_serve_on_an_address_the_host_does_not_have(tmp_path, address, says):
    done = subprocess.run([KGROUP, "serve", "--listen", address, "--data-dir", str(tmp_path / "d")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and says in one_error_line(done)
    assert not (tmp_path / "d").exists()                      # refused before touching the data dir


def test_http_and_tls_clients_are_logged_as_not_kafka(broker):
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(100) == b""                              # closed, no answer
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", broker.port), timeout=5) as s:
        with pytest.raises((ssl.SSLError, OSError)):
            ctx.wrap_socket(s).do_handshake()
    wait_for(lambda: broker.log().count("not a Kafka client") >= 2, 30, 0.05, what="both strangers in the log")
    log = broker.log()
    assert "not a Kafka client (an HTTP request (GET /metrics HTTP/1.1))" in log
    assert "not a Kafka client (a TLS handshake" in log
    assert "larger than" not in log and "frame of" not in log


def test_client_metrics_subscriptions_as_kafka_client_metrics_prints_them(broker, capsys):
    """`kgroup client-metrics` (kafka-client-metrics' options): made, listed, described in
    Kafka's tool's words and as JSON, an empty value removing a key, deleted."""
    from kgroup.cli.main import main

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(["client-metrics", "--bootstrap-server", broker.bootstrap, *argv])
        out, err = capsys.readouterr()
        return status, out, err

    assert run("--alter", "--name", "cm-a", "--metrics", "org.apache.kafka.consumer.,org.apache.kafka.producer.",
               "--interval", "1000", "--match", "client_id=cm-a.*") == (0, "Altered client metrics config for cm-a.\n", "")
    status, out, _ = run("--alter", "--generate-name", "--metrics", "*", "--format", "json")
    generated = json.loads(out)["client_metrics"][0]["name"]
    assert status == 0 and len(generated) == 22                     # a UUID, base64 as Kafka prints it
    assert run("--list")[1].split() == sorted(["cm-a", generated])
    assert run("--describe", "--name", "cm-a")[1] == (
        "Client metrics configs for cm-a are:\n  interval.ms=1000\n  match=client_id=cm-a.*\n"
        "  metrics=org.apache.kafka.consumer.,org.apache.kafka.producer.\n")
    assert run("--alter", "--name", "cm-a", "--match", "")[0] == 0  # empty: the key is removed
    # Listed by name: the generated one sorts before or after cm-a as its random letters fall.
    assert json.loads(run("--describe", "--format", "json")[1])["client_metrics"] == sorted([
        {"name": "cm-a", "configs": {"interval.ms": "1000", "match": "",
                                     "metrics": "org.apache.kafka.consumer.,org.apache.kafka.producer."}},
        {"name": generated, "configs": {"interval.ms": "300000", "match": "", "metrics": "*"}}],
        key=lambda entry: entry["name"])
    status, _, err = run("--alter", "--name", "cm-a", "--match", "bogus=1")
    assert status == 1 and "Illegal client matching pattern: bogus=1" in err and "client_source_port" in err
    assert run("--delete")[0] == 2
    for name in ("cm-a", generated):
        assert run("--delete", "--name", name) == (0, f"Deleted client metrics config for {name}.\n", "")
    assert run("--describe", "--name", "cm-a")[1] == (
        "The client metric resource cm-a doesn't exist and doesn't have dynamic config.\n")
    assert run("--list", "--format", "json")[1] == '{"client_metrics":[]}\n'


# ---- Ctrl-C --------------------------------------------------------------------------------


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT back to its default in the child, as a terminal's shell gives it. A test run
    started in the background without job control (a CI runner, `cmd &` in a script)
    ignores SIGINT, every child inherits that, and Python then leaves it ignored: the
    command would never see the Ctrl-C this test presses."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _commands_in_group(pgid: int) -> list[str]:
    """The command lines of the processes in process group `pgid` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()     # after "pid (comm) "
            if int(fields[2]) == pgid:
                out.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except (OSError, ValueError, IndexError):
            continue                                        # gone meanwhile
    return out


def interrupt(argv: list[str], ready, stdin=subprocess.DEVNULL, timeout: float = 60) -> tuple[int, str]:
    """Start ``kgroup argv`` as a terminal would (its own process group), wait until
    ``ready(stderr so far, stdout so far, pid)``, press Ctrl-C (SIGINT to the whole group)."""
    proc = subprocess.Popen([KGROUP, *argv], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=_ctrl_c_as_in_a_terminal)
    out, err = bytearray(), bytearray()
    os.set_blocking(proc.stdout.fileno(), False)
    os.set_blocking(proc.stderr.fileno(), False)

    def is_ready() -> bool:
        assert proc.poll() is None, f"exited early: {err.decode()}"
        for stream, buf in ((proc.stdout, out), (proc.stderr, err)):
            chunk = stream.read()
            if chunk:
                buf += chunk
        return ready(err.decode(errors="replace"), out.decode(errors="replace"), proc.pid)
    try:
        try:
            wait_for(is_ready, timeout, 0.05, what=f"kgroup {argv[0]} to be ready")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {err.decode()}") from None
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=180)          # a Spark job winds down slowly on a loaded machine
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    os.set_blocking(proc.stderr.fileno(), True)
    err += proc.stderr.read()
    return proc.returncode, err.decode(errors="replace")


def connected_to(port: int):
    """Ready once the process has a TCP connection open to 127.0.0.1:`port` (its sockets'
    inodes in /proc/PID/fd matched against /proc/net/tcp): past its imports, inside
    kgroup's own Ctrl-C handling. A fixed delay was not enough: on a loaded machine Python
    can take longer than that to start, and an early Ctrl-C hits the interpreter instead."""
    def ready(err: str, out: str, pid: int) -> bool:
        try:
            inodes = {link[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
                      if (link := os.readlink(f"/proc/{pid}/fd/{fd}")).startswith("socket:[")}
        except OSError:
            return False
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes and fields[3] == "01" and int(fields[2].split(":")[1], 16) == port:
                return True
        return False
    return ready


def test_ctrl_c_on_consume_and_produce_is_one_line_and_130(broker):
    subprocess.run([KGROUP, "produce", "t-bad", "--partition", "0", "--bootstrap-server", broker.bootstrap],
                   input="first\n", capture_output=True, text=True, timeout=60, check=True)
    status, err = interrupt(["consume", "t-bad", "--group", "g-int", "--from-beginning", "--bootstrap-server",
                             broker.bootstrap], lambda err, out, pid: "first" in out)
    assert (status, err) == (130, "kgroup: interrupted\n")
    read, write = os.pipe()                                    # stdin stays open: produce waits on it
    try:
        status, err = interrupt(["produce", "t-bad", "--bootstrap-server", broker.bootstrap],
                                connected_to(broker.port), stdin=read)
    finally:
        os.close(write)
        os.close(read)
    assert (status, err) == (130, "kgroup: interrupted\n")


def test_ctrl_c_on_serve_stops_it_cleanly_with_130(tmp_path):
    port = free_port()
    status, err = interrupt(["serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d")],
                            lambda err, out, pid: "coordinator loaded" in err)
    assert status == 130 and "stopped cleanly" in err and "Traceback" not in err


@pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                    reason="lab sweep needs Java (make test runs where it is installed)")
def test_ctrl_c_on_lab_sweep_cancels_spark_quietly(tmp_path):
    pytest.importorskip("pyspark")
    seen: list[list[str]] = []

    def ready(err: str, out: str, pid: int) -> bool:
        if "groups simulated" not in err:
            return False
        # Spark's JVM and its Python workers run outside the terminal's process group: a
        # PySpark worker that got the Ctrl-C would print its own KeyboardInterrupt traceback.
        seen.append(_commands_in_group(pid))
        return True
    status, err = interrupt(["lab", "sweep", str(EXAMPLES / "rolling-bounce-sweep.yaml"), "--out",
                             str(tmp_path / "out"), "--master", "local[1]"], ready, timeout=180)
    assert seen and not [c for c in seen[0] if "java" in c or "pyspark" in c], seen
    assert status == 130, err
    assert err.rstrip().endswith("kgroup: interrupted")
    assert "Traceback" not in err and "ERROR" not in err and "Exception" not in err
