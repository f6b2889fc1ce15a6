"""Client instances pushing metrics (KIP-714): their subscriptions, push timing and latest values.

How this works (Kafka's ClientMetricsManager, as Kafka 4.4 answers): GetTelemetrySubscriptions
with a zero id gets a new client instance id; the instance's subscription is every configured
subscription (client_metrics_configs.py) whose `match` selects the client: the union of their
metric prefixes (`*` alone if any has it) at the lowest of their intervals, named by a
subscription id derived from both. When the subscriptions change, a client's next request
re-evaluates it (a new subscription id, its timers reset). A Get or Push before the push
interval has passed is THROTTLING_QUOTA_EXCEEDED — except the first push after a Get (the
client's jitter) and a terminating push; after a terminating push the instance takes no more
(INVALID_REQUEST). A push names the current subscription id (else UNKNOWN_SUBSCRIPTION_ID), a
codec Kafka knows (else UNSUPPORTED_COMPRESSION_TYPE) and at most `max_bytes` (else
TELEMETRY_TOO_LARGE); a payload that does not decode is INVALID_RECORD.

State is memory only, bounded: at most `MAX_INSTANCES` instances (least recently used go
first), each forgotten `max(60 s, 3 intervals)` after its last request, and at most
`MAX_POINTS` latest data points kept per instance, `MAX_TOTAL_POINTS` over all. Time is given (`now_ms`), never read.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

import crc32c

from kgroup.broker.observe.client_metrics_configs import ALL_METRICS, DEFAULT_INTERVAL_MS, ClientMetricsConfigs
from kgroup.broker.observe.otlp_metrics import BadPayload, Point, decode
from kgroup.error_codes import ErrorCode

E = ErrorCode
MAX_INSTANCES = 16384
MAX_POINTS = 1000                 # latest values kept per client instance ...
MAX_TOTAL_POINTS = 500_000        # ... and over all of them (a Java consumer pushes a few hundred)
EXPIRY_MS = 60_000
SOFTWARE_KEPT = 16384             # clients' software names remembered (by client id and host)
# Kafka's accepted codecs, in its order: zstd, lz4, gzip, snappy.
ACCEPTED_COMPRESSION = (4, 3, 1, 2)
KNOWN_COMPRESSION = frozenset({0, 1, 2, 3, 4})
TELEMETRY_MAX_BYTES = 1 << 20
# Ids Kafka reserves (Uuid.RESERVED): zero, one (and the metadata topic's, the same one).
RESERVED = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})
# A few metrics shown per group member (the CLI, the console): column -> the Java client's name.
KEY_METRICS = {
    "poll-idle-ratio-avg": "org.apache.kafka.consumer.poll.idle.ratio.avg",
    "commit-latency-avg": "org.apache.kafka.consumer.coordinator.commit.latency.avg",
    "rebalance-total": "org.apache.kafka.consumer.coordinator.rebalance.total",
    "records-lag-max": "org.apache.kafka.consumer.fetch.manager.records.lag.max",
}


class TelemetryRefused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(slots=True)
class ClientInstance:
    instance_id: uuid.UUID
    attributes: dict[str, str | None]
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    interval_ms: int
    last_get_ms: int = 0
    last_push_ms: int = 0
    last_seen_ms: int = 0
    terminating: bool = False
    pushes: int = 0
    last_pushed_ms: int | None = None
    resource: tuple[tuple[str, str], ...] = ()
    latest: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)

    @property
    def client_id(self) -> str | None:
        return self.attributes.get("client_id")

    @property
    def address(self) -> str | None:
        return self.attributes.get("client_source_address")

    def value(self, name: str) -> float | None:
        """The metric's latest value (the point with the fewest attributes: the client's total)."""
        found = [(len(attrs), v) for (n, attrs), v in self.latest.items() if n == name]
        return min(found)[1] if found else None

    def key_metrics(self) -> dict[str, float]:
        return {column: v for column, name in KEY_METRICS.items() if (v := self.value(name)) is not None}


def subscription_id(metrics: tuple[str, ...], interval_ms: int, instance_id: uuid.UUID) -> int:
    """Changes with the metrics and the interval, differs per client (as Kafka's)."""
    crc = crc32c.crc32c(("[" + ", ".join(metrics) + "]" + str(interval_ms)).encode())
    value = (crc ^ (instance_id.int & 0xFFFFFFFF)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class ClientTelemetry:
    """Every client instance this broker knows (see the module comment)."""

    def __init__(self, configs: ClientMetricsConfigs, max_bytes: int = TELEMETRY_MAX_BYTES,
                 new_id=uuid.uuid4) -> None:
        self.configs = configs
        self.max_bytes = max_bytes
        self.new_id = new_id
        self.instances: OrderedDict[uuid.UUID, ClientInstance] = OrderedDict()
        self.points = 0                  # latest values kept, over every instance
        self.bad_payloads = 0
        # (client id, host) -> (software name, version) from ApiVersions v3+ (KIP-511), the
        # most recent SOFTWARE_KEPT: what the software selectors match on.
        self.software: OrderedDict[tuple[str | None, str], tuple[str, str]] = OrderedDict()

    def note_software(self, client_id: str | None, client_host: str, name: str, version: str) -> None:
        """A connection's ApiVersions named its client software (apis.py's ApiVersions)."""
        key = (client_id, client_host)
        self.software[key] = (name, version)
        self.software.move_to_end(key)
        if len(self.software) > SOFTWARE_KEPT:
            self.software.popitem(last=False)

    def software_of(self, client_id: str | None, client_host: str) -> tuple[str | None, str | None]:
        """The software name and version a client with this id and host last gave, or Nones.
        (Kafka reads them from the same connection; two programs of different software
        sharing a client id and a host are told apart here only by which connected last.)"""
        return self.software.get((client_id, client_host), (None, None))

    # ---- the two requests -------------------------------------------------------------

    def get_subscriptions(self, instance_id: uuid.UUID | None, attributes: dict[str, str | None],
                          now_ms: int) -> ClientInstance:
        """GetTelemetrySubscriptions: the instance (new for a zero id), or TelemetryRefused."""
        if instance_id is None or instance_id == uuid.UUID(int=0):
            instance_id = self.new_id()
            while instance_id in self.instances or instance_id in RESERVED:
                instance_id = self.new_id()
        client = self._instance(instance_id, attributes, now_ms)
        if now_ms - max(client.last_get_ms, client.last_push_ms) < client.interval_ms:
            raise TelemetryRefused(E.THROTTLING_QUOTA_EXCEEDED, f"Request from the client [{instance_id}] "
                                   "arrived before the next push interval time")
        client.last_get_ms = now_ms
        return client

    def push(self, instance_id: uuid.UUID | None, subscription: int, terminating: bool, compression: int,
             payload: bytes | None, attributes: dict[str, str | None], now_ms: int) -> ClientInstance:
        """PushTelemetry: checks in Kafka's order, then the payload decoded and kept."""
        if instance_id is None or instance_id in RESERVED:
            raise TelemetryRefused(E.INVALID_REQUEST, f"Invalid request from the client [{instance_id}], "
                                   "invalid client instance id")
        client = self._instance(instance_id, attributes, now_ms)
        try:
            self._check_push(client, subscription, terminating, compression, payload, now_ms)
        finally:
            client.terminating = terminating
        if payload:
            try:
                resource, points = decode(compression, payload)
            except BadPayload as exc:
                self.bad_payloads += 1
                raise TelemetryRefused(E.INVALID_RECORD, str(exc)) from None
            self._keep(client, resource, points, now_ms)
        return client

    def _check_push(self, client: ClientInstance, subscription: int, terminating: bool, compression: int,
                    payload: bytes | None, now_ms: int) -> None:
        who = client.instance_id
        if client.terminating:
            raise TelemetryRefused(E.INVALID_REQUEST, f"Client [{who}] sent the previous request with state "
                                   "terminating to TRUE, can not acceptany requests after that")
        accepted = client.last_get_ms > client.last_push_ms or now_ms - client.last_push_ms >= client.interval_ms
        if accepted:
            client.last_push_ms = now_ms
        elif not terminating:
            raise TelemetryRefused(E.THROTTLING_QUOTA_EXCEEDED, f"Request from the client [{who}] arrived "
                                   "before the next push interval time")
        if subscription != client.subscription_id:
            raise TelemetryRefused(E.UNKNOWN_SUBSCRIPTION_ID, f"Unknown client subscription id for the client [{who}]")
        if compression not in KNOWN_COMPRESSION:
            raise TelemetryRefused(E.UNSUPPORTED_COMPRESSION_TYPE, f"Unknown compression type [{compression}] is "
                                   f"received in telemetry request from [{who}]")
        if payload is not None and len(payload) > self.max_bytes:
            raise TelemetryRefused(E.TELEMETRY_TOO_LARGE, f"Telemetry request from [{who}] is larger than the "
                                   f"maximum allowed size [{self.max_bytes}]")

    # ---- instances ----------------------------------------------------------------------

    def _instance(self, instance_id: uuid.UUID, attributes: dict[str, str | None], now_ms: int) -> ClientInstance:
        self.expire(now_ms)
        client = self.instances.get(instance_id)
        if client is None or client.version < self.configs.version:
            fresh = self._evaluate(instance_id, {**attributes, "client_instance_id": str(instance_id)})
            if client is not None:      # re-evaluated: the values pushed so far stay
                fresh.latest, fresh.resource, fresh.pushes = client.latest, client.resource, client.pushes
                fresh.last_pushed_ms = client.last_pushed_ms
            client = self.instances[instance_id] = fresh
        self.instances.move_to_end(instance_id)
        client.last_seen_ms = now_ms
        while len(self.instances) > MAX_INSTANCES:
            self._forget(next(iter(self.instances)))
        return client

    def _forget(self, instance_id: uuid.UUID) -> None:
        client = self.instances.pop(instance_id)
        self.points -= len(client.latest)

    def _evaluate(self, instance_id: uuid.UUID, attributes: dict[str, str | None]) -> ClientInstance:
        metrics: set[str] = set()
        interval = DEFAULT_INTERVAL_MS
        for sub in self.configs.subscriptions.values():
            if sub.matches(attributes):
                metrics.update(sub.metrics)
                interval = min(interval, sub.interval_ms)
        chosen = (ALL_METRICS,) if ALL_METRICS in metrics else tuple(sorted(metrics))
        return ClientInstance(instance_id, attributes, subscription_id(chosen, interval, instance_id),
                              self.configs.version, chosen, interval)

    def expire(self, now_ms: int) -> None:
        """Forget instances silent past their expiry, from the least recently seen on (the
        scan stops at the first one still live: each request costs only what expired)."""
        while self.instances:
            instance_id, c = next(iter(self.instances.items()))
            if now_ms - c.last_seen_ms <= max(EXPIRY_MS, 3 * c.interval_ms):
                return
            self._forget(instance_id)

    def _keep(self, client: ClientInstance, resource: tuple, points: list[Point], now_ms: int) -> None:
        client.resource = resource or client.resource
        for p in points:
            key = (p.name, p.attributes)
            if key in client.latest:
                client.latest[key] = p.value
            elif len(client.latest) < MAX_POINTS and self.points < MAX_TOTAL_POINTS:
                client.latest[key] = p.value
                self.points += 1
        client.pushes += 1
        client.last_pushed_ms = now_ms

    # ---- what the views read ------------------------------------------------------------

    def pushing(self) -> list[ClientInstance]:
        """Instances that pushed metrics, most recent first."""
        return sorted((c for c in self.instances.values() if c.last_pushed_ms is not None),
                      key=lambda c: -(c.last_pushed_ms or 0))

    def for_member(self, client_id: str, client_host: str) -> ClientInstance | None:
        """The instance that pushed last from this client id and host (a member's client)."""
        host = client_host.lstrip("/")
        for c in self.pushing():
            if c.client_id == client_id and (not host or c.address in (None, host)):
                return c
        return None
