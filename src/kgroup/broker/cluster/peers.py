"""Peers: the node-to-node client of a cluster node (issue 32).

How this works: a node that must ask another node something (a transaction coordinator
writing markers into partitions it does not lead, WriteTxnMarkers; a partition leader
asking a transaction coordinator on another node whether a transactional write may pass,
AddPartitionsToTxn v4+) does it with Kafka's own broker-to-broker requests, over the other
node's inter-node listener: the `--cluster` entries (PLAINTEXT, as User:ANONYMOUS) unless
`inter_node_listener` names one of the node's listeners, whose address on every node is
read from what the nodes publish (storage/node_listeners.py) and on which this node logs in
with its own credentials (SASL, TLS client certificate) as Kafka's inter-broker listener
does; with the authorizer on, that principal needs ClusterAction (a super user). One `kgroup.client` Connection per peer
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
from collections.abc import Callable
from typing import Any

from kgroup.broker.config import BrokerConfig
from kgroup.client.connection import Connection
from kgroup.client.errors import AuthenticationError, KafkaClientError
from kgroup.client.security import ClientSecurity, SecurityConfigError
from kgroup.storage.node_listeners import NodeListeners

log = logging.getLogger("kgroup.broker.peers")

# A peer that does not answer within this is treated as unreachable for this attempt.
PEER_TIMEOUT_S = 5.0


class PeerUnavailable(Exception):
    """The peer could not be reached or did not answer (retry later, maybe elsewhere)."""


class Peers:
    """Connections from this node to the other nodes of its cluster."""

    def __init__(self, node_id: int, addresses: dict[int, tuple[str, int]] | Callable[[], dict[int, tuple[str, int]]],
                 timeout_s: float = PEER_TIMEOUT_S, security: ClientSecurity | None = None) -> None:
        self.node_id = node_id
        # Fixed (the --cluster entries) or read when needed (a listener the nodes publish).
        self._addresses = addresses if callable(addresses) else (lambda: addresses)
        self.security = security
        self.timeout_s = timeout_s
        self._conns: dict[int, Connection] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        # The peers `ask` last found unreachable: a wait that asks a dead node again every
        # quarter second (admin/group_forwarding.py) logs its loss and its return once, not
        # each attempt.
        self._unreachable: set[int] = set()
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
            conn = await Connection.open(host, port, client_id=f"kgroup-node-{self.node_id}", timeout=self.timeout_s,
                                         security=self.security)
            self._conns[node] = conn
            return conn

    @property
    def addresses(self) -> dict[int, tuple[str, int]]:
        """Every peer's address on the inter-node listener (a node that has not published it: absent)."""
        return self._addresses()

    async def request(self, node: int, api_key: int, body: Any) -> Any:
        """Send one kio request (its version as built) to `node`; its decoded answer.
        Raises PeerUnavailable if the node cannot be reached or does not answer."""
        if node == self.node_id or node not in self.addresses:
            raise PeerUnavailable(f"node {node} is not a peer of node {self.node_id}")
        try:
            conn = await self._connection(node)
            self.requests += 1
            return await conn.request(api_key, body, timeout=self.timeout_s)
        except AuthenticationError as exc:
            # Our credentials on the inter-node listener are wrong: say so, the retries won't mend it.
            log.warning("node %d refused this node's inter-node login: %s", node, exc)
            await self._drop(node)
            raise PeerUnavailable(f"node {node}: {exc}") from None
        except (KafkaClientError, SecurityConfigError, OSError) as exc:
            await self._drop(node)
            raise PeerUnavailable(f"node {node}: {exc}") from None

    async def ask(self, node: int, api_key: int, body: Any) -> Any:
        """`request`, or None if the node cannot be reached (what a concern that may not
        import this module is given: admin/group_forwarding.py)."""
        try:
            answer = await self.request(node, api_key, body)
        except PeerUnavailable as exc:
            first = node not in self._unreachable
            self._unreachable.add(node)
            log.log(logging.INFO if first else logging.DEBUG, "node %s: %s", self.node_id, exc)
            return None
        if node in self._unreachable:
            self._unreachable.discard(node)
            log.info("node %s: node %s answers again", self.node_id, node)
        return answer

    async def _drop(self, node: int) -> None:
        conn = self._conns.pop(node, None)
        if conn is not None:
            await conn.close()

    async def close(self) -> None:
        for node in list(self._conns):
            await self._drop(node)


def inter_node_peers(cfg: BrokerConfig, listeners: NodeListeners | None) -> Peers:
    """This node's Peers: on `inter_node_listener` with its credentials, else the --cluster
    entries (PLAINTEXT). With the authorizer on, warn at start when the principal the other
    nodes will see is no super user: their WriteTxnMarkers and AddPartitionsToTxn v4+ would
    be refused CLUSTER_AUTHORIZATION_FAILED (Kafka authorizes its brokers by super.users too)."""
    listener = cfg.inter_node_listener_config
    if listener is None or listeners is None:
        principal = "User:ANONYMOUS"
        peers = Peers(cfg.node_id, dict(cfg.nodes))
    else:
        principal = f"User:{cfg.inter_node_username}" if listener.sasl else None
        peers = Peers(cfg.node_id, lambda: listeners.on(listener.name),
                      security=ClientSecurity.from_settings(cfg.inter_node_security()))
    if cfg.cluster and cfg.auth.authorizer and principal is not None and principal not in cfg.auth.super_users:
        log.warning("the authorizer is on and this node's principal on its inter-node listener (%s, %s) is not in "
                    "[auth] super_users: the other nodes refuse its transaction markers unless an ACL allows it "
                    "ClusterAction on the cluster (see inter_node_listener in the README)",
                    listener.name if listener is not None else "the --cluster PLAINTEXT ports", principal)
    return peers
