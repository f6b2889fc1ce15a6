"""Client telemetry (KIP-714) as the console, `/api/telemetry` and `/metrics` show it.

Each client instance that pushed metrics is tied to a group member when the member's client
id and host are the instance's (Kafka's member descriptions carry no client instance id);
`members_by_client` gives each (client id, host) its instance once per view.

    GET /api/telemetry     every pushing client: its instance id, client id, address, the
                           group and member it is, its key metrics and its latest values
                           (at most `MAX_VALUES` per client, by name)
"""

from __future__ import annotations

from typing import Any

from kgroup.broker.observe.client_telemetry import KEY_METRICS, ClientInstance, ClientTelemetry

MAX_VALUES = 200
# /metrics labels each key metric per client; at most this many clients (most recent pushes first).
MAX_SERIES_CLIENTS = 100


def members(views: Any) -> dict[tuple[str, str], tuple[str, str]]:
    """(client id, host without "/") -> (group, member id), over every group's members."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for s in views.summaries():
        view = views.group(s.group_id, lambda g, m: ())
        for m in view.members if view is not None else ():
            out.setdefault((m.client_id, (m.client_host or "").lstrip("/")), (s.group_id, m.member_id))
    return out


def member_of(client: ClientInstance, by_client: dict[tuple[str, str], tuple[str, str]]) -> tuple[str, str] | None:
    return by_client.get((client.client_id or "", client.address or ""))


def client_row(client: ClientInstance, by_client: dict, values: bool = True) -> dict[str, Any]:
    member = member_of(client, by_client)
    row = {"client_instance_id": str(client.instance_id), "client_id": client.client_id,
           "address": client.address, "group": member[0] if member else None,
           "member_id": member[1] if member else None, "pushes": client.pushes,
           "last_push_ms": client.last_pushed_ms, "subscribed": list(client.metrics),
           "interval_ms": client.interval_ms, "key_metrics": client.key_metrics()}
    if values:
        latest: dict[str, float] = {}
        for (name, attrs), v in sorted(client.latest.items(), key=lambda kv: (kv[0][0], len(kv[0][1]))):
            if name not in latest and len(latest) < MAX_VALUES:
                latest[name] = v
        row["metrics"] = latest
    return row


def listing(telemetry: ClientTelemetry, views: Any, now_ms: int) -> dict[str, Any]:
    telemetry.expire(now_ms)
    by_client = members(views)
    return {"time_ms": now_ms, "key_metrics": dict(KEY_METRICS),
            "clients": [client_row(c, by_client) for c in telemetry.pushing()]}


def member_metrics(telemetry: ClientTelemetry | None, client_id: str, client_host: str) -> dict[str, Any] | None:
    """The member's client's instance id and key metrics, if it pushes."""
    if telemetry is None:
        return None
    client = telemetry.for_member(client_id, client_host)
    if client is None:
        return None
    return {"client_instance_id": str(client.instance_id), "key_metrics": client.key_metrics(),
            "last_push_ms": client.last_pushed_ms}
