"""The control API (`kgroup serve --control-listen HOST:PORT`): faults, groups, nodes over HTTP.

    GET    /status                              this node: id, Kafka address, loaded or not
    POST   /faults                              arm a fault (faults.py) -> {"id": ..., "nodes": [...]}
    GET    /faults                              armed faults, with what is left and hits
    DELETE /faults  |  /faults/{id}             disarm all, or one
    GET    /groups/{group}                      the group: kind, state, coordinator, members, ...
    GET    /groups/{group}/wait?state=S&members=N&timeout_ms=T
                                                200 once the group is so, else 408 at T
    POST   /groups/{group}/rebalance            start a rebalance now
    POST   /groups/{group}/members/{member}/expire
                                                expire the member as its session would
    POST   /groups/{group}/coordinator {"node": N}
                                                move the group's coordinator to node N
    GET    /nodes                               every node: address, control address, status
    POST   /nodes/{id}/kill | stop | start | pause?ms=N
                                                through the supervisor (control_cluster.py)

JSON in and out; every error is `{"error": "<one line>"}` with a 4xx/5xx status (400 for a
bad request, 404 for a group, member or node that does not exist, 409 for an operation the
group's state (or a cluster without a supervisor) refuses, 408 for a wait that timed out,
503 while the coordinator loads or moves, 504 for a move that did not finish in time).
Group operations go through the group's coordinator shard like any group request
(`Shard.call`): they are the core's own operations (core/group_control.py), so they are
persisted and replayed and show in the group events. In a cluster every node answers every
endpoint for the whole cluster: what lives on another node is forwarded there
(control_cluster.py). Nothing listens unless the flag is given; Kafka clients' requests
never pass through here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Callable
from urllib.parse import parse_qsl, quote, unquote, urlencode

from kgroup.broker.control.control_cluster import FORWARDED, ControlCluster, Unreachable, body_json, http_call
from kgroup.broker.control.faults import Faults, FaultSpec, FaultSpecError
from kgroup.broker.groups.group_api import GroupApi
from kgroup.broker.control.group_watch import GroupWatch
from kgroup.broker.http_server import HttpServer, Request, Response, json_response
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest, InspectedGroup

log = logging.getLogger("kgroup.broker.control")

DEFAULT_WAIT_MS = 10_000
MAX_WAIT_MS = 600_000
# While a group's shard loads, how often a wait looks again.
LOADING_RETRY_S = 0.05
# A wait looks at its group at least this often even when nothing changes it here (the
# group may have moved to another node meanwhile).
WAIT_RECHECK_S = 0.5
# How long a group request looks for the group's coordinator while it moves (a failover
# takes node_timeout_ms at most), and how often it looks again.
ROUTE_WAIT_S = 15.0
ROUTE_RETRY_S = 0.1
# How long a move of a coordinator may take, and a call to another node or the supervisor.
MOVE_TIMEOUT_S = 30.0
PEER_TIMEOUT_S = 10.0
NODE_CONTROL_TIMEOUT_S = 60.0
NODE_ACTIONS = ("kill", "stop", "start", "pause")
_STATUS_OF = {
    ErrorCode.GROUP_ID_NOT_FOUND: 404,
    ErrorCode.UNKNOWN_MEMBER_ID: 404,
    ErrorCode.INVALID_REQUEST: 409,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: 503,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: 503,
    ErrorCode.NOT_COORDINATOR: 503,
}


def error(status: int, message: str) -> Response:
    return json_response(status, {"error": message})


def group_json(view: InspectedGroup, coordinator: int | None) -> dict[str, Any]:
    """A group as the control API answers it (documented in docs/testing.md)."""
    return {
        "group": view.group_id, "kind": view.kind, "state": view.state, "protocol_type": view.protocol_type,
        "protocol": view.protocol, "assignor": view.assignor, "generation": view.generation,
        "group_epoch": view.group_epoch, "assignment_epoch": view.assignment_epoch,
        "coordinator": coordinator,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
            "host": m.client_host, "member_epoch": m.member_epoch, "protocol": m.protocol,
            "assignment": None if m.assignment is None else {t: list(ps) for t, ps in m.assignment},
            "pending_revocation": {t: list(ps) for t, ps in m.pending_revocation},
        } for m in view.members],
    }


def missing_group_json(group_id: str, coordinator: int | None) -> dict[str, Any]:
    """A group id that names no group, in the same shape (Kafka describes it as Dead)."""
    return {"group": group_id, "kind": None, "state": "Dead", "protocol_type": None, "protocol": None,
            "assignor": None, "generation": None, "group_epoch": None, "assignment_epoch": None,
            "coordinator": coordinator, "members": []}


class ControlApi:
    def __init__(self, faults: Faults, groups: GroupApi, watch: GroupWatch, node_id: int,
                 status: Callable[[], dict[str, Any]], cluster: ControlCluster | None = None) -> None:
        self.faults = faults
        self.groups = groups
        self.watch = watch
        self.node_id = node_id
        self.status = status
        # None: a broker on its own (tests of the endpoints alone); everything is local.
        self.cluster = cluster
        self.http = HttpServer(self.handle, methods=("GET", "HEAD", "POST", "DELETE"))

    async def start(self, host: str, port: int) -> tuple[str, int]:
        return await self.http.start(host, port)

    async def close(self) -> None:
        await self.http.close()

    # ---- routing --------------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        seg, method = request.segments, request.method
        if method == "HEAD":
            method = "GET"
        forwarded = FORWARDED in request.headers or self.cluster is None
        if seg == ("status",):
            return self._only(method, "GET") or json_response(200, self.status())
        if seg == ("faults",):
            if method == "GET":
                return await self._list_faults(forwarded)
            if method == "POST":
                return await self._add_fault(request, forwarded)
            if method == "DELETE":
                return await self._remove_faults(request, None, forwarded)
            return _not_allowed("GET, POST, DELETE")
        if len(seg) == 2 and seg[0] == "faults":
            if method != "DELETE":
                return _not_allowed("DELETE")
            return await self._remove_faults(request, seg[1], forwarded)
        if len(seg) >= 2 and seg[0] == "groups":
            group_id, rest = seg[1], seg[2:]
            if rest == ("coordinator",):
                return self._only(method, "POST") or await self._move(request, group_id)
            local = self._group_endpoint(method, group_id, rest, request.query)
            if local is None:
                return error(404, f"no such control endpoint: {request.method} {request.path}")
            if isinstance(local, Response):
                return local
            if forwarded:
                return await local
            local.close()
            return await self._at_coordinator(request, group_id)
        if seg == ("nodes",):
            return self._only(method, "GET") or json_response(200, self._nodes())
        if len(seg) == 3 and seg[0] == "nodes":
            return self._only(method, "POST") or await self._node_control(seg[1], seg[2], request.query)
        return error(404, f"no such control endpoint: {request.method} {request.path}")

    def _group_endpoint(self, method: str, group_id: str, rest: tuple[str, ...],
                        query: dict[str, str]) -> Any:
        """The local handling of a group endpoint (a coroutine), a Response refusing the
        method, or None for no such endpoint."""
        if rest == ():
            return self._only(method, "GET") or self._inspect(group_id)
        if rest == ("wait",):
            return self._only(method, "GET") or self._wait(group_id, query)
        if rest == ("rebalance",):
            return self._only(method, "POST") or self._rebalance(group_id)
        if len(rest) == 3 and rest[0] == "members" and rest[2] == "expire":
            return self._only(method, "POST") or self._expire(group_id, rest[1])
        return None

    @staticmethod
    def _only(method: str, allowed: str) -> Response | None:
        return None if method == allowed else _not_allowed(allowed)

    # ---- faults ---------------------------------------------------------------------------

    async def _add_fault(self, request: Request, forwarded: bool) -> Response:
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            return error(400, f"the body is not JSON: {exc}")
        fault_id = node = None
        if isinstance(body, dict):
            body = dict(body)
            node = body.pop("node", None)
            if forwarded:
                fault_id = body.pop("id", None)
        try:
            spec = FaultSpec.parse(body, self.faults.served)
        except FaultSpecError as exc:
            return error(400, str(exc))
        if forwarded:
            fault = self.faults.add(spec, fault_id if isinstance(fault_id, str) else None)
            log.info("fault %s armed: %s", fault.id, json.dumps(fault.to_json()))
            return json_response(200, {"id": fault.id, "nodes": [self.node_id]})
        # Where the requests it is meant for arrive (control_cluster.py).
        cluster = self.cluster
        if node is not None:
            if isinstance(node, bool) or node not in cluster.nodes:
                return error(400, f"node must be one of the cluster's nodes {cluster.nodes}, not {node!r}")
            targets = [node]
        elif spec.group is not None:
            owner = await self._owner(lambda: cluster.group_owner(spec.group), time.monotonic() + ROUTE_WAIT_S)
            if owner is None:
                return error(503, f"group {spec.group} has no coordinator now (its node is down or it is moving)")
            targets = [owner]
        elif spec.topic is not None and spec.partition is not None:
            owner = await self._owner(lambda: cluster.partition_owner(spec.topic, spec.partition),
                                      time.monotonic() + ROUTE_WAIT_S)
            if owner is None:
                return error(503, f"{spec.topic}-{spec.partition} has no leader now (no such partition, "
                             "or its node is down or it is moving)")
            targets = [owner]
        else:
            targets = cluster.live()
        fault_id = self.faults.new_id()
        forward = json.dumps({**body, "id": fault_id}).encode()
        armed = []
        for target in targets:
            try:
                answer = await self._on_node(target, "POST", "/faults", forward)
            except Unreachable as exc:
                if len(targets) == 1:
                    return error(503, f"cannot arm the fault on node {target}: {exc}")
                continue  # down since it was counted live: nothing arrives there anyway
            if answer.status != 200:
                return answer
            armed.append(target)
        return json_response(200, {"id": fault_id, "nodes": armed})

    async def _list_faults(self, forwarded: bool) -> Response:
        if forwarded:
            return json_response(200, {"faults": [{**f.to_json(), "node": self.node_id}
                                                  for f in self.faults.list()]})
        found: list[dict[str, Any]] = []
        for node in self.cluster.live():
            try:
                answer = await self._on_node(node, "GET", "/faults")
            except Unreachable:
                continue
            found.extend((body_json(answer) or {}).get("faults", []))
        return json_response(200, {"faults": found})

    async def _remove_faults(self, request: Request, fault_id: str | None, forwarded: bool) -> Response:
        if forwarded:
            if fault_id is None:
                return json_response(200, {"deleted": self.faults.clear()})
            return json_response(200, {"deleted": int(self.faults.remove(fault_id))})
        deleted = 0
        target = "/faults" if fault_id is None else f"/faults/{quote(fault_id, safe='')}"
        for node in self.cluster.live():
            try:
                answer = await self._on_node(node, "DELETE", target)
            except Unreachable:
                continue
            deleted += (body_json(answer) or {}).get("deleted", 0)
        if fault_id is not None and not deleted:
            return error(404, f"no fault {fault_id} (it may have used up its count)")
        return json_response(200, {"deleted": deleted})

    async def _on_node(self, node: int, method: str, target: str, body: bytes = b"",
                       timeout_s: float = PEER_TIMEOUT_S) -> Response:
        """A control request answered by node `node` (this one: at once, locally)."""
        if node == self.node_id:
            return await self.handle(Request(method, target.split("?")[0], _query(target), {FORWARDED: "1"},
                                             body, _segments(target)))
        return await self.cluster.forward(node, method, target, body, timeout_s)

    async def _owner(self, owner_now: Callable[[], int | None], deadline: float) -> int | None:
        """The node `owner_now` names, waiting (until `deadline`) while it names none."""
        while True:
            owner = owner_now()
            if owner is not None or time.monotonic() >= deadline:
                return owner
            await asyncio.sleep(ROUTE_RETRY_S)

    # ---- cluster: where a group lives ------------------------------------------------------

    async def _at_coordinator(self, request: Request, group_id: str) -> Response:
        """Answer a group request on the node that coordinates the group, looking again
        while it moves (503 from a node that stopped coordinating it meanwhile)."""
        is_wait = request.segments[2:] == ("wait",)
        if is_wait:
            try:
                _, _, timeout_ms = _wait_params(request.query)
            except ValueError as exc:
                return error(400, str(exc))
            deadline = time.monotonic() + timeout_ms / 1000
        else:
            deadline = time.monotonic() + ROUTE_WAIT_S
        answer: Response | None = None
        first = True
        while True:
            owner = await self._owner(lambda: self.cluster.group_owner(group_id), deadline)
            if owner is not None:
                target = _target(request)
                if is_wait and not first:  # what is left of the wait after a move
                    left_ms = max(0, int((deadline - time.monotonic()) * 1000))
                    target = _target(request, {**request.query, "timeout_ms": str(left_ms)})
                answer = await self._while_owner(group_id, owner, self._on_node(
                    owner, request.method, target, request.body,
                    max(1.0, deadline - time.monotonic()) + PEER_TIMEOUT_S))
                first = False
                if answer is not None and answer.status != 503:
                    return answer
            if time.monotonic() >= deadline:
                if answer is not None:
                    return answer
                if is_wait:
                    return json_response(408, {**missing_group_json(group_id, None),
                                               "error": f"group {group_id} had no coordinator within the wait"})
                return error(503, f"group {group_id} has no coordinator now (its node is down or it is moving)")
            await asyncio.sleep(ROUTE_RETRY_S)

    async def _while_owner(self, group_id: str, owner: int, call: Any) -> Response | None:
        """The answer of `call` to node `owner`; None if that node does not answer, or
        stops coordinating the group before it does (a paused node answers nothing until
        it resumes, long after another node took its groups over)."""
        task = asyncio.ensure_future(call)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=ROUTE_RETRY_S)
                if done:
                    return task.result()
                if self.cluster.group_owner(group_id) not in (owner, None):
                    return None
        except Unreachable:
            return None
        finally:
            task.cancel()

    async def _move(self, request: Request, group_id: str) -> Response:
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            return error(400, f"the body is not JSON: {exc}")
        node = body.get("node") if isinstance(body, dict) else None
        nodes = self.cluster.nodes if self.cluster is not None else [self.node_id]
        if isinstance(node, bool) or node not in nodes:
            return error(400, f'give the node to move the coordinator to, one of {nodes}: {{"node": N}}')
        if self.cluster is None or len(nodes) == 1:
            return error(409, "a single broker coordinates every group; a move needs a cluster (--cluster)")
        cluster = self.cluster
        if cluster.status(node) != "live":
            return error(409, f"node {node} is {cluster.status(node)}, not live: a coordinator moves to a live node")
        cluster.move(group_id, node)
        log.info("group %s: coordinator moving to node %d (control API)", group_id, node)
        deadline = time.monotonic() + MOVE_TIMEOUT_S
        while cluster.group_owner(group_id) != node:
            if time.monotonic() >= deadline:
                return error(504, f"the coordinator of {group_id} did not move to node {node} within "
                             f"{MOVE_TIMEOUT_S:.0f} s")
            await asyncio.sleep(ROUTE_RETRY_S)
        while True:  # the new coordinator answers 503 until it has loaded the group
            try:
                answer = await self._on_node(node, "GET", f"/groups/{quote(group_id, safe='')}")
            except Unreachable as exc:
                return error(503, f"node {node} took the group over but does not answer: {exc}")
            if answer.status != 503 or time.monotonic() >= deadline:
                break
            await asyncio.sleep(ROUTE_RETRY_S)
        view = body_json(answer)
        if answer.status == 404 and isinstance(view, dict):
            view.pop("error", None)
            return json_response(200, view)
        return answer

    # ---- cluster: nodes ---------------------------------------------------------------------

    def _nodes(self) -> dict[str, Any]:
        cluster = self.cluster
        if cluster is None:
            return {"nodes": [{"id": self.node_id, "status": "live", "bootstrap": self.status()["bootstrap"]}],
                    "supervisor": None}
        return {"nodes": [{"id": n, "bootstrap": "%s:%d" % cluster.addresses[n], "status": cluster.status(n),
                           "control": cluster.control_address(n)} for n in cluster.nodes],
                "supervisor": cluster.supervisor()}

    async def _node_control(self, node_text: str, action: str, query: dict[str, str]) -> Response:
        nodes = self.cluster.nodes if self.cluster is not None else [self.node_id]
        if not node_text.isdigit() or int(node_text) not in nodes:
            return error(404, f"no node {node_text}; the cluster's nodes are {nodes}")
        if action not in NODE_ACTIONS:
            return error(404, f"no node control {action!r}; use {', '.join(NODE_ACTIONS)}")
        target = f"/nodes/{int(node_text)}/{action}"
        if action == "pause":
            try:
                ms = _number(query, "ms", None, 1, 3_600_000)
            except ValueError as exc:
                return error(400, str(exc))
            if ms is None:
                return error(400, "pause needs ?ms=N (how long the node stops answering)")
            target += f"?ms={ms}"
        supervisor = self.cluster.supervisor() if self.cluster is not None else None
        if supervisor is None:
            return error(409, "node controls need the process that started the nodes: run the cluster "
                         "with `kgroup cluster` or kgroup.testing.Cluster")
        try:
            return await http_call(supervisor, "POST", target, b"", NODE_CONTROL_TIMEOUT_S,
                                   {"x-kgroup-from-node": str(self.node_id)})
        except Unreachable as exc:
            return error(503, f"the supervisor does not answer ({exc})")

    # ---- groups ---------------------------------------------------------------------------

    async def _call(self, group_id: str, handler_name: str, request: Any) -> Any:
        shard = self.groups.shard_of(group_id)
        return await shard.call(getattr(shard.coordinator, handler_name), request)

    async def _view(self, group_id: str) -> dict[str, Any]:
        """The group's JSON; a missing group's Dead view. Raises GroupError otherwise."""
        try:
            view = await self._call(group_id, "inspect_group", GroupControlRequest(group_id))
        except GroupError as exc:
            if exc.code is ErrorCode.GROUP_ID_NOT_FOUND:
                return missing_group_json(group_id, self.node_id)
            raise
        return group_json(view, self.node_id)

    async def _inspect(self, group_id: str) -> Response:
        try:
            view = await self._view(group_id)
        except GroupError as exc:
            return _group_error(exc)
        if view["kind"] is None:
            return json_response(404, {"error": f"group {group_id} does not exist", **view})
        return json_response(200, view)

    async def _wait(self, group_id: str, query: dict[str, str]) -> Response:
        try:
            state, members, timeout_ms = _wait_params(query)
        except ValueError as exc:
            return error(400, str(exc))
        deadline = time.monotonic() + timeout_ms / 1000
        view: dict[str, Any] | None = None
        while True:
            try:
                view = await self._view(group_id)
            except GroupError as exc:
                if exc.code is not ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    return _group_error(exc)
                view = None
            if view is not None and _matches(view, state, members):
                return json_response(200, view)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                body = view if view is not None else missing_group_json(group_id, self.node_id)
                return json_response(408, {**body, "error": _timed_out(group_id, state, members, timeout_ms)})
            if view is None:
                await asyncio.sleep(min(LOADING_RETRY_S, remaining))
            else:
                await self.watch.until_changed(group_id, min(remaining, WAIT_RECHECK_S))

    async def _rebalance(self, group_id: str) -> Response:
        try:
            await self._call(group_id, "rebalance_group", GroupControlRequest(group_id))
            view = await self._view(group_id)
        except GroupError as exc:
            return _group_error(exc)
        log.info("group %s: rebalance requested through the control API", group_id)
        return json_response(200, view)

    async def _expire(self, group_id: str, member: str) -> Response:
        try:
            member_id = await self._call(group_id, "expire_member", ExpireMemberRequest(group_id, member))
            view = await self._view(group_id)
        except GroupError as exc:
            return _group_error(exc)
        log.info("group %s: member %s expired through the control API", group_id, member_id)
        return json_response(200, {**view, "expired": member_id})


def _wait_params(query: dict[str, str]) -> tuple[str | None, int | None, int]:
    unknown = sorted(set(query) - {"state", "members", "timeout_ms"})
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r}; wait takes state, members and timeout_ms")
    state = query.get("state") or None
    members = _number(query, "members", None, 0, 1 << 31)
    timeout_ms = _number(query, "timeout_ms", DEFAULT_WAIT_MS, 0, MAX_WAIT_MS)
    return state, members, timeout_ms


def _number(query: dict[str, str], name: str, default: int | None, low: int, high: int) -> Any:
    raw = query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high}, not {raw!r}")
    return int(raw)


def _matches(view: dict[str, Any], state: str | None, members: int | None) -> bool:
    if state is not None and view["state"].lower() != state.lower():
        return False
    return members is None or len(view["members"]) == members


def _timed_out(group_id: str, state: str | None, members: int | None, timeout_ms: int) -> str:
    wanted = " with ".join(x for x in (state, None if members is None else f"{members} members") if x)
    return f"group {group_id} was not {wanted or 'there'} within {timeout_ms} ms"


def _group_error(exc: GroupError) -> Response:
    return error(_STATUS_OF.get(exc.code, 409), exc.message or exc.code.name)


def _not_allowed(allowed: str) -> Response:
    return Response(405, (json.dumps({"error": f"use {allowed} here"}) + "\n").encode(), "application/json",
                    headers=(("Allow", allowed),))


def _segments(target: str) -> tuple[str, ...]:
    path = target.split("?", 1)[0]
    return tuple(unquote(part) for part in path.strip("/").split("/") if part)


def _query(target: str) -> dict[str, str]:
    _, _, query = target.partition("?")
    return dict(parse_qsl(query, keep_blank_values=True))


def _target(request: Request, query: dict[str, str] | None = None) -> str:
    """The request's path and query again, as sent on the wire (each segment quoted)."""
    query = request.query if query is None else query
    path = "/" + "/".join(quote(seg, safe="") for seg in request.segments)
    return path + ("?" + urlencode(query) if query else "")
