"""The client's view of one Kafka cluster: connections, metadata, leaders, coordinators, retries.

How this works: a ``ClusterClient`` starts from a bootstrap list and keeps

- one ``Connection`` per broker address, opened on first use, shared by every request to
  that broker (pipelined) and opened again when it died;
- the metadata it last read: brokers by node id, topics with their partitions, the leader of
  each partition and topic ids. ``metadata()`` reads it afresh from any reachable broker
  (the one used last, then every known broker, then the bootstrap addresses: a broker that
  refuses the connection is passed over); ``leader()`` answers from the cache and reads
  metadata only for a partition it does not know;
- the coordinator of each group it was asked about (FindCoordinator), until told it moved.

Requests are field dicts built for the version both sides speak (``build_request``;
ApiVersions is negotiated by each ``Connection``).

Moves. When a broker answers that a coordinator or a leader is elsewhere, or a broker cannot
be reached, the cache entry that sent the request there is dropped (``recover``) and the
request is sent again after a backoff that doubles from ``retry.backoff.ms`` up to a cap,
until the request's deadline (``retrying``). Which error means what is one table per kind
of route (``recovery``):

    to a group coordinator
      COORDINATOR_LOAD_IN_PROGRESS               the same coordinator, after the backoff
      NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE find the coordinator again (FindCoordinator)
      connection refused, lost or timed out      find the coordinator again
    to a partition leader
      NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION,
      KAFKA_STORAGE_ERROR, FENCED/UNKNOWN_LEADER_EPOCH   read the leaders again (Metadata)
      REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), NETWORK_EXCEPTION
                                                 the same leader, after the backoff
      connection refused, lost or timed out      read the leaders again
    anything else                                not retried: the caller gets the error

A lost connection also drops every leader and coordinator on that broker, so the next
request to any of them routes again. ``call_coordinator`` is a group request with these
retries; admin calls to leaders wrap an attempt in ``retrying``; the consumer's fetcher and
the producer keep their own pipelines and ask ``recover`` what an error means.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kgroup.error_codes import ErrorCode
from kgroup.wire.kio_build import build_request
from kgroup.wire.api_keys import ApiKey
from kgroup.client.versions import CLIENT_APIS

from .connection import DEFAULT_TIMEOUT, Connection, RequestBody
from .security import ClientSecurity
from .errors import BrokerError, KafkaClientError, KafkaConnectionError, RequestTimeout

__all__ = [
    "Backoff",
    "BrokerInfo",
    "ClusterClient",
    "ClusterMetadata",
    "MovedError",
    "PartitionInfo",
    "Recovery",
    "Retries",
    "Route",
    "TopicInfo",
    "build_request",
    "first_partition_error",
    "parse_address",
    "parse_bootstrap",
    "recovery",
    "request_fields",
    "transaction_key",
]

T = TypeVar("T")
E = ErrorCode
# FindCoordinator key types. A coordinator is named by a group id, or by
# ``transaction_key(transactional id)`` for the transaction coordinator.
GROUP_KEY, TRANSACTION_KEY = 0, 1
CoordinatorKey = str | tuple[int, str]


def transaction_key(transactional_id: str) -> tuple[int, str]:
    """The coordinator key of a transactional id (for ``call_coordinator`` and friends)."""
    return (TRANSACTION_KEY, transactional_id)
_ZERO_UUID = uuid.UUID(int=0)
# A topic just auto-created: the errors it is answered with until the broker's metadata has it.
_NOT_YET = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE})
_AUTO_CREATE_BACKOFF = (0.05, 0.1, 0.2, 0.4, 0.8)


# -- addresses ---------------------------------------------------------------------------


def parse_address(text: str, default_port: int = 9092) -> tuple[str, int]:
    """``"host:port"`` (or ``"[v6]:port"``, or ``"host"``) -> (host, port); ValueError."""
    text = text.strip()
    if not text:
        raise ValueError("empty address")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, ""
    if not host:
        raise ValueError(f"address {text!r} has no host")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"address {text!r} has a bad port {port_text!r}")
    return host, int(port_text)


def parse_bootstrap(bootstrap: str | Sequence[str]) -> list[tuple[str, int]]:
    """A comma-separated ``host:port`` list (or a list of them) -> addresses."""
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    addresses = [parse_address(a) for a in items if a.strip()]
    if not addresses:
        raise ValueError("no bootstrap address given")
    return addresses


# -- metadata ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    topic_id: uuid.UUID | None = None
    is_internal: bool = False
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    brokers: tuple[BrokerInfo, ...]
    topics: Mapping[str, TopicInfo]
    controller_id: int = -1
    cluster_id: str | None = None


# -- building requests -------------------------------------------------------------------


def request_fields(**fields: Any) -> Callable[[type], Any]:
    """A request body for ``Connection.request``: built for whichever version it picks."""
    return lambda cls: build_request(cls, **fields)


def first_partition_error(resp: Any) -> int:
    """The first non-zero partition error code of an answer shaped topics[].partitions[]
    (OffsetCommit, TxnOffsetCommit); 0 when there is none."""
    for t in resp.topics:
        for p in t.partitions:
            if int(p.error_code):
                return int(p.error_code)
    return 0


# -- what an error means -----------------------------------------------------------------


class Route(enum.Enum):
    """Where a request went: to a group's coordinator or to a partition's leader."""

    COORDINATOR = "coordinator"
    LEADER = "leader"


class Recovery(enum.Enum):
    """What to do about an error before trying again (FAIL: do not try again)."""

    FAIL = "fail"
    RETRY = "the same broker, after a backoff"
    FIND_COORDINATOR = "find the coordinator again"
    REFRESH_METADATA = "read the partition leaders again"


_RECOVERY: dict[Route, dict[ErrorCode, Recovery]] = {
    Route.COORDINATOR: {
        E.COORDINATOR_LOAD_IN_PROGRESS: Recovery.RETRY,
        E.NOT_COORDINATOR: Recovery.FIND_COORDINATOR,
        E.COORDINATOR_NOT_AVAILABLE: Recovery.FIND_COORDINATOR,
    },
    Route.LEADER: {
        E.NOT_LEADER_OR_FOLLOWER: Recovery.REFRESH_METADATA,
        E.LEADER_NOT_AVAILABLE: Recovery.REFRESH_METADATA,
        E.UNKNOWN_TOPIC_OR_PARTITION: Recovery.REFRESH_METADATA,
        E.KAFKA_STORAGE_ERROR: Recovery.REFRESH_METADATA,
        E.FENCED_LEADER_EPOCH: Recovery.REFRESH_METADATA,
        E.UNKNOWN_LEADER_EPOCH: Recovery.REFRESH_METADATA,
        E.REQUEST_TIMED_OUT: Recovery.RETRY,
        E.NOT_ENOUGH_REPLICAS: Recovery.RETRY,
        E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Recovery.RETRY,
        E.NETWORK_EXCEPTION: Recovery.RETRY,
    },
}
# A broker we could not reach or that did not answer: route again.
_UNREACHABLE = {Route.COORDINATOR: Recovery.FIND_COORDINATOR,
                Route.LEADER: Recovery.REFRESH_METADATA}


def recovery(error: ErrorCode | BaseException, route: Route) -> Recovery:
    """What ``error`` from a request on ``route`` calls for (see the module comment)."""
    if isinstance(error, (KafkaConnectionError, RequestTimeout)):
        return _UNREACHABLE[route]
    if isinstance(error, BrokerError):
        error = error.code
    if not isinstance(error, int):
        return Recovery.FAIL
    return _RECOVERY[route].get(ErrorCode(error), Recovery.FAIL)


class MovedError(BrokerError):
    """A broker answered that what we asked for is (for now) elsewhere or not ready: the
    error ``retrying`` tries again. ``recovery`` says what was done about it."""

    def __init__(self, code: int, recovery: Recovery, context: str = "",
                 message: str | None = None) -> None:
        super().__init__(code, context, message)
        self.recovery = recovery


# -- backoff -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between attempts: ``initial_ms``, doubling, never above ``max_ms``."""

    initial_ms: int = 100
    max_ms: int = 1_000

    def delays(self) -> Iterator[float]:
        """Seconds to wait before each retry, for ever."""
        delay = max(1, self.initial_ms)
        while True:
            yield min(delay, self.max_ms) / 1000
            delay = min(delay * 2, self.max_ms)


class Retries:
    """The retries of one request: the next delay, as long as it ends before the deadline."""

    def __init__(self, backoff: Backoff, timeout: float | None,
                 clock: Callable[[], float]) -> None:
        self._delays = backoff.delays()
        self._clock = clock
        self.deadline = None if timeout is None else clock() + timeout

    def remaining(self) -> float | None:
        """Seconds left before the deadline (None: no deadline)."""
        return None if self.deadline is None else max(0.0, self.deadline - self._clock())

    def next_delay(self) -> float | None:
        """How long to wait before the next attempt; None when that would pass the deadline."""
        delay = next(self._delays)
        if self.deadline is not None and self._clock() + delay >= self.deadline:
            return None
        return delay


# -- the cluster -------------------------------------------------------------------------


OpenConnection = Callable[[str, int, str, float], Awaitable[Connection]]


class ClusterClient:
    """Connections, metadata, leaders and coordinators of one cluster; see the module comment.

    ``security`` (TLS, SASL) applies to every connection. ``open_connection``, ``sleep`` and
    ``clock`` are there for tests (a scripted broker, no
    real waiting).
    """

    def __init__(
        self,
        bootstrap: str | Sequence[str] = "127.0.0.1:9092",
        *,
        client_id: str = "kgroup",
        timeout: float = DEFAULT_TIMEOUT,
        backoff: Backoff = Backoff(),
        open_connection: OpenConnection = Connection.open,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout = timeout
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock
        # TLS and SASL for every connection (client/security.py).
        self._open = (functools.partial(open_connection, security=security)
                      if security is not None else open_connection)
        self._conns: dict[tuple[str, int], Connection] = {}
        self._current: tuple[str, int] | None = None   # the broker asked last for metadata
        self._brokers: dict[int, BrokerInfo] = {}
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._leaders: dict[tuple[str, int], int] = {}
        self._partitions: dict[str, list[int]] = {}    # topic -> partitions in _leaders
        self._coordinators: dict[CoordinatorKey, int] = {}  # group (or transaction key) -> node id

    # -- connections -------------------------------------------------------------------

    async def connection(self, host: str, port: int) -> Connection:
        """The open connection to ``host:port`` (opened now if there is none)."""
        conn = self._conns.get((host, port))
        if conn is None or conn.closed:
            try:
                conn = await self._open(host, port, self.client_id, self.timeout)
            except (KafkaConnectionError, RequestTimeout):
                self._lost((host, port))
                raise
            self._conns[(host, port)] = conn
        return conn

    async def connect(self) -> Connection:
        """Connect to the cluster: a reachable broker of the bootstrap list, from which the
        other brokers are learnt (Metadata) so that any of them can be asked later."""
        conn = await self._any_broker()
        if not self._brokers:
            await self.metadata(topics=())
        return conn

    async def _any_broker(self, *, avoid: tuple[str, int] | None = None) -> Connection:
        """A connection to any reachable broker: the one used last, else each known broker
        and then each bootstrap address in turn (never ``avoid``); KafkaConnectionError
        naming every address tried when none answers."""
        if self._current is not None and self._current != avoid:
            conn = self._conns.get(self._current)
            if conn is not None and not conn.closed:
                return conn
        known = [(b.host, b.port) for _, b in sorted(self._brokers.items())]
        errors: list[str] = []
        for address in dict.fromkeys(known + self.bootstrap):
            if address == avoid:
                continue
            try:
                conn = await self.connection(*address)
            except KafkaConnectionError as exc:
                errors.append(str(exc))
                continue
            self._current = address
            return conn
        raise KafkaConnectionError("; ".join(errors) or "no other broker to ask")

    async def node(self, node_id: int) -> Connection:
        """The connection to broker ``node_id`` (reading metadata if the id is new)."""
        broker = self._brokers.get(node_id)
        if broker is None:
            await self.metadata(topics=())
            broker = self._brokers.get(node_id)
        if broker is None:
            raise KafkaConnectionError(f"broker {node_id} is not in the cluster metadata",
                                       "the cluster is changing; retry")
        return await self.connection(broker.host, broker.port)

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self._brokers.get(node_id)

    async def request(self, conn: Connection, api_key: int, body: RequestBody,
                      **kw: Any) -> Any:
        """``conn.request``; a connection that fails or times out drops every route through
        that broker (its leaders and coordinators) before the error is raised."""
        try:
            return await conn.request(api_key, body, **kw)
        except (KafkaConnectionError, RequestTimeout):
            self._lost((conn.host, conn.port))
            raise

    async def request_any(self, api_key: int, body: RequestBody, **kw: Any) -> Any:
        """A request any broker can answer (Metadata, FindCoordinator): when the broker
        asked cannot be reached or does not answer, another one is asked."""
        conn = await self._any_broker()
        try:
            return await self.request(conn, api_key, body, **kw)
        except (KafkaConnectionError, RequestTimeout) as exc:
            self._current = None
            try:
                other = await self._any_broker(avoid=(conn.host, conn.port))
            except KafkaConnectionError:
                raise exc from None
            return await self.request(other, api_key, body, **kw)

    def _lost(self, address: tuple[str, int]) -> None:
        """``address`` failed: forget the leaders and coordinators on it."""
        nodes = {n for n, b in self._brokers.items() if (b.host, b.port) == address}
        if not nodes:
            return
        for tp in [tp for tp, n in self._leaders.items() if n in nodes]:
            del self._leaders[tp]
        for group in [g for g, n in self._coordinators.items() if n in nodes]:
            del self._coordinators[group]

    async def close(self) -> None:
        """Close every connection (requests still waiting get KafkaConnectionError)."""
        conns, self._conns = list(self._conns.values()), {}
        self._current = None
        for conn in conns:
            await conn.close()

    # -- metadata ----------------------------------------------------------------------

    async def metadata(
        self, topics: Iterable[str] | None = None, *, auto_create: bool = False
    ) -> ClusterMetadata:
        """Brokers and topics read afresh (every topic when ``topics`` is None); the cache of
        brokers, leaders and topic ids is updated from it."""
        names = None if topics is None else [{"name": t} for t in topics]
        resp = await self.request_any(
            ApiKey.METADATA, request_fields(topics=names, allow_auto_topic_creation=auto_create))
        brokers = tuple(BrokerInfo(int(b.node_id), b.host, int(b.port)) for b in resp.brokers)
        self._brokers.update({b.node_id: b for b in brokers})
        infos: dict[str, TopicInfo] = {}
        for t in resp.topics:
            info = _topic_info(t)
            infos[t.name] = info
            self._remember(info)
        return ClusterMetadata(
            brokers=brokers,
            topics=infos,
            controller_id=int(getattr(resp, "controller_id", -1)),
            cluster_id=getattr(resp, "cluster_id", None),
        )

    def _remember(self, info: TopicInfo) -> None:
        for p in self._partitions.pop(info.name, ()):
            self._leaders.pop((info.name, p), None)
        if info.error is not ErrorCode.NONE:
            return
        self._partitions[info.name] = [p.partition for p in info.partitions]
        if info.topic_id is not None:
            self._topic_ids[info.name] = info.topic_id
        for p in info.partitions:
            self._leaders[(info.name, p.partition)] = p.leader

    async def topic(self, name: str, *, auto_create: bool = False) -> TopicInfo:
        """One topic's metadata, read afresh; BrokerError UNKNOWN_TOPIC_OR_PARTITION (or the
        topic's error) when it cannot be used. With `auto_create`, a broker that creates the
        topic answers that request with an error (Kafka's metadata has the topic a moment
        later): asked again a few times, with a short backoff."""
        md = await self.metadata([name], auto_create=auto_create)
        info = md.topics.get(name)
        for backoff in _AUTO_CREATE_BACKOFF if auto_create else ():
            if info is None or info.error not in _NOT_YET:
                break
            await asyncio.sleep(backoff)
            md = await self.metadata([name], auto_create=auto_create)
            info = md.topics.get(name)
        if info is None:
            raise BrokerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r}")
        if info.error is not ErrorCode.NONE:
            raise BrokerError(info.error, f"topic {name!r}")
        return info

    def topic_id(self, name: str) -> uuid.UUID | None:
        """The topic id metadata gave for ``name`` (None: not known, or a broker without ids)."""
        return self._topic_ids.get(name)

    def cached_leader(self, topic: str, partition: int) -> int | None:
        """The leader the cache holds (no I/O; None when unknown)."""
        return self._leaders.get((topic, partition))

    async def leader(self, topic: str, partition: int) -> int:
        """The node id leading ``topic``-``partition``, reading metadata when unknown.

        BrokerError UNKNOWN_TOPIC_OR_PARTITION when metadata has no such partition;
        MovedError LEADER_NOT_AVAILABLE while it has no leader.
        """
        leader = self._leaders.get((topic, partition))
        if leader is None:
            await self.topic(topic)
            leader = self._leaders.get((topic, partition))
            if leader is None:
                raise BrokerError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  f"partition {topic}-{partition}")
        if leader < 0:
            del self._leaders[(topic, partition)]
            raise MovedError(ErrorCode.LEADER_NOT_AVAILABLE, Recovery.REFRESH_METADATA,
                             f"partition {topic}-{partition}")
        return leader

    async def leaders(self, topic: str, partitions: Iterable[int]) -> dict[int, list[int]]:
        """``partitions`` of ``topic`` grouped by their leader's node id."""
        out: dict[int, list[int]] = {}
        for p in partitions:
            out.setdefault(await self.leader(topic, p), []).append(p)
        return out

    def forget_leader(self, topic: str, partition: int) -> None:
        """The leader of this partition moved: the next ``leader()`` reads metadata."""
        self._leaders.pop((topic, partition), None)

    # -- coordinators ------------------------------------------------------------------

    async def find_coordinator(self, group: CoordinatorKey) -> BrokerInfo:
        """The coordinator of ``group`` (cached; FindCoordinator when not known): a group id,
        or ``transaction_key(id)`` for a transactional id's coordinator.

        MovedError COORDINATOR_NOT_AVAILABLE (or another error's BrokerError) when the
        cluster cannot name one yet.
        """
        node = self._coordinators.get(group)
        if node is not None and node in self._brokers:
            return self._brokers[node]
        key_type, key = group if isinstance(group, tuple) else (GROUP_KEY, group)
        resp = await self.request_any(
            ApiKey.FIND_COORDINATOR, request_fields(key=key, key_type=key_type, coordinator_keys=[key]))
        entry = resp.coordinators[0] if hasattr(resp, "coordinators") else resp
        code = int(entry.error_code)
        if code:
            self.check(code, f"find coordinator for group {group!r}", group=group,
                       message=getattr(entry, "error_message", None))
        info = BrokerInfo(int(entry.node_id), entry.host, int(entry.port))
        self._brokers[info.node_id] = info
        self._coordinators[group] = info.node_id
        return info

    async def coordinator(self, group: CoordinatorKey) -> Connection:
        """A connection to the coordinator of ``group`` (found first if not known)."""
        info = await self.find_coordinator(group)
        return await self.connection(info.host, info.port)

    def coordinator_connection(self, group: CoordinatorKey) -> Connection | None:
        """The open connection to the known coordinator of ``group``, if any (no I/O)."""
        node = self._coordinators.get(group)
        broker = None if node is None else self._brokers.get(node)
        conn = None if broker is None else self._conns.get((broker.host, broker.port))
        return conn if conn is not None and not conn.closed else None

    def forget_coordinator(self, group: CoordinatorKey) -> None:
        """The coordinator of ``group`` moved: the next lookup sends FindCoordinator."""
        self._coordinators.pop(group, None)

    # -- moves and retries -------------------------------------------------------------

    def recover(self, error: ErrorCode | BaseException, *, group: CoordinatorKey | None = None,
                partitions: Iterable[tuple[str, int]] = ()) -> Recovery:
        """Drop what ``error`` says is stale (the coordinator of ``group``, the leaders of
        ``partitions``) and say what it calls for (see the module comment)."""
        route = Route.COORDINATOR if group is not None else Route.LEADER
        what = recovery(error, route)
        if what is Recovery.FIND_COORDINATOR and group is not None:
            self.forget_coordinator(group)
        elif what is Recovery.REFRESH_METADATA:
            for topic, partition in partitions:
                self.forget_leader(topic, partition)
        return what

    def check(self, code: int, context: str, *, group: CoordinatorKey | None = None,
              partitions: Iterable[tuple[str, int]] = (), message: str | None = None) -> None:
        """Raise for a non-zero ``code`` of a request to the coordinator of ``group`` (else to
        the leader of ``partitions``): MovedError, after ``recover``, when ``retrying`` is to
        try again; BrokerError otherwise."""
        if not code:
            return
        what = self.recover(ErrorCode(code), group=group, partitions=partitions)
        if what is Recovery.FAIL:
            raise BrokerError(code, context, message)
        raise MovedError(code, what, context, message)

    def retries(self, timeout: float | None = None) -> Retries:
        """Backoff and deadline for one request (``timeout`` seconds; default the request
        timeout)."""
        return Retries(self.backoff, self.timeout if timeout is None else timeout, self.clock)

    async def retrying(self, attempt: Callable[[], Awaitable[T]], *,
                       timeout: float | None = None) -> T:
        """Run ``attempt`` until it returns, trying again after a backoff while it raises
        MovedError or cannot reach a broker, up to ``timeout`` seconds (default: the
        request timeout); then the last error is raised."""
        retries = self.retries(timeout)
        while True:
            try:
                return await attempt()
            except (MovedError, KafkaConnectionError, RequestTimeout):
                delay = retries.next_delay()
                if delay is None:
                    raise
            await self.sleep(delay)

    async def call_coordinator(
        self,
        group: CoordinatorKey,
        api_key: int,
        body: RequestBody,
        *,
        error_of: Callable[[Any], int] = lambda r: int(r.error_code),
        timeout: float | None = None,
        **kw: Any,
    ) -> Any:
        """Send a request to the coordinator of ``group`` and return its answer, following
        the coordinator while it moves or loads (``error_of`` picks the code to judge by).
        A move that outlasts ``timeout`` raises its MovedError; any other error code is
        left in the answer for the caller."""
        name = CLIENT_APIS[api_key].name if api_key in CLIENT_APIS else str(api_key)

        async def attempt() -> Any:
            conn = await self.coordinator(group)
            resp = await self.request(conn, api_key, body, **kw)
            code = int(error_of(resp) or 0)
            if code and recovery(code, Route.COORDINATOR) is not Recovery.FAIL:
                self.check(code, f"{name} to the coordinator of group {group!r}", group=group)
            return resp

        return await self.retrying(attempt, timeout=timeout)


def _topic_info(t: Any) -> TopicInfo:
    topic_id = getattr(t, "topic_id", None)
    parts = tuple(sorted(
        (PartitionInfo(int(p.partition_index), int(p.leader_id),
                       tuple(int(r) for r in p.replica_nodes),
                       tuple(int(r) for r in p.isr_nodes),
                       ErrorCode(int(p.error_code)))
         for p in t.partitions),
        key=lambda p: p.partition))
    return TopicInfo(name=t.name, partitions=parts,
                     topic_id=topic_id if topic_id != _ZERO_UUID else None,
                     is_internal=bool(t.is_internal), error=ErrorCode(int(t.error_code)))
