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
between them. A coordinator that cannot be reached (it died; the partition moves) is
COORDINATOR_NOT_AVAILABLE, and a partition without an owner for the moment (between a
death and a takeover) COORDINATOR_LOAD_IN_PROGRESS, as a client retries either.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Awaitable, Callable

from kgroup.broker.groups.group_api import NOT_COORDINATOR, GroupApi
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, request_class
from kgroup.wire.kio_build import build

# The client id of the node-to-node client (cluster/peers.py names itself so).
PEER_CLIENT_PREFIX = "kgroup-node-"

# (node, api key, kio request) -> the peer's decoded answer, or None if it could not be asked.
Ask = Callable[[int, int, Any], Awaitable[Any]]


class GroupForwarding:
    """Sends a GROUP resource's config request to the node that coordinates the group."""

    def __init__(self, groups: GroupApi, ask: Ask | None, refuse: Callable[[int, str], Exception]) -> None:
        self.groups = groups
        self.ask = ask
        # What a resource that cannot be answered raises (configs_api's ResourceError).
        self.refuse = refuse

    def node_of(self, header: RequestHeader, group_id: str) -> int | None:
        """The other node to ask for `group_id`, or None: this node answers (it coordinates
        the group or is loading it, is a single broker, or the request came from a peer).
        Raises `refuse` while the group's partition has no owner."""
        if self.ask is None or (header.client_id or "").startswith(PEER_CLIENT_PREFIX):
            return None
        if self.groups.shard_of(group_id) is not NOT_COORDINATOR:
            return None
        node = self.groups.cluster.leader(self.groups.shard_for(group_id))
        if node is None:
            raise self.refuse(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                              f"the coordinator of group {group_id!r} is moving")
        return None if node == self.groups.cluster.node_id else node

    async def one(self, node: int, header: RequestHeader, request: Any, resource: Any, results: str) -> Any:
        """The coordinator's result for `resource` alone (`results`: the response's list field)."""
        assert self.ask is not None
        answer = await self.ask(node, header.api_key, dataclasses.replace(request, resources=(resource,)))
        if answer is None:
            raise self.refuse(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                              f"the coordinator of group {resource.resource_name!r} (node {node}) "
                              "could not be reached")
        (result,) = getattr(answer, results)
        return result

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
