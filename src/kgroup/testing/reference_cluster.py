"""`ReferenceKafkaCluster`: a 3-broker Apache Kafka 4.4 KRaft cluster on loopback, for the
benchmarks that compare kgroup's cluster with Kafka's (bench/failover.py `--peer kafka`).

    with ReferenceKafkaCluster() as cluster:        # 1 controller + 3 brokers, ready
        cluster.bootstrap                           # "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
        cluster.kill(2); cluster.start_node(2)      # kill -9 a broker, bring it back

The layout is Kafka's production one in small: a dedicated controller
(`process.roles=controller`, node id 0, the only quorum voter) and three brokers
(`process.roles=broker`, node ids 1..3), each a JVM of its own with a data dir of its own,
all formatted with one cluster id and the feature levels of `reference.FEATURES`. Internal
topics are replicated 3 ways with min.insync.replicas 2, as a cluster that survives one
broker is run; the other settings are `reference.REFERENCE_SETTINGS` and the coordinator's
numbers `reference.group_properties(group)`, as for the single-node reference.
`node_timeout_ms` is how long the controller waits for a silent broker's heartbeat before
it fences it and moves its leaderships (Kafka's `broker.session.timeout.ms`, 9 s by
default) and how long a leader waits for a silent follower before it drops it from the ISR
(`replica.lag.time.max.ms`, 30 s by default; acks=all writes wait for it): a benchmark sets
it to kgroup's `node_timeout_ms` so both clusters give up on a dead node after the same time.

`cluster_configs` builds every node's server.properties as a dict and is pure (no JVM),
so its roles and quorum are unit-tested.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from kgroup.testing.lifecycle import ServerHandle
from kgroup.testing.process import ChildProcess, free_port
from kgroup.testing.reference import (
    FEATURES, LOG4J2_TEMPLATE, READY_TIMEOUT, REFERENCE_SETTINGS, TEST_JVM_OPTIONS, answers_api_versions,
    classpath, cluster_id, group_properties, java_command, properties_text, reference_unavailable, run_java,
)

if TYPE_CHECKING:
    from kgroup.core.config import GroupConfig

CONTROLLER_ID = 0

# What a cluster that survives the loss of one broker of three runs with.
REPLICATED_SETTINGS: dict[str, Any] = {
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
    "share.coordinator.state.topic.replication.factor": 3,
    "share.coordinator.state.topic.min.isr": 2,
    "default.replication.factor": 3,
    "min.insync.replicas": 2,
}


def cluster_configs(host: str, controller_port: int, broker_ports: list[int], data_root: Path,
                    settings: Mapping[str, Any] | None = None,
                    node_timeout_ms: int | None = None) -> dict[int, dict[str, Any]]:
    """server.properties of every node, {node id: properties}: the controller (id 0) first,
    then the brokers (ids 1..n) on `broker_ports`. `settings` go over every broker's
    (REFERENCE_SETTINGS, then REPLICATED_SETTINGS, then these)."""
    voters = f"{CONTROLLER_ID}@{host}:{controller_port}"
    protocols = "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    common = {"controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
              "listener.security.protocol.map": protocols}
    timeouts: dict[str, Any] = {}
    if node_timeout_ms is not None:
        timeouts = {"broker.session.timeout.ms": node_timeout_ms,
                    "broker.heartbeat.interval.ms": max(100, node_timeout_ms // 3),
                    "replica.lag.time.max.ms": node_timeout_ms}
    configs: dict[int, dict[str, Any]] = {CONTROLLER_ID: {
        "process.roles": "controller", "node.id": CONTROLLER_ID, **common,
        "listeners": f"CONTROLLER://{host}:{controller_port}",
        "log.dirs": str(data_root / f"node-{CONTROLLER_ID}"), **timeouts,
    }}
    for node_id, port in enumerate(broker_ports, start=1):
        configs[node_id] = {
            "process.roles": "broker", "node.id": node_id, **common,
            "listeners": f"PLAINTEXT://{host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(data_root / f"node-{node_id}"),
            **timeouts, **REFERENCE_SETTINGS, **REPLICATED_SETTINGS, **(settings or {}),
        }
    return configs


class ClusterNode:
    """One JVM of the cluster: its config, its log and its process."""

    def __init__(self, node_id: int, directory: Path, config: Mapping[str, Any], port: int,
                 jvm_options: tuple[str, ...], host: str) -> None:
        self.node_id, self.dir, self.port, self.host = node_id, directory, port, host
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.dir / "server.properties"
        self.config_path.write_text(properties_text(config))
        self.log_path = self.dir / "server.log"
        (self.dir / "log4j2.properties").write_text(LOG4J2_TEMPLATE.format(log=self.log_path, level="INFO"))
        self.jvm_options = jvm_options
        self.child: ChildProcess | None = None
        self._log_mark = 0

    @property
    def proc(self) -> subprocess.Popen | None:
        return self.child.proc if self.child else None

    def log_options(self) -> tuple[str, ...]:
        return (f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",)

    def format(self, cluster: str) -> None:
        features = [arg for name, level in FEATURES.items() for arg in ("--feature", f"{name}={level}")]
        result = run_java("kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(self.config_path),
                          "--ignore-formatted", *features, jvm_options=self.log_options())
        if result.returncode != 0:
            raise RuntimeError(f"formatting node {self.node_id} failed:\n{result.stdout}\n{result.stderr}")

    def launch(self) -> None:
        self._log_mark = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.child = ChildProcess([java_command(), *self.jvm_options, *self.log_options(), "-cp", classpath(),
                                   "kafka.Kafka", str(self.config_path)],
                                  name=f"Apache Kafka node {self.node_id}", log_path=self.dir / "stdout.log",
                                  new_session=True)
        self.child.launch()

    def ready(self) -> bool:
        """Started since the last launch (its log says so) and, for a broker, answering."""
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"Apache Kafka node {self.node_id} exited with {self.proc.returncode}:\n"
                               f"{self.tail()}")
        if not self.log_path.exists():
            return False
        with open(self.log_path, "rb") as f:
            f.seek(self._log_mark)
            started = b"Kafka Server started" in f.read()
        return started and (self.port == 0 or answers_api_versions(self.host, self.port))

    def tail(self, lines: int = 40) -> str:
        parts = [p.read_text(errors="replace") for p in (self.dir / "stdout.log", self.log_path) if p.exists()]
        return "\n".join("\n".join(parts).splitlines()[-lines:])

    def alive(self) -> bool:
        return self.child is not None and self.child.alive()

    def kill(self) -> None:
        if self.child is not None:
            self.child.kill()

    def stop(self, timeout: float = 30.0) -> None:
        if self.child is not None:
            self.child.stop(timeout)


class ReferenceKafkaCluster(ServerHandle):
    """One KRaft controller and `brokers` brokers of Apache Kafka 4.4, each its own JVM."""

    def __init__(self, brokers: int = 3, settings: Mapping[str, Any] | None = None, *,
                 directory: str | Path | None = None, jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS,
                 controller_jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS, host: str = "127.0.0.1",
                 group: "GroupConfig | None" = None, node_timeout_ms: int | None = None) -> None:
        self._take_dir(directory, "kafka-cluster-")
        self.host = host
        self.broker_count = brokers
        self.settings = {**group_properties(group), **(settings or {})}
        self.jvm_options, self.controller_jvm_options = tuple(jvm_options), tuple(controller_jvm_options)
        self.node_timeout_ms = node_timeout_ms
        self.nodes: dict[int, ClusterNode] = {}

    @property
    def brokers(self) -> dict[int, ClusterNode]:
        return {i: n for i, n in self.nodes.items() if i != CONTROLLER_ID}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{n.port}" for n in self.brokers.values())

    def start(self, timeout: float = READY_TIMEOUT) -> "ReferenceKafkaCluster":
        """Format every node (the first time), start them all at once, wait until each is up."""
        why = reference_unavailable()
        if why:
            raise RuntimeError(why)
        if not self.nodes:
            controller_port = free_port(self.host)
            ports = [free_port(self.host) for _ in range(self.broker_count)]
            configs = cluster_configs(self.host, controller_port, ports, self.dir / "data", self.settings,
                                      self.node_timeout_ms)
            cluster = cluster_id()
            for node_id, config in configs.items():
                port = 0 if node_id == CONTROLLER_ID else ports[node_id - 1]
                options = self.controller_jvm_options if node_id == CONTROLLER_ID else self.jvm_options
                self.nodes[node_id] = ClusterNode(node_id, self.dir / f"node-{node_id}", config, port,
                                                  options, self.host)
            for node in self.nodes.values():
                node.format(cluster)
        for node in self.nodes.values():
            if not node.alive():
                node.launch()
        self.wait_ready(list(self.nodes), timeout)
        return self

    def wait_ready(self, node_ids: list[int], timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        waiting = set(node_ids)
        while waiting:
            waiting = {i for i in waiting if not self.nodes[i].ready()}
            if waiting and time.monotonic() > deadline:
                tails = "\n".join(f"--- node {i}:\n{self.nodes[i].tail()}" for i in sorted(waiting))
                raise RuntimeError(f"Kafka nodes {sorted(waiting)} not ready within {timeout:.0f} s:\n{tails}")
            time.sleep(0.1)

    def kill(self, node_id: int) -> None:
        """kill -9 of one node, as a crash."""
        self.nodes[node_id].kill()

    def start_node(self, node_id: int, timeout: float = READY_TIMEOUT) -> None:
        """Start a node that was killed or stopped again, on its data; wait until it is up."""
        self.nodes[node_id].launch()
        self.wait_ready([node_id], timeout)

    def node_for_port(self, port: int) -> int:
        return next(i for i, n in self.brokers.items() if n.port == port)

    def alive(self) -> bool:
        return bool(self.nodes) and all(n.alive() for n in self.nodes.values())

    def stop(self) -> int | None:
        for node in self.brokers.values():
            node.stop()
        if CONTROLLER_ID in self.nodes:
            self.nodes[CONTROLLER_ID].stop()
        return None

    def logs(self) -> dict[str, str]:
        return {f"kafka node {i}": n.tail(200) for i, n in self.nodes.items()}
