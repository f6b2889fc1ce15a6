"""The control API (`kgroup serve --control-listen HOST:PORT`): faults and groups over HTTP.

    GET    /status                              this node: id, Kafka address, loaded or not
    POST   /faults                              arm a fault (faults.py) -> {"id": ...}
    GET    /faults                              armed faults, with what is left and hits
    DELETE /faults  |  /faults/{id}             disarm all, or one
    GET    /groups/{group}                      the group: kind, state, members, ...
    GET    /groups/{group}/wait?state=S&members=N&timeout_ms=T
                                                200 once the group is so, else 408 at T
    POST   /groups/{group}/rebalance            start a rebalance now
    POST   /groups/{group}/members/{member}/expire
                                                expire the member as its session would

JSON in and out; every error is `{"error": "<one line>"}` with a 4xx/5xx status (400 for a
bad request, 404 for a group or member that does not exist, 409 for an operation the group's
state refuses, 408 for a wait that timed out, 503 while the coordinator loads). Group
operations go through the group's coordinator shard like any group request
(`Shard.call`): they are the core's own operations (core/group_control.py), so they are
persisted and replayed and show in the group events. Nothing listens unless the flag is
given; Kafka clients' requests never pass through here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any, Callable

from kgroup.broker.faults import Faults, FaultSpec, FaultSpecError
from kgroup.broker.group_api import GroupApi
from kgroup.broker.group_watch import GroupWatch
from kgroup.broker.http_server import HttpServer, Request, Response, json_response
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.messages import ExpireMemberRequest, GroupControlRequest, InspectedGroup

log = logging.getLogger("kgroup.broker.control")

DEFAULT_WAIT_MS = 10_000
MAX_WAIT_MS = 600_000
# While a group's shard loads, how often a wait looks again.
LOADING_RETRY_S = 0.05
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
                 status: Callable[[], dict[str, Any]]) -> None:
        self.faults = faults
        self.groups = groups
        self.watch = watch
        self.node_id = node_id
        self.status = status
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
        if seg == ("status",):
            return self._only(method, "GET") or json_response(200, self.status())
        if seg == ("faults",):
            if method == "GET":
                return json_response(200, {"faults": [f.to_json() for f in self.faults.list()]})
            if method == "POST":
                return self._add_fault(request)
            if method == "DELETE":
                return json_response(200, {"deleted": self.faults.clear()})
            return _not_allowed("GET, POST, DELETE")
        if len(seg) == 2 and seg[0] == "faults":
            if method != "DELETE":
                return _not_allowed("DELETE")
            if not self.faults.remove(seg[1]):
                return error(404, f"no fault {seg[1]} (it may have used up its count)")
            return json_response(200, {"deleted": 1})
        if len(seg) >= 2 and seg[0] == "groups":
            group_id, rest = seg[1], seg[2:]
            if rest == ():
                return self._only(method, "GET") or await self._inspect(group_id)
            if rest == ("wait",):
                return self._only(method, "GET") or await self._wait(group_id, request.query)
            if rest == ("rebalance",):
                return self._only(method, "POST") or await self._rebalance(group_id)
            if len(rest) == 3 and rest[0] == "members" and rest[2] == "expire":
                return self._only(method, "POST") or await self._expire(group_id, rest[1])
        return error(404, f"no such control endpoint: {request.method} {request.path}")

    @staticmethod
    def _only(method: str, allowed: str) -> Response | None:
        return None if method == allowed else _not_allowed(allowed)

    # ---- faults ---------------------------------------------------------------------------

    def _add_fault(self, request: Request) -> Response:
        try:
            body = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            return error(400, f"the body is not JSON: {exc}")
        try:
            spec = FaultSpec.parse(body)
        except FaultSpecError as exc:
            return error(400, str(exc))
        fault = self.faults.add(spec)
        log.info("fault %s armed: %s", fault.id, json.dumps(fault.to_json()))
        return json_response(200, {"id": fault.id})

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
                await self.watch.until_changed(group_id, remaining)

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
