"""Every node's listeners, published in a cluster's shared data dir.

    <data_dir>/cluster/listeners/<node>.json
        {"version": 1, "pid": N, "listeners": {"SECURE": {"protocol": "SASL_SSL",
                                                           "host": "127.0.0.1", "port": 9192}}}

Why: a client that came in on listener L of one node must be told every node's address on
L (Kafka's listener names), not the nodes' `--cluster` entries, which are their PLAINTEXT
listeners. Each node writes its own file (atomically) when it starts, with each listener's
advertised address; the others read it. The file outlives a killed node, which is harmless:
answers name only live nodes. Readers compare each file's identity and read it again only
when it changed, so a lookup costs one stat per node.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kgroup.storage.atomic_files import write_atomically

Address = tuple[str, int]


def _path(data_dir: Path | str, node: int) -> Path:
    return Path(data_dir) / "cluster" / "listeners" / f"{node}.json"


def publish_listeners(data_dir: Path | str, node: int, listeners: dict[str, tuple[str, Address]]) -> None:
    """Write node `node`'s listeners: name -> (security protocol, advertised address)."""
    path = _path(data_dir, node)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"version": 1, "pid": os.getpid(), "listeners": {
        name: {"protocol": protocol, "host": host, "port": port}
        for name, (protocol, (host, port)) in listeners.items()}}
    write_atomically(path, [json.dumps(doc).encode()])


class NodeListeners:
    """The published listeners of the cluster's nodes, each file read again only when it changed."""

    def __init__(self, data_dir: Path | str, nodes: list[int]) -> None:
        self.data_dir = Path(data_dir)
        self.nodes = list(nodes)
        self._seen: dict[int, tuple | None] = {}
        self._known: dict[int, dict[str, Address]] = {}

    def of(self, node: int) -> dict[str, Address]:
        """Node `node`'s advertised address by listener name ({} until it published them)."""
        path = _path(self.data_dir, node)
        try:
            st = os.stat(path)
            identity: tuple | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            identity = None
        if identity != self._seen.get(node, ()):
            self._known[node] = self._read(path) if identity is not None else {}
            self._seen[node] = identity
        return self._known[node]

    def on(self, name: str) -> dict[int, Address]:
        """Every node that has listener `name`, with its advertised address there."""
        out = {}
        for node in self.nodes:
            address = self.of(node).get(name)
            if address is not None:
                out[node] = address
        return out

    @staticmethod
    def _read(path: Path) -> dict[str, Address]:
        try:
            doc = json.loads(path.read_text())
            return {str(name): (str(entry["host"]), int(entry["port"]))
                    for name, entry in doc["listeners"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}
