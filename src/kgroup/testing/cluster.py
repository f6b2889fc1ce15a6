"""`Cluster`: N `kgroup serve` nodes sharing a data dir, for a test, with the node and
coordinator controls at hand.

    with Cluster(nodes=3) as cluster:             # a temp dir, free ports, every node ready
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, ...})
        cluster.move_coordinator("g", node=2)     # a clean hand-over: no rebalance
        cluster.kill_node(cluster.coordinator_of("g"))   # kill -9: another node takes over
        cluster.start_node(2)

The handle is the nodes' parent and their supervisor (supervisor.py): it starts them, and
it kills, stops, starts and pauses them — when a test calls the methods here, and when any
node's control API gets `POST /nodes/{id}/...` (the node forwards it here). So a killed node
can be started again from the control API too, from any language, as long as this handle
lives. Every other control goes to a node's control API (`control`: the first node
running), which acts cluster-wide.

Test defaults: those of `Broker`, and `node_timeout_ms = 3000` (a paused node loses its
partitions after 3 s rather than 6).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kgroup.testing.broker import TEST_GROUP_SETTINGS, TEST_SETTINGS
from kgroup.testing.control import ControlClient, ControlError
from kgroup.testing.handle import ControlMethods
from kgroup.testing.process import PORT_RETRIES, ServeProcess, free_port, write_config
from kgroup.testing.supervisor import Supervisor

TEST_CLUSTER_SETTINGS = {"node_timeout_ms": 3000}


class Cluster(ControlMethods):
    """Nodes 0..N-1 of one cluster, each a process of its own; a method per control."""

    def __init__(self, nodes: int = 3, data_dir: str | Path | None = None, *,
                 settings: dict[str, Any] | None = None, group: dict[str, Any] | None = None,
                 host: str = "127.0.0.1") -> None:
        """`settings`: top-level TOML settings, `group`: the [group] table, over the test
        defaults. Without `data_dir`, a temp dir removed at `close`."""
        if nodes < 1:
            raise ValueError(f"a cluster has at least one node, not {nodes}")
        self.size = nodes
        self.host = host
        self._own_dir = data_dir is None
        self.dir = Path(tempfile.mkdtemp(prefix="kgroup-cluster-")) if data_dir is None else Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config_path = self.dir / "kgroup.toml"
        write_config(self.config_path, {**TEST_SETTINGS, **TEST_CLUSTER_SETTINGS, **(settings or {})},
                     {**TEST_GROUP_SETTINGS, **(group or {})})
        self.nodes: list[ServeProcess] = []
        self.supervisor: Supervisor | None = None

    # ---- life cycle -----------------------------------------------------------------------

    def _make_nodes(self) -> None:
        ports = [(free_port(self.host), free_port(self.host)) for _ in range(self.size)]
        cluster = ",".join(f"{i}={self.host}:{kafka}" for i, (kafka, _) in enumerate(ports))
        self.nodes = [ServeProcess(self.data_dir, self.config_path, self.dir / f"node{i}.log", self.host,
                                   ("--node-id", str(i), "--cluster", cluster), ports=pair)
                      for i, pair in enumerate(ports)]
        self.supervisor = Supervisor(self.data_dir, dict(enumerate(self.nodes)))

    def start(self, timeout: float = 60.0) -> "Cluster":
        """Start every node at once (on free ports) and wait until each serves."""
        for _ in range(PORT_RETRIES):
            self._make_nodes()
            self.supervisor.serve(self.host)
            marks = [node.launch() for node in self.nodes]
            if all([node.wait_ready(mark, timeout) for node, mark in zip(self.nodes, marks)]):
                self._wait_all_live(timeout)
                return self
            self._stop_all(kill=True)   # a port was taken meanwhile: again, on new ones
        raise RuntimeError("the cluster's nodes could not bind free ports")

    def _wait_all_live(self, timeout: float) -> None:
        """Until every node sees every node live (a fault for all nodes reaches them all)."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            while any(n["status"] != "live" for n in node.control.nodes()):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the nodes did not all see each other live within {timeout:.0f} s")
                time.sleep(0.02)

    def stop(self) -> None:
        """Stop every node (SIGTERM, all at once) and the supervisor; the data stays."""
        self._stop_all(kill=False)

    def _stop_all(self, kill: bool) -> None:
        if self.supervisor is not None:
            self.supervisor.close()
        for node in self.nodes:
            node.resume()
            if node.alive():
                node.proc.kill() if kill else node.proc.terminate()
        for node in self.nodes:
            if kill:
                node.kill()
            else:
                node.stop()

    def close(self) -> None:
        """Stop and, if this handle made the data dir, remove it (the nodes are killed:
        nothing of theirs is kept)."""
        self._stop_all(kill=self._own_dir)
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Cluster":
        return self.start() if not any(n.alive() for n in self.nodes) else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- where it is ----------------------------------------------------------------------

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def bootstrap(self) -> str:
        """`bootstrap.servers` for clients: every node."""
        return ",".join(node.bootstrap for node in self.nodes)

    def node_bootstrap(self, node: int) -> str:
        return self.nodes[node].bootstrap

    def node_control(self, node: int) -> ControlClient:
        """The control API of one node (it acts cluster-wide, as every node's does)."""
        return self.nodes[node].control

    @property
    def control_address(self) -> str:
        """HOST:PORT of a running node's control API (any node's acts cluster-wide)."""
        return self._running().control_address

    @property
    def control(self) -> ControlClient:
        return self._running().control

    def _running(self) -> ServeProcess:
        for node in self.nodes:
            if node.alive() and not node.paused():
                return node
        raise RuntimeError("no node of the cluster is running")

    def logs(self) -> dict[str, str]:
        return {f"node {i}": node.log() for i, node in enumerate(self.nodes)}

    # ---- the cluster controls ---------------------------------------------------------------

    def coordinator_of(self, group_id: str) -> int | None:
        """The node that coordinates `group_id` now (whether the group exists or not)."""
        try:
            return self.group(group_id)["coordinator"]
        except ControlError as exc:
            if exc.status == 404 and isinstance(exc.body, dict):
                return exc.body.get("coordinator")
            raise

    def move_coordinator(self, group_id: str, node: int) -> dict[str, Any]:
        """Move the group's coordinator to `node` by a clean hand-over (its members keep
        their generation and partitions); returns the group as the new coordinator has it."""
        return self.control.move_coordinator(group_id, node)

    def kill_node(self, node: int) -> None:
        """SIGKILL, as a crash: its partitions go to other nodes within a second."""
        self.supervisor.kill(node)

    def stop_node(self, node: int) -> int | None:
        """SIGTERM: it hands its partitions over and exits; returns its exit status."""
        return self.supervisor.stop(node)["exit_status"]

    def start_node(self, node: int, timeout: float = 60.0) -> None:
        """Start a stopped or killed node again (same ports, same data); it gets its
        partitions back by hand-over after a moment."""
        self.supervisor.start(node, timeout)

    def pause_node(self, node: int, ms: int) -> None:
        """Stop it answering for `ms` (SIGSTOP, then SIGCONT), as a long GC pause would;
        past node_timeout_ms its partitions move. Returns at once."""
        self.supervisor.pause(node, ms)

    def cluster_nodes(self) -> list[dict[str, Any]]:
        """Every node as the control API sees it: id, bootstrap, status, control address."""
        return self.control.nodes()
