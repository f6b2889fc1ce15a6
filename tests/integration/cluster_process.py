"""A cluster of real `kgroup serve` nodes sharing one data dir, for integration tests."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

from kgroup.storage.group_hash import partition_for_group
from kgroup.wire import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build, item
from tests.integration.broker_process import BrokerProcess, free_port

METADATA_PARTITIONS = 50


class ClusterProcess:
    """N nodes (0..N-1) on free loopback ports; each can be killed, paused, restarted."""

    def __init__(self, base: Path, nodes: int = 3, *, group: dict | None = None, extra: dict | None = None) -> None:
        ports = [free_port() for _ in range(nodes)]
        self.cluster = ",".join(f"{i}=127.0.0.1:{p}" for i, p in enumerate(ports))
        self.data_dir = base / "data"
        self.nodes = [BrokerProcess(self.data_dir, group=group, extra=extra, node_id=i, cluster=self.cluster,
                                    port=p, name=f"node{i}") for i, p in enumerate(ports)]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def start(self, timeout: float = 60.0) -> "ClusterProcess":
        """Start every node at once (as `kgroup cluster` does) and wait until each is ready."""
        before = [n.launch() for n in self.nodes]
        for node, loaded in zip(self.nodes, before):
            node.wait_ready(loaded, timeout)
        return self

    def live_bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes if n.alive())

    def finish(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.alive():
                node.resume()
        for node in self.nodes:
            if node.proc is not None:
                node.finish()


def group_coordinated_by(node: int, prefix: str, nodes: int = 3) -> str:
    """A group id whose group-metadata partition node `node` prefers (p mod N)."""
    for i in range(10_000):
        group = f"{prefix}-{i}"
        if partition_for_group(group, METADATA_PARTITIONS) % nodes == node:
            return group
    raise AssertionError("no such group id")


def coordinator_of(bootstrap: str, group: str) -> int:
    """The node FindCoordinator names for `group` (asked through kgroup's admin client)."""
    from kgroup.client.admin import AdminClient

    async def ask() -> int:
        async with AdminClient(bootstrap) as admin:
            return (await admin.find_coordinator(group)).node_id

    return asyncio.run(ask())


def call(port: int, api_key: int, version: int, **fields):
    """One request to one node; the decoded response. Waits as long as Kafka's Admin client
    does by default (request.timeout.ms, 30 s): a node may wait for a moving coordinator."""
    cls = request_class(api_key, version)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(encode_request(api_key, version, 1, "basics", build(cls, **fields)))
        head = s.recv(4, socket.MSG_WAITALL)
        body = s.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
    return decode_response(api_key, version, body)[1]


def metadata(port: int, topic: str):
    """Metadata v4 of one topic, never auto-creating it."""
    cls = request_class(3, 4)
    return call(port, 3, 4, topics=(build(item(cls, "topics"), name=topic),), allow_auto_topic_creation=False)
