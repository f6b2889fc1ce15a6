"""One entry per API: what the broker serves, and the table it compiles once at start.

How this works: each concern of the broker (data/, groups/, share/, txn/, admin/,
security/) lists the APIs it serves in its own `apis.py`, one `Api` per API: its key, the
versions served, the handler (a method of the concern's service class, e.g.
`GroupApi.join_group`), the authorization guard (None only for the APIs every connection
may use: ApiVersions and the SASL pair), what else the handler takes (the client's host,
the connection's id) and whether serving it may change stored state. The whole list is
`concerns.TABLES`. At start the broker builds each concern's service object and
`compile_apis` binds every entry to it, giving `Routes`: plain dicts and sets keyed by API
key, so serving a request costs the same dictionary lookups it always did.

To serve a new version of an API, change its entry's range in its concern's `apis.py` (and
teach the handler the new fields); to serve a new API, add an entry there. Nothing else
names API numbers: `tests/unit/broker/test_apis.py` fails for an API listed twice, a served
API without a guard, or a bare API number anywhere in broker/. docs/architecture.md walks
through it.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from kgroup.wire.api_keys import ApiKey
from kgroup.wire.api_versions import api_versions_answer
from kgroup.wire.versions import ApiRange

# (access, header, request) -> Refused | Admission: security/authorization.py says how one works.
Guard = Callable[[Any, Any, Any], Any]


class Takes(enum.Enum):
    """What a handler is called with besides the header and the decoded request."""

    REQUEST = "header and request"
    CLIENT_HOST = "and the client's host"   # recorded with a group member (JoinGroup, ...)
    CONNECTION = "and the connection's id"  # share sessions end with their connection
    PEER = "and the connection's Peer"      # who authenticated how (None on the plain path): tokens


Handler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Api:
    """One API the broker serves (see the module comment)."""

    key: ApiKey
    min_version: int
    max_version: int
    handler: Handler
    guard: Guard | None
    edits: bool                       # may change stored state (append to a log, write a file)
    takes: Takes = Takes.REQUEST
    # Where `handler` answers encoded bytes (Fetch, for sendfile): the handler that answers a
    # kio object, for an authorization guard's finish step to edit.
    kio_handler: Handler | None = None
    # Rewrites a response that names brokers at their first listener's address so that it
    # names each at its address on the listener the request came in on (Metadata,
    # FindCoordinator, DescribeCluster): (response, node -> address there, version).
    on_listener: Callable[[Any, dict[int, tuple[str, int]], int], Any] | None = None

    @property
    def range(self) -> ApiRange:
        return ApiRange(self.key, self.min_version, self.max_version)


class ApiVersions:
    """ApiVersions: the served ranges (and, v3+, the feature levels: admin/features.py),
    open to every connection before anything else. `on_software` hears a v3+ client's
    software name and version with its client id and host (KIP-511), for what matches on
    them (KIP-714's client-metrics selectors)."""

    def __init__(self, ranges: Iterable[ApiRange], features: Any = None, cluster_id: str | None = None,
                 node_id: int = -1, on_software: Callable[[str | None, str, str, str], None] | None = None) -> None:
        self.ranges = tuple(ranges)
        self.features = features
        self.cluster_id, self.node_id = cluster_id, node_id
        self.on_software = on_software

    async def api_versions(self, header: Any, request: Any, client_host: str = "") -> Any:
        # (v3+: INVALID_REQUEST when the client software name or version is not Kafka's form;
        # v5: REBOOTSTRAP_REQUIRED when the client meant another cluster or node.)
        answer = api_versions_answer(header.api_version, request, ranges=self.ranges, features=self.features,
                                     cluster_id=self.cluster_id, node_id=self.node_id)
        if self.on_software is not None and header.api_version >= 3 and not int(answer.error_code):
            self.on_software(header.client_id, client_host, request.client_software_name,
                             request.client_software_version)
        return answer


EDGE = (Api(ApiKey.API_VERSIONS, 0, 5, ApiVersions.api_versions, guard=None, edits=False,
            takes=Takes.CLIENT_HOST),)


def served_ranges(tables: Iterable[Iterable[Api]]) -> Mapping[ApiKey, ApiRange]:
    """ApiKey -> the versions served, sorted by key; ValueError for an API listed twice."""
    ranges: dict[ApiKey, ApiRange] = {}
    for table in tables:
        for api in table:
            if api.key in ranges:
                raise ValueError(f"{api.key.kafka_name} is listed twice in the broker's API tables")
            ranges[api.key] = api.range
    return MappingProxyType(dict(sorted(ranges.items())))


@dataclass(frozen=True, slots=True)
class Routes:
    """The compiled tables, read on the request path (server.py, requests.py)."""

    handlers: dict[int, Handler]
    with_client_host: frozenset[int]
    with_connection: frozenset[int]
    with_peer: frozenset[int]
    kio_handlers: dict[int, Handler]
    guards: dict[int, Guard]
    open: frozenset[int]
    on_listener: dict[int, Callable[[Any, dict[int, tuple[str, int]], int], Any]]
    ranges: dict[int, ApiRange]


def compile_apis(tables: Iterable[Iterable[Api]], services: Iterable[object]) -> Routes:
    """Bind every entry's handlers to the service object of its class."""
    apis = [api for table in tables for api in table]
    ranges = served_ranges([apis])
    services = list(services)

    def bind(method: Handler) -> Handler:
        for service in services:
            if getattr(type(service), method.__name__, None) is method:
                return getattr(service, method.__name__)
        raise LookupError(f"no service object serves {method.__qualname__}")

    # Keyed by plain ints: a lookup with the header's int finds an int key faster than an enum one.
    return Routes(
        handlers={int(api.key): bind(api.handler) for api in apis},
        with_client_host=frozenset(int(api.key) for api in apis if api.takes is Takes.CLIENT_HOST),
        with_connection=frozenset(int(api.key) for api in apis if api.takes is Takes.CONNECTION),
        with_peer=frozenset(int(api.key) for api in apis if api.takes is Takes.PEER),
        kio_handlers={int(api.key): bind(api.kio_handler) for api in apis if api.kio_handler is not None},
        guards={int(api.key): api.guard for api in apis if api.guard is not None},
        open=frozenset(int(api.key) for api in apis if api.guard is None),
        on_listener={int(api.key): api.on_listener for api in apis if api.on_listener is not None},
        ranges={int(key): r for key, r in ranges.items()},
    )
