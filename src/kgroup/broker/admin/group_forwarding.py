"""Group configs through any node of a cluster (issue 32, item 5).

How this works: a group's configs are records in its group-metadata partition, written and
read by the node that coordinates the group (core/group_configs.py), so that they move with
the coordinator and are fenced with it. On Apache Kafka 4.4 every broker accepts
IncrementalAlterConfigs, AlterConfigs and DescribeConfigs of a GROUP resource (the configs
live in the KRaft metadata; a broker forwards the alteration to the controller). A kgroup
node that does not coordinate the group does the same with the coordinator: it sends it
the request cut down to that one resource, at the client's version, over the node-to-node
client (cluster/peers.py, given by concerns.py as `ask`), and answers with the
coordinator's result for the resource. ListConfigResources of GROUP likewise asks every
other live node for the groups it coordinates.

A request that came from another node (its client id is a peer's) is never forwarded
again: if the asked node lost the group meanwhile it answers NOT_COORDINATOR, which the
first node passes on, so two nodes that disagree for a moment cannot bounce a request
between them.

A group whose partition is moving (no owner for the moment, between a death and a
takeover), is being loaded here, or whose coordinator cannot be reached (it died and its
lease has not run out yet) or has just lost it, is waited for and asked again, not refused:
Kafka keeps group configs in KRaft, so it never answers COORDINATOR_LOAD_IN_PROGRESS to a
config request, and its Admin client does not retry an error given per resource, so
`kafka-configs --alter` would fail on kgroup in a window where it succeeds on Kafka. The wait is bounded below the Admin client's request timeout (30 s
by default) so the client gets an answer, not a disconnect, and below the node-to-node
client's timeout for a request a peer forwarded; past it the answer is
COORDINATOR_LOAD_IN_PROGRESS (no owner), COORDINATOR_NOT_AVAILABLE (not reachable) or the
coordinator's own last answer, which says what is going on.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Awaitable, Callable

from kgroup.broker.groups.group_api import LOADING, NOT_COORDINATOR, GroupApi
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, request_class
from kgroup.wire.kio_build import build

# The client id of the node-to-node client (cluster/peers.py names itself so).
PEER_CLIENT_PREFIX = "kgroup-node-"

# (node, api key, kio request) -> the peer's decoded answer, or None if it could not be asked.
Ask = Callable[[int, int, Any], Awaitable[Any]]

# How long a config request of a GROUP resource waits for the group's coordinator to settle
# (see the module's docstring): a client's request, and one a peer forwarded, whose asker
# gives up after cluster/peers.py's PEER_TIMEOUT_S, 5 s (this module may not import it; a
# unit test holds the two together).
LOAD_WAIT_S = 20.0
PEER_LOAD_WAIT_S = 4.0
# How often a waiting request looks again (a takeover's load takes milliseconds to seconds),
# and how long it waits before asking a coordinator again that could not be reached or had
# moved on (the node-to-node client logs a peer's loss and return once, not each failed ask).
LOAD_POLL_S = 0.05
ASK_AGAIN_S = 0.25
# What the asked coordinator answers when the group moved on meanwhile (it lost the partition,
# or took it over and is still loading it): ask again, wherever the group is by then.
_MOVED = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


class GroupForwarding:
    """Sends a GROUP resource's config request to the node that coordinates the group."""

    def __init__(self, groups: GroupApi, ask: Ask | None, refuse: Callable[[int, str], Exception], *,
                 load_wait_s: float = LOAD_WAIT_S, peer_load_wait_s: float = PEER_LOAD_WAIT_S) -> None:
        self.groups = groups
        self.ask = ask
        # What a resource that cannot be answered raises (configs_api's ResourceError).
        self.refuse = refuse
        self.load_wait_s = load_wait_s
        self.peer_load_wait_s = peer_load_wait_s

    async def forwarded(self, header: RequestHeader, request: Any, resource: Any, results: str) -> Any | None:
        """The coordinator's result for the GROUP `resource` alone (`results`: the response's
        list field), or None when this node answers it (it coordinates the group, is a single
        broker, or the request came from a peer). Waits while the group's partition has no
        owner or is loading here, and asks again while its coordinator cannot be reached or
        has just lost the group; raises `refuse` when that lasts past the bound."""
        group_id = resource.resource_name
        from_peer = (header.client_id or "").startswith(PEER_CLIENT_PREFIX)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.peer_load_wait_s if from_peer else self.load_wait_s)
        while True:
            while self._unsettled(group_id, from_peer) and loop.time() < deadline:
                await asyncio.sleep(LOAD_POLL_S)
            node = self._node_of(group_id, from_peer)
            if node is None:
                return None
            assert self.ask is not None
            answer = await self.ask(node, header.api_key, dataclasses.replace(request, resources=(resource,)))
            result = None if answer is None else getattr(answer, results)[0]
            if result is not None and int(result.error_code) not in _MOVED:
                return result
            if loop.time() >= deadline:
                if result is not None:
                    return result
                raise self.refuse(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                  f"the coordinator of group {group_id!r} (node {node}) could not be reached")
            await asyncio.sleep(ASK_AGAIN_S)

    def _node_of(self, group_id: str, from_peer: bool) -> int | None:
        """The other node that coordinates `group_id`, or None: this node answers."""
        if self.ask is None or from_peer:
            return None
        if self.groups.shard_of(group_id) is not NOT_COORDINATOR:
            return None
        node = self.groups.cluster.leader(self.groups.shard_for(group_id))
        if node is None:
            raise self.refuse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                              f"the coordinator of group {group_id!r} is moving")
        return None if node == self.groups.cluster.node_id else node

    def _unsettled(self, group_id: str, from_peer: bool) -> bool:
        """Whether `group_id`'s coordinator is loading here, or (for a request this node
        would forward) its partition has no owner."""
        shard = self.groups.shard_of(group_id)
        if shard is LOADING:
            return True
        if shard is NOT_COORDINATOR:
            return self.ask is not None and not from_peer and \
                self.groups.cluster.leader(self.groups.shard_for(group_id)) is None
        return not shard.loaded

    async def group_resources(self, header: RequestHeader, group_type: int) -> list[str]:
        """The names of the groups with configs that the other live nodes coordinate."""
        if self.ask is None or (header.client_id or "").startswith(PEER_CLIENT_PREFIX):
            return []
        cls = request_class(header.api_key, 1)
        names: list[str] = []
        for node in self.groups.cluster.brokers():
            if node == self.groups.cluster.node_id:
                continue
            answer = await self.ask(node, header.api_key, build(cls, resource_types=(group_type,)))
            if answer is not None and not int(answer.error_code):
                names += [r.resource_name for r in answer.config_resources if int(r.resource_type) == group_type]
        return names
