"""Where a control API request acts in a cluster, and getting it there.

How this works: every node of a cluster may get any control request (a test talks to
whichever node it knows). A request about a group is answered where the group lives — the
node that owns the group's metadata partition (ownership.py); a fault is armed where the
requests it is meant for arrive: the group's coordinator for a fault naming a group, the
partition's leader for one naming a topic partition, and every live node for the others.
The receiving node forwards such a request over HTTP to the other node's control listener
(each node publishes its control address in the shared data dir, storage/control_files.py)
and passes the answer back as it came. A forwarded request carries `X-Kgroup-Forwarded`
and is never forwarded again: the node it reaches answers from what it holds, and a 503
(not the coordinator any more: the group moved meanwhile) sends the first node looking
again, until the request's own deadline.

Why forwarding rather than shared state: a fault's count, a group's state and a wait on it
live in the memory of the one node that serves the group; asking that node is exact, and
needs nothing new on the Kafka request path (a shared fault table in the data dir would
cost every request a look at it and every hit a locked write). The price is that a fault is
armed on the node that served its group or partition when it was added: if that moves, the
fault stays where it was (docs/testing.md says so).

Node controls (kill, stop, start, pause) go to the supervisor: the process that started
the nodes and is their parent (kgroup.testing's Cluster or `kgroup cluster`; its address is
in the data dir). A node cannot start a killed peer, and a paused node cannot resume itself,
so a process outside the nodes has to do both; nodes started by hand have no supervisor and
answer node controls with 409.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

from kgroup.broker.http_server import JSON, Response
from kgroup.broker.cluster.liveness import PeerStatus
from kgroup.broker.cluster.ownership import Ownership
from kgroup.storage import DataDir
from kgroup.storage.control_files import control_address, supervisor_address
from kgroup.storage.errors import StorageError, TopicError

FORWARDED = "x-kgroup-forwarded"
FROM_NODE = "x-kgroup-from-node"
CONNECT_TIMEOUT_S = 2.0
HEAD_LIMIT = 64 * 1024


class Unreachable(Exception):
    """Nobody answered at a control address (the node is down, paused, or has none)."""


class ControlCluster:
    """The cluster as the control API needs it: owners, live nodes, addresses, moves."""

    def __init__(self, ownership: Ownership, data: DataDir, shard_for: Callable[[str], int],
                 addresses: dict[int, tuple[str, int]]) -> None:
        self.ownership = ownership
        self.data = data
        self.shard_for = shard_for
        self.addresses = addresses
        self.me = ownership.me
        self.nodes = sorted(addresses)

    # ---- where things live ------------------------------------------------------------------

    def group_slot(self, group_id: str) -> int:
        return self.shard_for(group_id)

    def group_owner(self, group_id: str) -> int | None:
        """The node that coordinates `group_id` now; None while it moves or its node is down."""
        return self.ownership.owner(self.shard_for(group_id))

    def partition_owner(self, topic: str, partition: int) -> int | None:
        """The leader of a topic partition now (None: moving, down, or no such partition)."""
        try:
            return self.ownership.owner(self.data.unit_of(topic, partition))
        except (TopicError, StorageError):
            return None

    def live(self) -> list[int]:
        return sorted(self.ownership.liveness.live() | {self.me})

    def status(self, node: int) -> str:
        if node == self.me:
            return PeerStatus.LIVE.value
        return self.ownership.liveness.status(node).value

    def control_address(self, node: int) -> str | None:
        return control_address(self.data.path, node)

    def supervisor(self) -> str | None:
        return supervisor_address(self.data.path)

    def move(self, group_id: str, node: int) -> None:
        self.ownership.move(self.shard_for(group_id), node)

    # ---- forwarding -------------------------------------------------------------------------

    async def forward(self, node: int, method: str, target: str, body: bytes = b"",
                      timeout_s: float = 30.0) -> Response:
        """Send a control request to node `node`'s control API; its answer as it came."""
        address = self.control_address(node)
        if address is None:
            raise Unreachable(f"node {node} has no control API (start it with --control-listen)")
        return await http_call(address, method, target, body, timeout_s, {FORWARDED: "1", FROM_NODE: str(self.me)})


async def http_call(address: str, method: str, target: str, body: bytes, timeout_s: float,
                    headers: dict[str, str] | None = None) -> Response:
    """One HTTP/1.1 request to `address` ("HOST:PORT") on a connection of its own; the
    answer as a Response (status, body, content type). Unreachable if nobody answers."""
    host, _, port = address.rpartition(":")
    try:
        async with asyncio.timeout(CONNECT_TIMEOUT_S):    # not wait_for: it can drop a cancellation
            reader, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    except (OSError, TimeoutError, ValueError) as exc:
        raise Unreachable(f"nobody answers at {address}: {exc or type(exc).__name__}") from None
    try:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {address}", "Connection: close",
                 f"Content-Length: {len(body)}", f"Content-Type: {JSON}"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        async with asyncio.timeout(timeout_s):
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > HEAD_LIMIT:
                raise Unreachable(f"{address} answered with an oversized head")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            status = int(status_line.split(" ", 2)[1])
            fields = {}
            for line in header_lines:
                name, sep, value = line.partition(":")
                if sep:
                    fields[name.strip().lower()] = value.strip()
            length = fields.get("content-length")
            payload = await (reader.readexactly(int(length)) if length is not None else reader.read())
        return Response(status, payload, fields.get("content-type", JSON))
    except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
            IndexError) as exc:
        raise Unreachable(f"no answer from {address}: {exc or type(exc).__name__}") from None
    finally:
        writer.close()


def body_json(response: Response) -> Any:
    """The JSON of an answer (None if it has none)."""
    try:
        return json.loads(response.body) if response.body else None
    except ValueError:
        return None
