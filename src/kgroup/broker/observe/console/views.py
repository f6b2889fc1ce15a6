"""The JSON the console serves: every group in brief, and one group in full.

`/api/groups` and the live stream's `groups` message:

    {"time_ms": ..., "groups": [{"group", "kind", "protocol_type", "state", "generation",
      "members", "lag", "rebalances", "rebalancing", "last_rebalance"}]}

`/api/groups/{group}` and the stream's `group` message: the group's members (client id,
host, instance id, epoch, partitions, when they joined), each partition's owner, committed
offset, log end and lag, the lag samples kept (`lag_history`), and its last rebalances
(when, why, how long, members, what moved) with the one in progress, if any.

Membership, state and assignments come from the coordinator (group_view.py; a classic
group mid-rebalance shows its members' last known assignments, from the group events);
rebalances from the group events (group_history.py); lag from the logs (lag.py).
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.observe.console.lag import LagTracker
from kgroup.broker.observe.console.telemetry_view import member_metrics
from kgroup.broker.observe.group_history import GroupHistory
from kgroup.broker.observe.group_view import GroupViews
from kgroup.group_types import CLASSIC, EMPTY


def group_list(views: GroupViews, history: GroupHistory, lag: LagTracker, now_ms: int,
               lags: dict[str, dict[tuple[str, int], int]] | None = None) -> dict[str, Any]:
    lags = lag.now() if lags is None else lags
    out = []
    seen = set()
    for s in views.summaries():
        seen.add(s.group_id)
        t = history.groups.get(s.group_id)
        group_lag = lags.get(s.group_id)
        last = t.last_rebalance if t is not None else None
        out.append({
            "group": s.group_id, "kind": s.kind, "protocol_type": s.protocol_type, "state": s.state,
            "generation": s.generation, "members": s.members,
            "lag": sum(group_lag.values()) if group_lag else (0 if group_lag is not None else None),
            "rebalances": t.rebalance_count if t is not None else 0,
            "rebalancing": t is not None and t.open is not None,
            "last_rebalance": last.as_dict() if last is not None else None,
        })
    return {"time_ms": now_ms, "groups": out}


def group_detail(views: GroupViews, history: GroupHistory, lag: LagTracker, group: str,
                 now_ms: int, telemetry: Any = None) -> dict[str, Any] | None:
    t = history.groups.get(group)

    def known(group_id: str, member_id: str):
        info = t.members.get(member_id) if t is not None else None
        return info.partitions if info is not None else ()

    view = views.group(group, known)
    committed = views.committed_of(group)
    if view is None and not committed:
        return None
    members = []
    owners: dict[tuple[str, int], str] = {}
    for m in view.members if view is not None else ():
        info = t.members.get(m.member_id) if t is not None else None
        for tp in m.partitions or ():
            owners[tp] = m.member_id
        members.append({
            "member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id,
            "client_host": m.client_host, "member_epoch": m.member_epoch,
            "partitions": None if m.partitions is None else [list(tp) for tp in m.partitions],
            "joined_ms": info.joined_ms if info is not None else None,
            "away": bool(info is not None and info.away),
            # KIP-714: the member's client's pushed key metrics, if it pushes (telemetry_view.py)
            "telemetry": member_metrics(telemetry, m.client_id, m.client_host or ""),
        })
    offsets = lag.of(committed)
    partitions = []
    for tp in sorted(set(owners) | set(offsets)):
        offset, end, behind = offsets.get(tp, (None, lag.end_offset(*tp), None))
        partitions.append({"topic": tp[0], "partition": tp[1], "owner": owners.get(tp), "committed": offset,
                           "end": end, "lag": behind})
    samples = lag.history.get(group, {})
    return {
        "time_ms": now_ms, "group": group,
        # A group with committed offsets and no members is a classic group (a "simple" one).
        "kind": view.kind if view is not None else CLASSIC.name,
        "protocol_type": view.protocol_type if view is not None else "",
        "protocol": view.protocol if view is not None else "",
        "state": view.state if view is not None else EMPTY,
        "generation": view.generation if view is not None else 0,
        "members": members,
        "partitions": partitions,
        "lag": sum(p["lag"] for p in partitions if p["lag"] is not None),
        "lag_history": {f"{tp[0]}:{tp[1]}": [list(point) for point in points] for tp, points in sorted(samples.items())},
        "rebalances": [r.as_dict() for r in t.rebalances] if t is not None else [],
        "rebalance_in_progress": ({"started_ms": t.open.started_ms, "cause": t.open.cause}
                                  if t is not None and t.open is not None else None),
        "rebalance_count": t.rebalance_count if t is not None else 0,
        "moved_count": t.moved_count if t is not None else 0,
        "dead_letter_topic": views.dead_letter_topic(group),
    }
