"""`ReferenceKafka`: Apache Kafka 4.4 itself, single-node KRaft, on free loopback ports.

    with ReferenceKafka() as kafka:                 # a temp dir, formatted storage, ready
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, ...})

It is the oracle of kgroup's differential tests: the same scenario runs against it and
against `kgroup.testing.Broker`, and what the clients observed is compared. Its settings
make the two comparable (see `REFERENCE_SETTINGS`): no initial rebalance delay unless asked,
replication factor 1 for every internal topic, share and streams groups on, transactions
v2 (`transaction.version=2`, the 4.4 default).

The jars come from Maven Central through the repo's `reference/pom.xml` (`make reference`
puts them in `reference/lib`); `KGROUP_REFERENCE_LIB` points elsewhere. Without Java or the
jars, `reference_unavailable()` says why, and the pytest fixture skips with that reason —
unless `KGROUP_REQUIRE_REFERENCE=1` (set by `make test`), when it fails instead, so CI
never skips the reference tests silently.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
import base64
from pathlib import Path
from typing import Any, Mapping

from kgroup.testing.process import ChildProcess, free_port

KAFKA_VERSION = "4.4.0"
LIB_ENV = "KGROUP_REFERENCE_LIB"
REQUIRE_ENV = "KGROUP_REQUIRE_REFERENCE"

# Broker settings that make a scenario on Kafka comparable with the same scenario on a
# `kgroup.testing.Broker` (whose test defaults are an initial rebalance delay of 0 and the
# Kafka defaults for everything else), and that let one node serve every internal topic.
REFERENCE_SETTINGS: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.replication.factor": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
    "min.insync.replicas": 1,
    "default.replication.factor": 1,
    # Groups of every kind (the 4.4 defaults, said out loud so a scenario can rely on them).
    "group.coordinator.rebalance.protocols": "classic,consumer,share,streams",
    # Streams groups as kgroup's test broker runs them: assignments at once (no initial delay,
    # no assignment interval) and sessions a test can wait out (a group sets its own).
    "group.streams.initial.rebalance.delay.ms": 0,
    "group.streams.assignment.interval.ms": 0,
    "group.streams.min.session.timeout.ms": 1_000,
    "group.streams.min.heartbeat.interval.ms": 100,
    # A short wait before an empty broker's first group can be coordinated.
    "group.coordinator.append.linger.ms": 0,
    # Data sized for tests, not for a production disk.
    "log.segment.bytes": 64 * 1024 * 1024,
    "log.retention.check.interval.ms": 60_000,
    "num.network.threads": 2,
    "num.io.threads": 4,
    "num.recovery.threads.per.data.dir": 1,
    "log.cleaner.threads": 1,
    "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
}

# Heap and JIT for a test broker on a 2-core machine: a small heap and C1 only start fast;
# benchmarks pass their own `jvm_options`.
TEST_JVM_OPTIONS = ("-Xms256m", "-Xmx768m", "-XX:+UseG1GC", "-XX:TieredStopAtLevel=1",
                    "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true")


def reference_lib() -> Path | None:
    """The folder of the Kafka 4.4 jars: $KGROUP_REFERENCE_LIB, else `reference/lib` of the
    checkout this file lives in (or of the working directory, or one of its parents)."""
    jar = f"kafka_2.13-{KAFKA_VERSION}.jar"
    if os.environ.get(LIB_ENV):
        lib = Path(os.environ[LIB_ENV])
        return lib if (lib / jar).exists() else None
    here = Path.cwd().resolve()
    for base in (Path(__file__).resolve().parents[3], here, *here.parents):
        lib = base / "reference" / "lib"
        if (lib / jar).exists():
            return lib
    return None


def java_command() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def reference_unavailable() -> str | None:
    """Why Apache Kafka cannot run here, or None when it can."""
    if java_command() is None:
        return "Apache Kafka 4.4 (the reference broker) needs Java 17+, and no `java` is on PATH"
    lib = reference_lib()
    if lib is None:
        return (f"the Apache Kafka {KAFKA_VERSION} jars are not installed: run `make reference` "
                f"(or set {LIB_ENV} to a folder with them)")
    return None


def classpath() -> str:
    lib = reference_lib()
    if lib is None:
        raise RuntimeError(reference_unavailable() or "no reference jars")
    return str(lib / "*")


def run_java(main_class: str, *args: str, timeout: float = 120.0, jvm_options: tuple[str, ...] = (),
             input: str | None = None, env: Mapping[str, str] | None = None,
             cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run one of Kafka's main classes (a CLI tool, the storage tool) to completion."""
    java = java_command()
    if java is None:
        raise RuntimeError(reference_unavailable())
    return subprocess.run(
        [java, *TEST_JVM_OPTIONS[:2], "-XX:TieredStopAtLevel=1", *jvm_options, "-cp", classpath(),
         main_class, *args],
        capture_output=True, text=True, timeout=timeout, input=input,
        env={**os.environ, **(env or {})}, cwd=cwd)


def _properties(values: Mapping[str, Any]) -> str:
    def text(v: Any) -> str:
        return ("true" if v else "false") if isinstance(v, bool) else str(v)
    return "".join(f"{k}={text(v)}\n" for k, v in values.items())


_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = warn
"""


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ReferenceKafka:
    """One single-node KRaft Apache Kafka 4.4 (broker and controller in one process)."""

    def __init__(self, settings: Mapping[str, Any] | None = None, *, directory: str | Path | None = None,
                 jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS, log_level: str = "INFO",
                 host: str = "127.0.0.1") -> None:
        """`settings`: server.properties over `REFERENCE_SETTINGS`. Without `directory`, a temp
        dir removed at `close`."""
        self._own_dir = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="kafka-ref-")) if directory is None else Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.settings = {**REFERENCE_SETTINGS, **(settings or {})}
        self.jvm_options = tuple(jvm_options)
        self.log_level = log_level
        self.port = 0
        self.controller_port = 0
        self.proc: subprocess.Popen | None = None
        self._formatted = False

    # ---- where it is ----------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / "server.log"

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    def log(self) -> str:
        out = self.dir / "stdout.log"
        parts = [p.read_text(errors="replace") for p in (out, self.log_path) if p.exists()]
        return "\n".join(parts)

    def logs(self) -> dict[str, str]:
        return {"kafka": self.log()}

    # ---- life cycle -----------------------------------------------------------------------

    def _write_config(self) -> Path:
        config = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **self.settings,
        }
        path = self.dir / "server.properties"
        path.write_text(_properties(config))
        (self.dir / "log4j2.properties").write_text(
            _LOG4J2.format(log=self.log_path, level=self.log_level))
        return path

    def _format(self, config: Path) -> None:
        result = run_java("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(config),
                          "--ignore-formatted", jvm_options=self._log_options())
        if result.returncode != 0:
            raise RuntimeError(f"formatting Kafka's storage failed:\n{result.stdout}\n{result.stderr}")
        self._formatted = True

    def _log_options(self) -> tuple[str, ...]:
        return (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",)

    def start(self, timeout: float = 60.0) -> "ReferenceKafka":
        """Format (the first time) and start; wait until it answers Kafka requests and can
        coordinate groups."""
        why = reference_unavailable()
        if why:
            raise RuntimeError(why)
        if not self.port:
            self.port, self.controller_port = free_port(self.host), free_port(self.host)
        config = self._write_config()
        if not self._formatted:
            self._format(config)
        # Through the one process helper: reaped at the latest when the session ends, and its
        # output attached to a failing test's report.
        self.child = ChildProcess([java_command(), *self.jvm_options, *self._log_options(), "-cp", classpath(),
                                   "kafka.Kafka", str(config)],
                                  name="Apache Kafka", log_path=self.dir / "stdout.log", new_session=True)
        self.child.launch()
        self.proc = self.child.proc
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited with {self.proc.returncode}:\n{self._tail()}")
            if _answers_api_versions(self.host, self.port) and "Kafka Server started" in self.log():
                return
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"Apache Kafka was not ready within {timeout:.0f} s:\n{self._tail()}")

    def _tail(self, lines: int = 60) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (a controlled shutdown) and wait; SIGKILL if it takes too long."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self, timeout: float = 60.0) -> "ReferenceKafka":
        self.stop()
        return self.start(timeout)

    def close(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "ReferenceKafka":
        return self.start() if not self.alive() else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- Kafka's own tools ----------------------------------------------------------------

    def tool(self, main_class: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """Run one of Kafka's CLI tools (its main class) with the jars of this reference."""
        return run_java(main_class, *args, timeout=timeout, jvm_options=self._log_options())


def _answers_api_versions(host: str, port: int) -> bool:
    """True when host:port answers an ApiVersions v0 request with error 0."""
    request = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(struct.pack(">i", len(request)) + request)
            sock.settimeout(2)
            size = struct.unpack(">i", _read(sock, 4))[0]
            body = _read(sock, size)
    except (OSError, struct.error):
        return False
    return len(body) >= 6 and struct.unpack_from(">h", body, 4)[0] == 0


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data
