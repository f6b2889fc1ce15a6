"""Dynamic broker configs: the broker settings Kafka lets operators change at run time,
changed over AlterConfigs / IncrementalAlterConfigs on a BROKER resource, durable in the
data dir, and in force without a restart.

How this works. A BROKER resource named with a node id is that node's own configs; the
empty name is the cluster-wide default every node falls back to. The value a node runs with
is the first found of (Kafka's order, and DescribeConfigs' sources): its per-node dynamic
value (DYNAMIC_BROKER_CONFIG), the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), the TOML
file or a flag of `kgroup serve` (STATIC_BROKER_CONFIG), the built-in default
(DEFAULT_CONFIG). Both dynamic levels live in one document in the data dir
(`configs/brokers.json`, a SharedJsonFile: changed under a lock, replaced atomically,
mode 0600 since passwords may be among them) shared by every node of a cluster; a node
re-reads it when it changed (`refresh`, polled by the server twice a second), so a change
made through any node is in force on every node within a second and after any restart.

What may change is Kafka 4.4's own list (`KAFKA_DYNAMIC`, taken from its DescribeConfigs:
the broker configs it does not mark read-only; tests/reference checks the table against
Kafka). kgroup acts on the ones it has (`APPLIED`): message.max.bytes, the log.retention.*,
log.segment.bytes and log.index.interval.bytes defaults of topics, producer.id.expiration.ms,
and the certificate, key and CA of an SSL listener (`listener.name.<listener>.ssl.keystore.
location` — a PEM file holding the certificate chain and the key, as Kafka's PEM keystores
do —, `.ssl.key.password`, `.ssl.truststore.location`), used by the connections accepted
after the change. The others (thread pools, log cleaner, remote storage, SASL/SSL tuning)
are kept and described as set but change nothing: kgroup has no such machinery. Kafka's
refusals are kept with its error code and text: a read-only config (every other broker
config) gets INVALID_REQUEST "Cannot update these configs dynamically: [...]", a security
config without its listener prefix "These security configs can be dynamically updated only
per-listener using the listener prefix: [...]", a per-broker config sent to the cluster
default "Cannot update these configs at default cluster level, broker id must be specified:
[...]", a value of the wrong type "Invalid value ... for configuration ...". kgroup also
refuses `listeners` and `listener.security.protocol.map`, which Kafka can change but kgroup
cannot (its listeners are bound at start), and names that are no Kafka broker config at
all (Kafka would keep those; a typo should not pass silently).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from types import MappingProxyType

from kgroup.broker.admin import broker_configs
from kgroup.broker.config import BrokerConfig, ListenerConfig
from kgroup.broker.data.topic_configs import ConfigType
from kgroup.storage.config import LogConfig
from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile

log = logging.getLogger("kgroup.broker.configs")

BROKERS_FILE = Path("configs") / "brokers.json"
INVALID_REQUEST, INVALID_CONFIG = 42, 40
# DescribeConfigs config sources (Kafka's ConfigSource ids).
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 2, 3, 4, 5
# IncrementalAlterConfigs operations.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


class Scope(Enum):
    """Where a dynamic config may be set (Kafka's DynamicBrokerConfig rules)."""

    CLUSTER = "cluster-wide or per broker"
    BROKER = "per broker"
    LISTENER = "per broker, with the listener prefix"


B, S, I, SH, L, D, LS, C, P = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.SHORT,
                               ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST, ConfigType.CLASS,
                               ConfigType.PASSWORD)
CL, BR, LI = Scope.CLUSTER, Scope.BROKER, Scope.LISTENER

# Kafka 4.4's dynamically updatable broker configs: (name, type, Kafka's default, scope).
KAFKA_DYNAMIC: tuple[tuple[str, ConfigType, str | None, Scope], ...] = (
    ("background.threads", I, "10", CL),
    ("compression.gzip.level", I, "-1", CL),
    ("compression.lz4.level", I, "9", CL),
    ("compression.type", S, "producer", CL),
    ("compression.zstd.level", I, "3", CL),
    ("config.providers", LS, "", CL),
    ("cordoned.log.dirs", LS, "", BR),
    ("errors.deadletterqueue.auto.create.topics.enable", B, "false", CL),
    ("errors.deadletterqueue.topic.name.prefix", S, "dlq.", CL),
    ("follower.fetch.last.tiered.offset.enable", B, "false", CL),
    ("group.consumer.assignment.interval.ms", I, "1000", CL),
    ("group.coordinator.cached.buffer.max.bytes", I, "1048588", CL),
    ("group.share.assignment.interval.ms", I, "1000", CL),
    ("group.streams.assignment.interval.ms", I, "1000", CL),
    ("listener.security.protocol.map", S,
     "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", BR),
    ("listeners", LS, "PLAINTEXT://:9092", BR),
    ("log.cleaner.backoff.ms", L, "15000", CL),
    ("log.cleaner.dedupe.buffer.size", L, "134217728", CL),
    ("log.cleaner.delete.retention.ms", L, "86400000", CL),
    ("log.cleaner.io.buffer.load.factor", D, "0.9", CL),
    ("log.cleaner.io.buffer.size", I, "524288", CL),
    ("log.cleaner.io.max.bytes.per.second", D, "1.7976931348623157E308", CL),
    ("log.cleaner.max.compaction.lag.ms", L, "9223372036854775807", CL),
    ("log.cleaner.min.cleanable.ratio", D, "0.5", CL),
    ("log.cleaner.min.compaction.lag.ms", L, "0", CL),
    ("log.cleaner.threads", I, "1", CL),
    ("log.cleanup.policy", LS, "delete", CL),
    ("log.flush.interval.messages", L, "9223372036854775807", CL),
    ("log.flush.interval.ms", L, None, CL),
    ("log.index.interval.bytes", I, "4096", CL),
    ("log.index.size.max.bytes", I, "10485760", CL),
    ("log.local.retention.bytes", L, "-2", CL),
    ("log.local.retention.ms", L, "-2", CL),
    ("log.message.timestamp.after.max.ms", L, "3600000", CL),
    ("log.message.timestamp.before.max.ms", L, "9223372036854775807", CL),
    ("log.message.timestamp.type", S, "CreateTime", CL),
    ("log.preallocate", B, "false", CL),
    ("log.remote.copy.lag.bytes", L, "-1", CL),
    ("log.remote.copy.lag.ms", L, "0", CL),
    ("log.retention.bytes", L, "-1", CL),
    ("log.retention.ms", L, None, CL),
    ("log.roll.jitter.ms", L, None, CL),
    ("log.roll.ms", L, None, CL),
    ("log.segment.bytes", I, "1073741824", CL),
    ("log.segment.delete.delay.ms", L, "60000", CL),
    ("max.connection.creation.rate", I, "2147483647", CL),
    ("max.connections", I, "2147483647", CL),
    ("max.connections.per.ip", I, "2147483647", CL),
    ("max.connections.per.ip.overrides", S, "", CL),
    ("max.decompressed.message.bytes", I, "2147483639", CL),
    ("message.max.bytes", I, "1048588", CL),
    ("metric.reporters", LS, "org.apache.kafka.common.metrics.JmxReporter", CL),
    ("min.insync.replicas", I, "1", CL),
    ("num.io.threads", I, "8", CL),
    ("num.network.threads", I, "3", CL),
    ("num.recovery.threads.per.data.dir", I, "2", CL),
    ("num.replica.fetchers", I, "1", CL),
    ("principal.builder.class", C, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder", BR),
    ("producer.id.expiration.ms", I, "86400000", CL),
    ("remote.fetch.max.wait.ms", I, "500", CL),
    ("remote.list.offsets.request.timeout.ms", L, "30000", CL),
    ("remote.log.index.file.cache.total.size.bytes", L, "1073741824", CL),
    ("remote.log.manager.copier.thread.pool.size", I, "10", CL),
    ("remote.log.manager.copy.max.bytes.per.second", L, "9223372036854775807", CL),
    ("remote.log.manager.expiration.thread.pool.size", I, "10", CL),
    ("remote.log.manager.fetch.max.bytes.per.second", L, "9223372036854775807", CL),
    ("remote.log.manager.follower.thread.pool.size", I, "2", CL),
    ("remote.log.reader.threads", I, "10", CL),
    ("sasl.enabled.mechanisms", LS, "GSSAPI", BR),
    ("sasl.jaas.config", P, None, BR),
    ("sasl.kerberos.kinit.cmd", S, "/usr/bin/kinit", BR),
    ("sasl.kerberos.min.time.before.relogin", L, "60000", BR),
    ("sasl.kerberos.principal.to.local.rules", LS, "DEFAULT", BR),
    ("sasl.kerberos.service.name", S, None, BR),
    ("sasl.kerberos.ticket.renew.jitter", D, "0.05", BR),
    ("sasl.kerberos.ticket.renew.window.factor", D, "0.8", BR),
    ("sasl.login.refresh.buffer.seconds", SH, "300", BR),
    ("sasl.login.refresh.min.period.seconds", SH, "60", BR),
    ("sasl.login.refresh.window.factor", D, "0.8", BR),
    ("sasl.login.refresh.window.jitter", D, "0.05", BR),
    ("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", BR),
    ("share.coordinator.cached.buffer.max.bytes", I, "1048588", CL),
    ("ssl.cipher.suites", LS, "", BR),
    ("ssl.client.auth", S, "none", BR),
    ("ssl.enabled.protocols", LS, "TLSv1.2,TLSv1.3", BR),
    ("ssl.endpoint.identification.algorithm", S, "https", BR),
    ("ssl.engine.factory.class", C, None, BR),
    ("ssl.key.password", P, None, LI),
    ("ssl.keymanager.algorithm", S, "SunX509", BR),
    ("ssl.keystore.certificate.chain", P, None, LI),
    ("ssl.keystore.key", P, None, LI),
    ("ssl.keystore.location", S, None, LI),
    ("ssl.keystore.password", P, None, LI),
    ("ssl.keystore.type", S, "JKS", LI),
    ("ssl.protocol", S, "TLSv1.3", BR),
    ("ssl.provider", S, None, BR),
    ("ssl.secure.random.implementation", S, None, BR),
    ("ssl.trustmanager.algorithm", S, "PKIX", BR),
    ("ssl.truststore.certificates", P, None, LI),
    ("ssl.truststore.location", S, None, LI),
    ("ssl.truststore.password", P, None, LI),
    ("ssl.truststore.type", S, "JKS", LI),
    ("transaction.partition.verification.enable", B, "true", CL),
    ("unclean.leader.election.enable", B, "false", CL),
)


@dataclass(frozen=True, slots=True)
class Applied:
    """A dynamic config kgroup acts on: where its value goes, and the least it may be."""

    # A BrokerConfig field; "transactions." prefix: a TransactionConfig field; "log." prefix:
    # a LogConfig field with no BrokerConfig twin.
    field: str
    minimum: int


APPLIED: Mapping[str, Applied] = MappingProxyType({
    "message.max.bytes": Applied("max_message_bytes", 1),
    "log.segment.bytes": Applied("log_segment_bytes", 64),
    "log.retention.ms": Applied("log_retention_ms", -1),
    "log.retention.bytes": Applied("log_retention_bytes", -1),
    "log.index.interval.bytes": Applied("log.index_interval_bytes", 0),
    "producer.id.expiration.ms": Applied("transactions.producer_id_expiration_ms", 1),
})
# Listener configs kgroup acts on for an SSL listener: the ListenerConfig field each sets.
LISTENER_APPLIED: Mapping[str, str] = MappingProxyType({
    "ssl.keystore.location": "ssl_certfile", "ssl.key.password": "ssl_keyfile_password",
    "ssl.truststore.location": "ssl_cafile"})
# Kafka may change these; kgroup binds its listeners at start.
NOT_HERE = frozenset({"listeners", "listener.security.protocol.map"})
# Listener configs that may also be set cluster-wide (Kafka's ClusterLevelListenerConfigs).
_CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})
_LISTENER_CONFIG = re.compile(r"^listener\.name\.([^.]+)\.(.+)$")
_RANGES = {ConfigType.INT: (-(2**31), 2**31 - 1), ConfigType.SHORT: (-(2**15), 2**15 - 1),
           ConfigType.LONG: (-(2**63), 2**63 - 1)}


@dataclass(frozen=True, slots=True)
class DynamicDef:
    name: str
    type: ConfigType
    default: str | None
    scope: Scope

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


# Kafka's replication quotas (its DynamicConfig.Broker quota configs): dynamic, though its
# DescribeConfigs does not list them; `kafka-reassign-partitions` sets them with --throttle
# and clears them on --verify. Kept, acting on nothing: kgroup's nodes copy no data.
REPLICATION_QUOTAS: tuple[tuple[str, ConfigType, str | None, Scope], ...] = (
    ("follower.replication.throttled.rate", L, "9223372036854775807", CL),
    ("leader.replication.throttled.rate", L, "9223372036854775807", CL),
    ("replica.alter.log.dirs.io.max.bytes.per.second", L, "9223372036854775807", CL),
)

DYNAMIC: Mapping[str, DynamicDef] = MappingProxyType({row[0]: DynamicDef(*row)
                                                      for row in KAFKA_DYNAMIC + REPLICATION_QUOTAS})


class ConfigRefused(Exception):
    """A resource's change is refused: Kafka's error code and text."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def definition(name: str) -> DynamicDef | None:
    """The dynamic config `name` is (a listener-prefixed one: its base config's, per broker)."""
    found = DYNAMIC.get(name)
    if found is not None:
        return found
    m = _LISTENER_CONFIG.match(name)
    if m is None:
        return None
    base = DYNAMIC.get(m.group(2))
    if base is None or base.scope is Scope.CLUSTER and base.name not in _CLUSTER_LEVEL_LISTENER:
        return None
    scope = Scope.CLUSTER if base.name in _CLUSTER_LEVEL_LISTENER else Scope.BROKER
    return DynamicDef(name, base.type, base.default, scope)


def check_value(d: DynamicDef, value: str) -> str:
    """`value` as kept for `d`; ConfigRefused (Kafka's words) if it is not one of its type."""
    text = value.strip()
    kind = d.type.name
    if d.type in _RANGES:
        try:
            number = int(text)
        except ValueError:
            raise ConfigRefused(INVALID_REQUEST, f"Invalid value {value} for configuration {d.name}: "
                                           f"Not a number of type {kind}") from None
        lo, hi = _RANGES[d.type]
        applied = APPLIED.get(d.name)
        if not lo <= number <= hi:
            raise ConfigRefused(INVALID_REQUEST, f"Invalid value {value} for configuration {d.name}: "
                                           f"Not a number of type {kind}")
        if applied is not None and number < applied.minimum:
            raise ConfigRefused(INVALID_REQUEST, f"Invalid value {value} for configuration {d.name}: "
                                           f"Value must be at least {applied.minimum}")
        return str(number)
    if d.type is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ConfigRefused(INVALID_REQUEST, f"Invalid value {value} for configuration {d.name}: "
                                           "Expected value to be either true or false")
        return text.lower()
    if d.type is ConfigType.DOUBLE:
        try:
            float(text)
        except ValueError:
            raise ConfigRefused(INVALID_REQUEST, f"Invalid value {value} for configuration {d.name}: "
                                           "Not a number of type DOUBLE") from None
        return text
    if d.type is ConfigType.LIST:
        return ",".join(i.strip() for i in text.split(",") if i.strip())
    return value


@dataclass(frozen=True, slots=True)
class DescribedConfig:
    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    type: ConfigType
    # (name, value, source) from the value in force down to the default.
    synonyms: tuple[tuple[str, str | None, int], ...]


class DynamicBrokerConfigs:
    """The dynamic configs of the cluster and of this node over the static settings (see the
    module comment); `effective` is the BrokerConfig this node runs with."""

    def __init__(self, static: BrokerConfig, data_dir: str | Path,
                 on_change: Callable[[DynamicBrokerConfigs], None] | None = None) -> None:
        self.static = static
        self.node = str(static.node_id)
        self.file = SharedJsonFile(Path(data_dir) / BROKERS_FILE, mode=0o600)
        self.on_change = on_change
        self.cluster_values: dict[str, str] = {}
        self.node_values: dict[str, str] = {}
        self.effective = static
        self.log_config = LogConfig(segment_bytes=static.log_segment_bytes,
                                    retention_bytes=static.log_retention_bytes, retention_ms=static.log_retention_ms)
        self.listeners: dict[str, ListenerConfig] = {lst.name: lst for lst in static.listeners_to_open}
        # Setting -> whether its static value is the built-in default.
        self._static_defaults = {row.name: row.is_default for row in broker_configs.describe(static)}
        self._load(self.file.read())

    # ---- reading --------------------------------------------------------------------------

    def refresh(self) -> bool:
        """Re-read the document if another node (or this one) changed it; True if it did."""
        if not self.file.changed():
            return False
        self._load(self.file.read())
        return True

    def _load(self, doc: dict) -> None:
        try:
            if doc and doc.get("version") != 1:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            cluster = {str(k): str(v) for k, v in dict(doc.get("default", {})).items()}
            node = {str(k): str(v) for k, v in dict(doc.get("nodes", {}).get(self.node, {})).items()}
        except (TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(f"cannot read dynamic broker configs {self.file.path}: {exc}") from exc
        if (cluster, node) == (self.cluster_values, self.node_values) and doc:
            return
        self.cluster_values, self.node_values = cluster, node
        self._recompute()
        if self.on_change is not None:
            self.on_change(self)

    def value_of(self, name: str) -> tuple[str, int] | None:
        """(dynamic value, source) of `name`, or None if neither level sets it."""
        if name in self.node_values:
            return self.node_values[name], DYNAMIC_BROKER_CONFIG
        if name in self.cluster_values:
            return self.cluster_values[name], DYNAMIC_DEFAULT_BROKER_CONFIG
        return None

    def _recompute(self) -> None:
        """The effective BrokerConfig, the topics' default LogConfig and the SSL listeners."""
        static = self.static
        broker: dict = {}
        txn: dict = {}
        log_fields = {"segment_bytes": static.log_segment_bytes, "retention_bytes": static.log_retention_bytes,
                      "retention_ms": static.log_retention_ms}
        for name, applied in APPLIED.items():
            found = self.value_of(name)
            if found is None:
                continue
            value = int(found[0])
            if applied.field.startswith("transactions."):
                txn[applied.field.removeprefix("transactions.")] = value
            elif applied.field.startswith("log."):
                log_fields[applied.field.removeprefix("log.")] = value
            else:
                broker[applied.field] = value
        if txn:
            broker["transactions"] = dataclasses.replace(static.transactions, **txn)
        try:
            effective = dataclasses.replace(static, **broker)
        except ValueError as exc:       # a value kgroup cannot run with: keep the previous one
            log.error("dynamic broker configs not applied: %s", exc)
            return
        for key in ("segment_bytes", "retention_bytes", "retention_ms"):
            log_fields[key] = getattr(effective, f"log_{key}")
        self.effective = effective
        self.log_config = LogConfig(**log_fields)
        listeners = {}
        for lst in static.listeners_to_open:
            try:
                listeners[lst.name] = self._listener(lst)
            except ValueError as exc:
                log.error("listener %s keeps its files: its dynamic configs do not fit it: %s", lst.name, exc)
                listeners[lst.name] = lst
        self.listeners = listeners

    def _listener(self, listener: ListenerConfig, values: Mapping[str, str] | None = None) -> ListenerConfig:
        """`listener` with the SSL files its dynamic listener configs name (per broker)."""
        values = self.node_values if values is None else values
        if not listener.ssl:
            return listener
        prefix = f"listener.name.{listener.name.lower()}."
        changes = {field: values[prefix + name] for name, field in LISTENER_APPLIED.items() if prefix + name in values}
        if "ssl_certfile" in changes:
            changes["ssl_keyfile"] = changes["ssl_certfile"]     # a PEM keystore: chain and key
        return dataclasses.replace(listener, **changes) if changes else listener

    # ---- AlterConfigs / IncrementalAlterConfigs -------------------------------------------

    def check_resource(self, name: str, altering: bool) -> None:
        """The resource names this node or the cluster default (Kafka's words if not)."""
        if name == "":
            return
        if not name.lstrip("-").isdigit():
            raise ConfigRefused(INVALID_REQUEST, f"{'Node' if altering else 'Broker'} id must be an integer, "
                                           f"but it is: {name}")
        if name != self.node:
            expected = self.node if altering else f"{self.node} or empty string"
            raise ConfigRefused(INVALID_REQUEST, f"Unexpected broker id, expected {expected}, but received {name}")

    def alter(self, resource: str, changes: tuple[tuple[str, int, str | None], ...], incremental: bool,
              validate_only: bool) -> None:
        """Apply (name, op, value) changes to a resource's dynamic configs (AlterConfigs:
        the SET ones replace them all); ConfigRefused with Kafka's code and text."""
        self.check_resource(resource, altering=True)
        try:
            self._alter(resource, changes, incremental, validate_only)
        except _Unchanged:
            pass

    def _alter(self, resource: str, changes: tuple[tuple[str, int, str | None], ...], incremental: bool,
               validate_only: bool) -> None:
        per_broker = resource != ""
        # 1. Kafka's refusals, each naming every config it applies to.
        named = [name for name, _, _ in changes]
        fixed = [n for n in named if (definition(n) is None or n in NOT_HERE)]
        if fixed:
            raise ConfigRefused(INVALID_REQUEST, f"Cannot update these configs dynamically: [{', '.join(fixed)}]")
        unprefixed = [n for n in named if DYNAMIC.get(n) is not None and DYNAMIC[n].scope is Scope.LISTENER]
        if unprefixed:
            raise ConfigRefused(INVALID_REQUEST, "These security configs can be dynamically updated only per-listener "
                                           f"using the listener prefix: [{', '.join(unprefixed)}]")
        # 2. The new values, each of its type.
        with self.file.changing() as doc:
            current = self._level(doc, resource)
            updated = dict(current) if incremental else {}
            for name, op, value in changes:
                d = definition(name)
                if op == SET:
                    if value is None:
                        raise ConfigRefused(INVALID_REQUEST, f"Null value not supported for : {name}")
                    updated[name] = check_value(d, value)
                elif op == DELETE:
                    updated.pop(name, None)
                elif op in (APPEND, SUBTRACT):
                    if d.type is not ConfigType.LIST:
                        word = "append" if op == APPEND else "subtract"
                        raise ConfigRefused(INVALID_CONFIG, f"Config value {word} is not allowed for config key: {name}")
                    items = [i for i in (updated.get(name) or self._inherited(name, per_broker) or "").split(",") if i]
                    given = [i for i in check_value(d, value or "").split(",") if i]
                    items = (items + [i for i in given if i not in items] if op == APPEND
                             else [i for i in items if i not in given])
                    updated[name] = ",".join(items)
                else:
                    raise ConfigRefused(INVALID_REQUEST, f"unknown config operation {op}")
            # 3. Per-broker configs are not for the cluster default.
            if not per_broker:
                only_here = [n for n, op, _ in changes if op != DELETE and definition(n).scope is not Scope.CLUSTER]
                if only_here:
                    raise ConfigRefused(INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id "
                                                   f"must be specified: [{', '.join(only_here)}]")
            self._check_runnable(resource, updated)
            if validate_only or updated == current:
                raise _Unchanged()           # nothing is written
            self._set_level(doc, resource, updated)
            snapshot = dict(doc)
        self._load(snapshot)
        log.info("dynamic broker configs of %s now %s", f"node {resource}" if per_broker else "the cluster",
                 {k: ("<hidden>" if definition(k).sensitive else v) for k, v in sorted(updated.items())})

    def _inherited(self, name: str, per_broker: bool) -> str | None:
        """What `name` is below the level being changed (for APPEND/SUBTRACT)."""
        if per_broker and name in self.cluster_values:
            return self.cluster_values[name]
        d = definition(name)
        return None if d is None else d.default

    def _check_runnable(self, resource: str, updated: Mapping[str, str]) -> None:
        """Values kgroup could not run with are refused before they are stored: a
        BrokerConfig or an SSL listener they would break."""
        cluster = updated if resource == "" else self.cluster_values
        node = updated if resource != "" else self.node_values
        broker: dict = {}
        for name, applied in APPLIED.items():
            raw = node.get(name, cluster.get(name))
            if raw is not None and not applied.field.startswith(("log.", "transactions.")):
                broker[applied.field] = int(raw)
        try:
            dataclasses.replace(self.static, **broker)
        except ValueError as exc:
            raise ConfigRefused(INVALID_REQUEST, str(exc)) from None
        if resource == "":
            return
        from kgroup.broker.security.listeners import server_ssl_context  # noqa: PLC0415 (ssl only when asked)

        for listener in self.static.listeners_to_open:
            try:
                changed = self._listener(listener, updated)
                if changed is not listener and changed != self.listeners.get(listener.name):
                    server_ssl_context(changed)
            except ValueError as exc:
                raise ConfigRefused(INVALID_REQUEST, f"Validation of dynamic config update of SSLFactory failed: "
                                               f"{exc}") from None

    @staticmethod
    def _level(doc: dict, resource: str) -> dict[str, str]:
        if resource == "":
            return dict(doc.get("default", {}))
        return dict(doc.get("nodes", {}).get(resource, {}))

    @staticmethod
    def _set_level(doc: dict, resource: str, values: dict[str, str]) -> None:
        doc["version"] = 1
        if resource == "":
            doc["default"] = values
        else:
            nodes = doc.setdefault("nodes", {})
            if values:
                nodes[resource] = values
            else:
                nodes.pop(resource, None)

    # ---- DescribeConfigs ------------------------------------------------------------------

    def describe(self, resource: str) -> list[DescribedConfig]:
        """The cluster default (""): the configs set there. A node: every setting of the
        broker with its value in force, source and synonyms, and every dynamic config set."""
        self.check_resource(resource, altering=False)
        if resource == "":
            return [self._described(name, ((name, value, DYNAMIC_DEFAULT_BROKER_CONFIG),))
                    for name, value in sorted(self.cluster_values.items())]
        out = []
        shown = set()
        for row in broker_configs.describe(self.static):
            chain = self._dynamic_chain(row.name) + (
                (row.name, row.value, DEFAULT_CONFIG if row.is_default else STATIC_BROKER_CONFIG),)
            out.append(self._described(row.name, chain, row.type))
            shown.add(row.name)
        for name in sorted({*self.node_values, *self.cluster_values} - shown):
            d = definition(name)
            default = () if d is None or d.default is None else ((name, d.default, DEFAULT_CONFIG),)
            out.append(self._described(name, self._dynamic_chain(name) + default))
        return out

    def chain_of(self, name: str, value: str) -> tuple[tuple[str, str | None, int], ...]:
        """The synonyms of broker setting `name` whose static value is `value`, from the one
        in force down (what a topic config falls back to)."""
        source = STATIC_BROKER_CONFIG if self._static_defaults.get(name) is False else DEFAULT_CONFIG
        return self._dynamic_chain(name) + ((name, value, source),)

    def _dynamic_chain(self, name: str) -> tuple[tuple[str, str | None, int], ...]:
        chain = []
        if name in self.node_values:
            chain.append((name, self.node_values[name], DYNAMIC_BROKER_CONFIG))
        if name in self.cluster_values:
            chain.append((name, self.cluster_values[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
        return tuple(chain)

    def _described(self, name: str, chain: tuple[tuple[str, str | None, int], ...],
                   kind: ConfigType | None = None) -> DescribedConfig:
        d = definition(name)
        kind = kind if kind is not None else d.type if d is not None else ConfigType.STRING
        sensitive = d is not None and d.sensitive
        if sensitive:
            chain = tuple((n, None, s) for n, _, s in chain)
        read_only = d is None or name in NOT_HERE
        return DescribedConfig(name, chain[0][1], chain[0][2], read_only, sensitive, kind, chain)


class _Unchanged(Exception):
    """validate_only, or nothing to change: leave the document as it is."""
