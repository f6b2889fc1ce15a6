"""The console's actions on a group: reset its offsets, remove a static member, delete it.

    POST /api/groups/{group}/reset-offsets   {"to": "earliest" | "latest" | "offset" |
                                             "datetime" | "shift", "value": N, "topic": T,
                                             "execute": false}
        The plan (every partition's current and new offset), as `kgroup groups
        reset-offsets` prints it; with "execute": true also committed. The rules are the
        CLI's (kgroup/offset_reset.py): refused (409, in Kafka's words) unless the group is
        inactive; offsets are clamped to the log; "datetime" is epoch milliseconds (the
        first offset at or after it, the log end if none); scope: the partitions the group
        has committed, or every partition of "topic".
    POST /api/groups/{group}/remove-member   {"instance_id": ID}    LeaveGroup for a static member
    POST /api/groups/{group}/delete          {}                     DeleteGroups

Each answers JSON: what was done, or {"error", "hint"} with 400 (a bad request), 401/403
(authentication, ACLs: console/auth.py), 404 (no such group), 409 (the group's state
forbids it). Every change is a Kafka request through the broker's request path
(console/kafka_calls.py): the same handler, the same checks, the same records written.
"""

from __future__ import annotations

import json
from typing import Any

from kgroup.broker.http_server import Response, json_response
from kgroup.broker.observe.console.auth import Actor
from kgroup.broker.observe.console.kafka_calls import KafkaCalls
from kgroup.broker.observe.group_view import GroupViews
from kgroup.error_codes import ErrorCode
from kgroup.group_types import SHARE
from kgroup.offset_reset import reset_refused
from kgroup.wire.api_keys import ApiKey

EARLIEST, LATEST = -2, -1
TARGETS = ("earliest", "latest", "offset", "datetime", "shift")
REASON = "removed from the kgroup web console"
# What a Kafka error means for the person acting, as an HTTP status.
STATUS = {ErrorCode.GROUP_AUTHORIZATION_FAILED: 403, ErrorCode.TOPIC_AUTHORIZATION_FAILED: 403,
          ErrorCode.CLUSTER_AUTHORIZATION_FAILED: 403, ErrorCode.GROUP_ID_NOT_FOUND: 404,
          ErrorCode.UNKNOWN_MEMBER_ID: 409, ErrorCode.NON_EMPTY_GROUP: 409, ErrorCode.REBALANCE_IN_PROGRESS: 409,
          ErrorCode.ILLEGAL_GENERATION: 409, ErrorCode.FENCED_INSTANCE_ID: 409, ErrorCode.NOT_COORDINATOR: 409,
          ErrorCode.COORDINATOR_NOT_AVAILABLE: 503, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: 503}
HINTS = {ErrorCode.GROUP_AUTHORIZATION_FAILED: "the signed-in user needs an ACL on the group",
         ErrorCode.TOPIC_AUTHORIZATION_FAILED: "the signed-in user needs an ACL on the topic",
         ErrorCode.NOT_COORDINATOR: "another node coordinates this group: use that node's console",
         ErrorCode.NON_EMPTY_GROUP: "stop its consumers first",
         ErrorCode.UNKNOWN_MEMBER_ID: "no such member: check the instance id in the members table"}


class Problem(Exception):
    def __init__(self, status: int, error: str, hint: str = "") -> None:
        super().__init__(error)
        self.status, self.error, self.hint = status, error, hint

    def response(self) -> Response:
        return json_response(self.status, {"error": self.error, "hint": self.hint})


def kafka_problem(code: int, what: str) -> Problem:
    error = ErrorCode(code)
    return Problem(STATUS.get(error, 400), f"{what}: {error.name}", HINTS.get(error, ""))


class Actions:
    def __init__(self, views: GroupViews, calls: KafkaCalls, topics: Any) -> None:
        self.views = views
        self.calls = calls
        self.topics = topics          # () -> name -> metadata with .partitions (DataDir.topics)

    async def handle(self, actor: Actor, group: str, action: str, body: bytes) -> Response:
        handler = {"reset-offsets": self.reset_offsets, "remove-member": self.remove_member,
                   "delete": self.delete}.get(action)
        if handler is None:
            return Problem(404, f"no action {action!r}", "reset-offsets, remove-member or delete").response()
        return await self.run(lambda args: handler(actor, group, args), body)

    @staticmethod
    async def run(work: Any, body: bytes) -> Response:
        """`work(args)` on the JSON object `body`: its result as JSON, or the Problem it raised."""
        try:
            args = json.loads(body or b"{}")
            if not isinstance(args, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            return Problem(400, f"the body is not a JSON object: {exc}").response()
        try:
            return json_response(200, await work(args))
        except Problem as problem:
            return problem.response()

    # ---- reset offsets ---------------------------------------------------------------------

    async def reset_offsets(self, actor: Actor, group: str, args: dict[str, Any]) -> dict[str, Any]:
        to, value, topic = args.get("to"), args.get("value"), args.get("topic") or None
        if to not in TARGETS:
            raise Problem(400, f"say where to reset to: \"to\" is one of {', '.join(TARGETS)}")
        if to in ("offset", "datetime", "shift") and (not isinstance(value, int) or isinstance(value, bool)):
            raise Problem(400, f"\"to\": {to!r} needs a whole number \"value\"")
        view = self.views.group(group)
        committed = self.views.committed_of(group)
        if view is None and not committed:
            raise Problem(404, f"no group {group!r}")
        if view is not None:
            if view.kind == SHARE.name:
                raise Problem(400, "a share group's start offsets are reset with `kgroup groups reset-offsets`")
            why = reset_refused(group, view.state, len(view.members))
            if why is not None:
                static = [m.instance_id for m in view.members if m.instance_id]
                hint = ("stop its consumers; static members whose processes are gone can be removed below"
                        if static and len(static) == len(view.members) else "stop its consumers and retry")
                raise Problem(409, why, hint)
        if topic is not None:
            meta = self.topics().get(topic)
            if meta is None:
                raise Problem(404, f"no topic {topic!r}")
            keys = [(topic, p) for p in range(meta.partitions)]
        else:
            keys = sorted(committed)
        if not keys:
            raise Problem(400, f"group {group!r} has no committed offsets", "name a topic to reset")
        earliest = await self._list_offsets(actor, keys, EARLIEST)
        latest = await self._list_offsets(actor, keys, LATEST)

        def clamp(tp: tuple[str, int], offset: int) -> int:
            return max(earliest[tp], min(latest[tp], offset))

        if to == "earliest":
            targets = earliest
        elif to == "latest":
            targets = latest
        elif to == "datetime":
            found = await self._list_offsets(actor, keys, value)
            targets = {tp: latest[tp] if off < 0 else off for tp, off in found.items()}
        elif to == "offset":
            targets = {tp: clamp(tp, value) for tp in keys}
        else:
            targets = {tp: clamp(tp, committed.get(tp, latest[tp]) + value) for tp in keys}
        plan = [{"topic": t, "partition": p, "current": committed.get((t, p)), "new": targets[(t, p)]}
                for t, p in keys]
        if args.get("execute") is True:
            await self._commit(actor, group, targets)
        return {"group": group, "plan": plan, "executed": args.get("execute") is True}

    async def _list_offsets(self, actor: Actor, keys: list[tuple[str, int]], timestamp: int) -> dict[tuple[str, int], int]:
        by_topic: dict[str, list[dict[str, int]]] = {}
        for t, p in keys:
            by_topic.setdefault(t, []).append({"partition_index": p, "current_leader_epoch": -1, "timestamp": timestamp})
        response = await self.calls(actor, ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0,
                                    topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
        out = {}
        for t in response.topics:
            for p in t.partitions:
                if int(p.error_code):
                    raise kafka_problem(int(p.error_code), f"listing offsets of {t.name}-{p.partition_index}")
                out[(t.name, p.partition_index)] = p.offset
        return out

    async def _commit(self, actor: Actor, group: str, targets: dict[tuple[str, int], int]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), offset in sorted(targets.items()):
            by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": offset,
                                               "committed_leader_epoch": -1, "committed_metadata": ""})
        # A "simple" consumer's commit (generation -1), as Kafka's tool sends it: the
        # coordinator refuses it on a group that has members.
        response = await self.calls(actor, ApiKey.OFFSET_COMMIT, 8, group_id=group, generation_id_or_member_epoch=-1,
                                    member_id="", group_instance_id=None,
                                    topics=[{"name": t, "partitions": ps} for t, ps in by_topic.items()])
        for t in response.topics:
            for p in t.partitions:
                if int(p.error_code):
                    raise kafka_problem(int(p.error_code), f"committing {t.name}-{p.partition_index}")

    # ---- members and groups ----------------------------------------------------------------

    async def remove_member(self, actor: Actor, group: str, args: dict[str, Any]) -> dict[str, Any]:
        instance = args.get("instance_id")
        if not isinstance(instance, str) or not instance:
            raise Problem(400, "name the static member: \"instance_id\"",
                          "only static members (with a group.instance.id) can be removed, as in Kafka")
        response = await self.calls(actor, ApiKey.LEAVE_GROUP, 5, group_id=group,
                                    members=[{"member_id": "", "group_instance_id": instance, "reason": REASON}])
        if int(response.error_code):
            raise kafka_problem(int(response.error_code), f"removing {instance!r} from {group!r}")
        for m in response.members:
            if int(m.error_code):
                raise kafka_problem(int(m.error_code), f"removing {instance!r} from {group!r}")
        return {"group": group, "removed": instance}

    async def delete(self, actor: Actor, group: str, args: dict[str, Any]) -> dict[str, Any]:
        response = await self.calls(actor, ApiKey.DELETE_GROUPS, 2, groups_names=[group])
        for r in response.results:
            if int(r.error_code):
                raise kafka_problem(int(r.error_code), f"deleting {group!r}")
        return {"group": group, "deleted": True}
