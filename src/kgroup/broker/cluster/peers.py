"""Peers: the node-to-node client of a cluster node (issue 32).

How this works: a node that must ask another node something (a transaction coordinator
writing markers into partitions it does not lead, WriteTxnMarkers; a partition leader
asking a transaction coordinator on another node whether a transactional write may pass,
AddPartitionsToTxn v4+) does it with Kafka's own broker-to-broker requests, over the other
node's listener as the `--cluster` list names it. One `kgroup.client` Connection per peer
is opened on first use (ApiVersions negotiated as any client does) and kept; a request that
fails on its connection (the peer died, restarted, or closed it because it lost a unit)
drops the connection, so the next request connects afresh, and the error goes to the
caller, which retries on its own schedule (the markers are retried until written; a
verification answers its produce with a retriable error). Ownership is read from the
shared data dir (ownership.py), so no Metadata round trip is needed to know who leads what.

Every request names its version explicitly: the broker-to-broker versions (WriteTxnMarkers
v1-2, AddPartitionsToTxn v4-5) are not in the client's own ranges (client/versions.py), and
AddPartitionsToTxn v5 means "a transaction.version 2 producer" to the coordinator.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kgroup.client.connection import Connection
from kgroup.client.errors import KafkaClientError

log = logging.getLogger("kgroup.broker.peers")

# A peer that does not answer within this is treated as unreachable for this attempt.
PEER_TIMEOUT_S = 5.0


class PeerUnavailable(Exception):
    """The peer could not be reached or did not answer (retry later, maybe elsewhere)."""


class Peers:
    """Connections from this node to the other nodes of its cluster."""

    def __init__(self, node_id: int, addresses: dict[int, tuple[str, int]], timeout_s: float = PEER_TIMEOUT_S) -> None:
        self.node_id = node_id
        self.addresses = addresses
        self.timeout_s = timeout_s
        self._conns: dict[int, Connection] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        self.requests = 0

    async def _connection(self, node: int) -> Connection:
        conn = self._conns.get(node)
        if conn is not None and not conn.closed:
            return conn
        lock = self._opening.setdefault(node, asyncio.Lock())
        async with lock:
            conn = self._conns.get(node)
            if conn is not None and not conn.closed:
                return conn
            host, port = self.addresses[node]
            conn = await Connection.open(host, port, client_id=f"kgroup-node-{self.node_id}", timeout=self.timeout_s)
            self._conns[node] = conn
            return conn

    async def request(self, node: int, api_key: int, body: Any) -> Any:
        """Send one kio request (its version as built) to `node`; its decoded answer.
        Raises PeerUnavailable if the node cannot be reached or does not answer."""
        if node == self.node_id or node not in self.addresses:
            raise PeerUnavailable(f"node {node} is not a peer of node {self.node_id}")
        try:
            conn = await self._connection(node)
            self.requests += 1
            return await conn.request(api_key, body, timeout=self.timeout_s)
        except (KafkaClientError, OSError) as exc:
            await self._drop(node)
            raise PeerUnavailable(f"node {node}: {exc}") from None

    async def ask(self, node: int, api_key: int, body: Any) -> Any:
        """`request`, or None if the node cannot be reached (what a concern that may not
        import this module is given: admin/group_forwarding.py)."""
        try:
            return await self.request(node, api_key, body)
        except PeerUnavailable as exc:
            log.info("node %s: %s", self.node_id, exc)
            return None

    async def _drop(self, node: int) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for node in list(self._conns):
            await self._drop(node)
