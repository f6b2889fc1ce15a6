"""The console's routes: the page, its assets, /metrics, /api/groups and the live stream.

    GET /                      the web console (static/index.html, console.js, console.css)
    GET /metrics               Prometheus text format (metrics.py)
    GET /api/groups            every group in brief (views.py)
    GET /api/groups/{group}    one group in full; 404 if there is no such group
    GET /api/stream[?group=G]  server-sent events for an open page (live.py)
    GET /api/telemetry         clients pushing metrics (KIP-714; telemetry_view.py)
    GET /api/listeners         the broker's Kafka listeners (so `kgroup` pointed here by mistake
                               can name the right address)
    GET /api/topics            every topic (records.py)
    POST /api/topics/{topic}/records   a partition's records from an offset or a time (records.py)
    POST /api/groups/{group}/{reset-offsets|remove-member|delete}
                               actions (actions.py), as the principal auth.py names, through
                               the broker's request path and ACLs (kafka_calls.py)

The page is from the package's own files: nothing is fetched from elsewhere. Reads come from
the coordinator's groups, the group observer's timelines and the broker's counters, on the
event loop between requests; an action is a Kafka request served by the broker's handlers.
"""

from __future__ import annotations

import json
import time
from importlib import resources
from typing import Any, Callable, Iterable

from kgroup.broker.observe.console import metrics, telemetry_view
from kgroup.broker.http_server import HttpServer, Request, Response, Stream, json_response, text
from kgroup.broker.observe.console.actions import Actions
from kgroup.broker.observe.console.auth import actor_of
from kgroup.broker.observe.console.kafka_calls import KafkaCalls
from kgroup.broker.observe.console.lag import EndOffset, LagTracker
from kgroup.broker.observe.console.live import LiveUpdates
from kgroup.broker.observe.console.records import RecordBrowser
from kgroup.broker.observe.console.views import group_detail, group_list
from kgroup.broker.observe.group_observer import GroupObserver
from kgroup.broker.observe.group_view import GroupViews
from kgroup.broker.observe.request_stats import Buckets, RequestStats

STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/console.js": ("console.js", "text/javascript; charset=utf-8"),
          "/console.css": ("console.css", "text/css; charset=utf-8")}
JSON = "application/json"
GROUPS = "/api/groups/"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Console:
    def __init__(self, views: GroupViews, observer: GroupObserver, request_stats: RequestStats,
                 fsync_seconds: Buckets, end_offset: EndOffset, clock: Callable[[], int] = now_ms,
                 kafka_listeners: Iterable[Any] = (), requests: Any = None, security: Any = None,
                 telemetry: Any = None) -> None:
        self.views = views
        # The clients pushing metrics (KIP-714, observe/client_telemetry.py); None in a unit test's.
        self.telemetry = telemetry
        # The Kafka listeners (broker config Listener objects), for /api/listeners: a CLI
        # pointed at this HTTP port by mistake names the right address from them.
        self.kafka_listeners = tuple({"name": x.name, "protocol": x.protocol, "address": "%s:%d" % x.advertised}
                                     for x in kafka_listeners)
        self.observer = observer
        self.request_stats = request_stats
        self.fsync_seconds = fsync_seconds
        self.clock = clock
        self.lag = LagTracker(views, end_offset)
        self.live = LiveUpdates(self)
        self.registry = metrics.registry_for(self)
        # Actions need the broker's request path (broker/requests.py) and its security; a
        # console without them (a unit test's) stays read-only.
        calls = KafkaCalls(requests) if requests is not None else None
        self.actions = Actions(views, calls, requests.topics) if calls is not None else None
        self.browser = RecordBrowser(calls, requests.topics) if calls is not None else None
        self.security = security
        self.sasl = any(x.sasl for x in kafka_listeners)
        self.http = HttpServer(self.handle, methods=("GET", "HEAD", "POST"))
        folder = resources.files("kgroup.broker.observe.console") / "static"
        self.assets = {path: ((folder / name).read_bytes(), kind) for path, (name, kind) in STATIC.items()}
        observer.listeners.append(self.live.changed)

    async def start(self, host: str, port: int) -> tuple[str, int]:
        bound = await self.http.start(host, port)
        self.lag.sample(self.clock())
        self.live.start()
        return bound

    async def close(self) -> None:
        await self.live.close()
        await self.http.close()

    async def handle(self, request: Request) -> Response | Stream:
        if request.method == "POST":
            return await self.act(request)
        path = request.path
        asset = self.assets.get(path)
        if asset is not None:
            return Response(200, asset[0], asset[1], (("Cache-Control", "no-cache"),))
        if path == "/metrics":
            return Response(200, metrics.render(self.registry), metrics.CONTENT_TYPE)
        if path in ("/api/groups", "/api/groups/"):
            return _json(200, group_list(self.views, self.observer.history, self.lag, self.clock()))
        if path.startswith(GROUPS):
            group = path[len(GROUPS):]
            detail = group_detail(self.views, self.observer.history, self.lag, group, self.clock(), self.telemetry)
            if detail is None:
                return _json(404, {"error": f"no group {group!r}"})
            return _json(200, detail)
        if path == "/api/telemetry":
            if self.telemetry is None:
                return _json(200, {"time_ms": self.clock(), "key_metrics": {}, "clients": []})
            return _json(200, telemetry_view.listing(self.telemetry, self.views, self.clock()))
        if path == "/api/stream":
            group = request.query.get("group") or None
            return Stream(lambda reader, writer: self.live.serve(reader, writer, group))
        if path == "/api/topics" and self.browser is not None:
            return _json(200, self.browser.listing())
        if path == "/api/listeners":
            return _json(200, {"kafka_listeners": list(self.kafka_listeners)})
        if path == "/favicon.ico":
            return Response(204)
        return text(404)


    async def act(self, request: Request) -> Response:
        segments = request.segments
        records = len(segments) == 4 and segments[:2] == ("api", "topics") and segments[3] == "records"
        if not records and (len(segments) != 4 or segments[:2] != ("api", "groups")):
            return json_response(404, {"error": "POST /api/groups/{group}/{action} or /api/topics/{topic}/records"})
        if self.actions is None:
            return json_response(405, {"error": "this console is read-only"})
        actor = actor_of(request, self.security.credentials, self.sasl)
        if isinstance(actor, Response):
            return actor
        if records:
            return await self.actions.run(lambda args: self.browser.records(actor, segments[2], args), request.body)
        return await self.actions.handle(actor, segments[2], segments[3], request.body)


def _json(status: int, data: Any) -> Response:
    return Response(status, json.dumps(data, separators=(",", ":")).encode(), JSON)
