"""`ReferenceKafka`: Apache Kafka 4.4 itself, single-node KRaft, on free loopback ports.

    with ReferenceKafka() as kafka:                 # a temp dir, formatted storage, ready
        consumer = Consumer({"bootstrap.servers": kafka.bootstrap, ...})

It is the oracle of kgroup's differential tests: the same scenario runs against it and
against `kgroup.testing.Broker`, and what the clients observed is compared. Its settings
make the two comparable: the coordinator settings are *derived* from a kgroup `[group]`
table (`group_properties`; by default `COMPARABLE_GROUP_SETTINGS`, which the differential
suite's kgroup broker runs with too), so the initial rebalance delay, the session and
heartbeat limits and the share-group limits are the same numbers on both sides;
replication factor 1 for every internal topic; classic, consumer, share and streams groups
on; assignments computed at once rather than batched (`REFERENCE_SETTINGS`); and the
features of a 4.4 cluster said out loud at format time (`FEATURES`: transaction.version=2,
share.version=2, streams.version=1). `extra_listeners` adds listeners advertised
at another address (the differential suite's recording proxy sits there); `users` adds
SCRAM credentials at format time (for a SASL_PLAINTEXT extra listener).

The jars come from Maven Central through the repo's `reference/pom.xml` (`make reference`
puts them in `reference/lib`); `KGROUP_REFERENCE_LIB` points elsewhere. Without Java or the
jars, `reference_unavailable()` says why, and the pytest fixture skips with that reason —
unless `KGROUP_REQUIRE_REFERENCE=1` (set by `make test`), when it fails instead, so CI
never skips the reference tests silently.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kgroup.kafka_uuid import random_uuid_text
from kgroup.testing.lifecycle import ServerHandle
from kgroup.testing.process import ChildProcess, free_port

if TYPE_CHECKING:
    from kgroup.core.config import GroupConfig

KAFKA_VERSION = "4.4.0"
LIB_ENV = "KGROUP_REFERENCE_LIB"
REQUIRE_ENV = "KGROUP_REQUIRE_REFERENCE"

# How often a broker of a comparison applies time retention: never within a test session.
# Scenarios produce records with fixed CreateTime timestamps of 1970 (so both brokers store
# the same bytes), which the default retention.ms (7 days) has long passed: a retention
# check rolls the active segment and deletes them all, and a consumer that resets to the
# earliest offset afterwards reads nothing (issue 28's "Kafka-side stall": the shared
# reference ran its first check 30 s after start and then every 60 s, the kgroup side every
# 300 s, so it came with session length).
RETENTION_CHECK_MS = 24 * 3600 * 1000

# Broker settings that let one node serve every internal topic and make a scenario on Kafka
# comparable with the same scenario on kgroup; the coordinator's numbers come from
# `group_properties`, over which these are written.
REFERENCE_SETTINGS: dict[str, Any] = {
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
    # Target assignments computed within the heartbeat that needs them, as kgroup does, not
    # batched on a timer or offloaded to another thread (Kafka 4.4's defaults: 1 s, on).
    "group.consumer.assignment.interval.ms": 0,
    "group.consumer.assignor.offload.enable": False,
    "group.share.assignment.interval.ms": 0,
    "group.share.assignor.offload.enable": False,
    "group.streams.assignment.interval.ms": 0,
    "group.streams.assignor.offload.enable": False,
    # Data sized for tests (log.segment.bytes stays at its default: a topic's segment.bytes
    # shows it, and kgroup's default is the same); no time retention in a session.
    "log.retention.check.interval.ms": RETENTION_CHECK_MS,
    # The first retention pass runs this long after start, whatever the interval (30 s by
    # default: the scenario running then lost its records). It also delays the log
    # manager's checkpoints and the removal of deleted topics' directories, which tests
    # never look at (a kill -9 recovers from the logs themselves).
    "log.initial.task.delay.ms": RETENTION_CHECK_MS,
    "num.network.threads": 2,
    "num.io.threads": 4,
    "num.recovery.threads.per.data.dir": 1,
    "log.cleaner.threads": 1,
    "log.cleaner.dedupe.buffer.size": 8 * 1024 * 1024,
}

# The [group] settings both brokers of a differential comparison run with (kgroup's test
# defaults, `kgroup.testing.broker.TEST_GROUP_SETTINGS`, plus limits short enough for
# session, heartbeat and lock timeouts to pass within a test): the reference gets the same
# numbers through `group_properties`.
COMPARABLE_GROUP_SETTINGS: dict[str, Any] = {
    "initial_rebalance_delay_ms": 0,
    "min_session_timeout_ms": 1_000,
    "consumer_session_timeout_ms": 10_000,
    "consumer_min_session_timeout_ms": 1_000,
    "consumer_heartbeat_interval_ms": 500,
    "consumer_min_heartbeat_interval_ms": 100,
    "share_session_timeout_ms": 10_000,
    "share_heartbeat_interval_ms": 500,
    # Target assignments at once (KIP-1263's interval off), as REFERENCE_SETTINGS has Kafka.
    "consumer_assignment_interval_ms": 0,
    "share_assignment_interval_ms": 0,
    # Streams groups assigned at once, as REFERENCE_SETTINGS has Kafka assign them.
    "streams_initial_rebalance_delay_ms": 0,
}

# The feature levels the storage is formatted with: those of a new Kafka 4.4 cluster
# (`kafka-storage version-mapping`), said out loud so a newer default cannot change them.
FEATURES: dict[str, int] = {
    "transaction.version": 2,
    "group.version": 1,
    "share.version": 2,
    "streams.version": 1,
}


def group_properties(group: "GroupConfig | None" = None) -> dict[str, Any]:
    """Kafka's coordinator properties with the values of a kgroup `[group]` config (by
    default `COMPARABLE_GROUP_SETTINGS` over kgroup's own defaults): each `GroupConfig`
    field names the Kafka property it mirrors, and this is that mapping."""
    from kgroup.core.config import GroupConfig  # noqa: PLC0415 (only where Kafka runs)

    g = group if group is not None else GroupConfig(**COMPARABLE_GROUP_SETTINGS)
    if g.offsets_retention_ms % 60_000:
        raise ValueError("offsets.retention.minutes is whole minutes: offsets_retention_ms must be too")
    # Only what differs from Kafka's own defaults is written: DescribeConfigs reports a
    # value written in server.properties as STATIC_BROKER_CONFIG, a default as DEFAULT_CONFIG.
    return {name: value for name, value in _group_properties(g).items()
            if KAFKA_GROUP_DEFAULTS.get(name) != value}


# Kafka's coordinator properties a `GroupConfig` field mirrors, with Kafka 4.4's defaults
# (GroupCoordinatorConfig, ShareGroupConfig): (property, field, Kafka's default). One table
# for the names, the fields and the defaults: `group_properties` writes what differs.
_GROUP_PROPERTIES: tuple[tuple[str, str, Any], ...] = (
    ("group.initial.rebalance.delay.ms", "initial_rebalance_delay_ms", 3_000),
    ("group.min.session.timeout.ms", "min_session_timeout_ms", 6_000),
    ("group.max.session.timeout.ms", "max_session_timeout_ms", 1_800_000),
    ("group.max.size", "max_group_size", 2_147_483_647),
    ("offsets.retention.minutes", "offsets_retention_ms", 10_080),
    ("offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms", 600_000),
    ("offset.metadata.max.bytes", "offset_metadata_max_bytes", 4096),
    ("group.consumer.session.timeout.ms", "consumer_session_timeout_ms", 45_000),
    ("group.consumer.min.session.timeout.ms", "consumer_min_session_timeout_ms", 45_000),
    ("group.consumer.max.session.timeout.ms", "consumer_max_session_timeout_ms", 60_000),
    ("group.consumer.heartbeat.interval.ms", "consumer_heartbeat_interval_ms", 5_000),
    ("group.consumer.min.heartbeat.interval.ms", "consumer_min_heartbeat_interval_ms", 5_000),
    ("group.consumer.max.heartbeat.interval.ms", "consumer_max_heartbeat_interval_ms", 15_000),
    ("group.consumer.assignors", "consumer_assignors", "uniform,range"),
    ("group.consumer.max.size", "consumer_max_size", 2_147_483_647),
    ("group.consumer.migration.policy", "consumer_migration_policy", "bidirectional"),
    ("group.consumer.assignment.interval.ms", "consumer_assignment_interval_ms", 1_000),
    ("group.consumer.min.assignment.interval.ms", "consumer_min_assignment_interval_ms", 0),
    ("group.consumer.max.assignment.interval.ms", "consumer_max_assignment_interval_ms", 15_000),
    ("group.share.assignment.interval.ms", "share_assignment_interval_ms", 1_000),
    ("group.share.min.assignment.interval.ms", "share_min_assignment_interval_ms", 0),
    ("group.share.max.assignment.interval.ms", "share_max_assignment_interval_ms", 15_000),
    ("group.share.session.timeout.ms", "share_session_timeout_ms", 45_000),
    ("group.share.min.session.timeout.ms", "share_min_session_timeout_ms", 45_000),
    ("group.share.max.session.timeout.ms", "share_max_session_timeout_ms", 60_000),
    ("group.share.heartbeat.interval.ms", "share_heartbeat_interval_ms", 5_000),
    ("group.share.min.heartbeat.interval.ms", "share_min_heartbeat_interval_ms", 5_000),
    ("group.share.max.heartbeat.interval.ms", "share_max_heartbeat_interval_ms", 15_000),
    ("group.share.record.lock.duration.ms", "share_record_lock_duration_ms", 30_000),
    ("group.share.min.record.lock.duration.ms", "share_min_record_lock_duration_ms", 15_000),
    ("group.share.max.record.lock.duration.ms", "share_max_record_lock_duration_ms", 60_000),
    ("group.share.delivery.count.limit", "share_delivery_count_limit", 5),
    ("group.share.min.delivery.count.limit", "share_min_delivery_count_limit", 2),
    ("group.share.max.delivery.count.limit", "share_max_delivery_count_limit", 10),
    ("group.share.partition.max.record.locks", "share_partition_max_record_locks", 2_000),
    ("group.share.min.partition.max.record.locks", "share_min_partition_max_record_locks", 100),
    ("group.share.max.partition.max.record.locks", "share_max_partition_max_record_locks", 4_000),
    ("group.share.max.size", "share_max_size", 200),
)
# Fields whose property has another unit or form.
_AS_PROPERTY: dict[str, Any] = {
    "offsets_retention_ms": lambda ms: ms // 60_000,      # offsets.retention.minutes
    "consumer_assignors": ",".join,
}

KAFKA_GROUP_DEFAULTS: dict[str, Any] = {name: default for name, _, default in _GROUP_PROPERTIES}


def _group_properties(g: "GroupConfig") -> dict[str, Any]:
    return {name: _AS_PROPERTY.get(field, _same)(getattr(g, field)) for name, field, _ in _GROUP_PROPERTIES}


def _same(value: Any) -> Any:
    return value


# How long a start may take before it counts as failed. It is ready in 3-10 s on a busy
# 2-core machine (20 s is what the issue allows); the margin is for a machine that is
# busier still, where failing the whole session would be worse than waiting.
READY_TIMEOUT = 60.0

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


def require_reference() -> None:
    """In a test: skip when Apache Kafka cannot run here, or fail instead under
    KGROUP_REQUIRE_REFERENCE=1 (as `make test` sets), so CI never skips a reference test."""
    import os

    import pytest

    why = reference_unavailable()
    if why:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{why} ({REQUIRE_ENV}=1: the reference tests must run)", pytrace=False)
        pytest.skip(why)


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
    archive = class_archive(java, main_class)
    writing = None if archive is None or archive.exists() else \
        archive.with_name(f"{archive.name}.{uuid.uuid4().hex[:12]}.tmp")
    sharing = () if archive is None else (
        "-XX:+IgnoreUnrecognizedVMOptions", "-Xlog:cds=off,cds+dynamic=off",
        f"-XX:ArchiveClassesAtExit={writing}" if writing else f"-XX:SharedArchiveFile={archive}")
    done = subprocess.run(
        [java, *TEST_JVM_OPTIONS[:2], "-XX:TieredStopAtLevel=1", *sharing, *jvm_options, "-cp", classpath(),
         main_class, *args],
        capture_output=True, text=True, timeout=timeout, input=input,
        env={**os.environ, **(env or {})}, cwd=cwd)
    if writing is not None and archive is not None:
        try:
            if done.returncode == 0 and writing.exists():
                os.replace(writing, archive)       # whole or not at all, for runs beside this one
        except OSError:
            pass
        writing.unlink(missing_ok=True)
    return done


# Each run of a Kafka tool starts a JVM that loads its classes from the ~90 jars again:
# ~1.4 s (1.8 s of CPU) on a 2-core machine, most of it class loading and verifying, and the
# suites run hundreds. So the first run of a tool also writes an archive (a dynamic
# class-data-sharing archive, JDK 13+: the classes that run loaded), and every later run of
# that tool maps it: 0.73 s (1.0 s of CPU) for `kafka-consumer-groups --list`. Its name is
# made of the java binary and the jars (names, sizes, times), so another JDK or new jars
# write a new one. A JVM that cannot use it loads the classes itself (its notices about that
# are turned off, as the tools' output is what tests read); an older JVM ignores the options.
def class_archive(java: str, main_class: str) -> Path | None:
    """Where the class archive of `main_class` run by `java` over the reference jars is (or
    goes), or None."""
    lib = reference_lib()
    if lib is None:
        return None
    try:
        jars = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in lib.glob("*.jar"))
        exe = Path(java).resolve()
        key = hashlib.sha256(repr((str(exe), exe.stat().st_mtime_ns, jars)).encode()).hexdigest()[:16]
        folder = lib / ".class-archives"
        folder.mkdir(exist_ok=True)
    except OSError:
        return None                                # a read-only lib: run without one
    return folder / f"{main_class}-{key}.jsa"


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
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, never starting
    with "-" (as Kafka's Uuid.randomUuid: kafka-storage would read such an id as an option)."""
    return random_uuid_text(os.urandom)


class ReferenceKafka(ServerHandle):
    """One single-node KRaft Apache Kafka 4.4 (broker and controller in one process)."""

    def __init__(self, settings: Mapping[str, Any] | None = None, *, directory: str | Path | None = None,
                 jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS, log_level: str = "INFO",
                 host: str = "127.0.0.1", group: "GroupConfig | None" = None,
                 extra_listeners: Mapping[str, tuple[str, int] | tuple[str, int, str]] | None = None,
                 users: Mapping[str, str] | None = None) -> None:
        """`settings`: server.properties over `group_properties(group)` and
        `REFERENCE_SETTINGS`. `extra_listeners`: NAME -> the (host, port) it is advertised at
        (and its security protocol, PLAINTEXT unless a third item says SASL_PLAINTEXT, which
        then takes SCRAM-SHA-256 and -512), each on a free port of its own
        (`listener_port(NAME)`).
        `users`: SCRAM-SHA-256 and -512 credentials (name -> password) written at format time.
        Without `directory`, a temp dir removed at `close`."""
        self._take_dir(directory, "kafka-ref-")
        self.host = host
        self.settings = {**REFERENCE_SETTINGS, **group_properties(group), **(settings or {})}
        self.jvm_options = tuple(jvm_options)
        self.log_level = log_level
        self.port = 0
        self.controller_port = 0
        self.extra_listeners = dict(extra_listeners or {})
        self.extra_ports: dict[str, int] = {}
        self.users = dict(users or {})
        self.proc: subprocess.Popen | None = None
        self._formatted = False

    def listener_port(self, name: str) -> int:
        """The port the extra listener `name` really listens on (it is advertised elsewhere)."""
        return self.extra_ports[name]

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
        listeners = [f"PLAINTEXT://{self.host}:{self.port}"]
        advertised = [f"PLAINTEXT://{self.host}:{self.port}"]
        protocols = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
        sasl: dict[str, Any] = {}
        for name, (host, port, *rest) in self.extra_listeners.items():
            protocol = rest[0] if rest else "PLAINTEXT"
            listeners.append(f"{name}://{self.host}:{self.extra_ports[name]}")
            advertised.append(f"{name}://{host}:{port}")
            protocols.append(f"{name}:{protocol}")
            if protocol.startswith("SASL_"):
                sasl["sasl.enabled.mechanisms"] = "SCRAM-SHA-256,SCRAM-SHA-512"
                for mechanism in ("scram-sha-256", "scram-sha-512"):
                    sasl[f"listener.name.{name.lower()}.{mechanism}.sasl.jaas.config"] = \
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        config = {
            "process.roles": "broker,controller",
            "node.id": 1,
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": ",".join([*listeners, f"CONTROLLER://{self.host}:{self.controller_port}"]),
            "advertised.listeners": ",".join(advertised),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": ",".join(protocols),
            "log.dirs": str(self.data_dir),
            **sasl,
            **self.settings,
        }
        path = self.dir / "server.properties"
        path.write_text(_properties(config))
        (self.dir / "log4j2.properties").write_text(
            _LOG4J2.format(log=self.log_path, level=self.log_level))
        return path

    def _format(self, config: Path) -> None:
        features = [arg for name, level in FEATURES.items() for arg in ("--feature", f"{name}={level}")]
        scram = [arg for user, password in self.users.items() for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                 for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")]
        result = run_java("kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(config),
                          "--ignore-formatted", *features, *scram, jvm_options=self._log_options())
        if result.returncode != 0:
            raise RuntimeError(f"formatting Kafka's storage failed:\n{result.stdout}\n{result.stderr}")
        self._formatted = True

    def _log_options(self) -> tuple[str, ...]:
        return (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",)

    def start(self, timeout: float = READY_TIMEOUT) -> "ReferenceKafka":
        """Format (the first time) and start; wait until it answers Kafka requests and can
        coordinate groups."""
        why = reference_unavailable()
        if why:
            raise RuntimeError(why)
        if not self.port:
            self.port, self.controller_port = free_port(self.host), free_port(self.host)
            self.extra_ports = {name: free_port(self.host) for name in self.extra_listeners}
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


# What reference_cluster.py's nodes share with this single node: the properties writer,
# the log set-up and the readiness probe.
properties_text = _properties
LOG4J2_TEMPLATE = _LOG4J2
answers_api_versions = _answers_api_versions
