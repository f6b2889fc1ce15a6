"""Broker settings: flags, a TOML file, and the Kafka property names they mirror."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgroup.assignors.registry import UnknownAssignor, get_server_assignor
from kgroup.core.config import GroupConfig
from kgroup.core.group_configs import KINDS, PAIRS
from kgroup.core.transactions.config import TransactionConfig
from kgroup.plugins import load_assignor_plugins
from kgroup.toml_values import toml_value as toml_text
from kgroup.wire import DEFAULT_MAX_FRAME_SIZE


class ConfigError(ValueError):
    """A setting is wrong; the message says which and how to fix it."""


# ---- the TOML keys ------------------------------------------------------------------------
#
# Every key of the broker's TOML file, with its type and its range: one table.
#
# The loader below walks it to read a file (a value of the wrong type or out of range is
# refused with the key as the user wrote it: `kgroup.toml: [group] min_session_timeout_ms =
# -5: must be >= 1`), to name the known keys of a table when one is unknown, and to check the
# flags that mirror keys. `RELATIONS` are the orderings between keys (a min below its max, a
# heartbeat below its session timeout); the key the user gave is the one blamed. The tests
# walk the config dataclasses against this table (a field with no key here, or a key with no
# range, fails) and the README's Configuration table against it (every key documented).

INT32 = 2 ** 31 - 1
INT64 = 2 ** 63 - 1

LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CLIENT_AUTH = ("none", "requested", "required")
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True)
class Key:
    """One TOML key. `kind`: int (within low..high), bool, str (non-empty when low is 1),
    choice (one of `choices`; `fold`: in any case), names (a list of strings: each one of
    `choices` or matching `pattern` when given, at least `low` of them), address
    (HOST:PORT), fsync (always | never | interval:MS) or cluster (ID=HOST:PORT,...)."""

    table: str            # "" (top level), "group", "log", "transactions", "auth", "listeners"
    name: str
    kind: str
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    fold: bool = False
    pattern: str | None = None
    what: str = ""        # how a name of a `pattern` list looks, for the message

    @property
    def where(self) -> str:
        """The key as a user writes it: `name`, `[group] name`, `[[listeners]] name`."""
        if not self.table:
            return self.name
        return f"[[{self.table}]] {self.name}" if self.table == "listeners" else f"[{self.table}] {self.name}"

    def problem(self, value: Any) -> str | None:
        """What is wrong with `value` (already of the key's type), as "must be ...", or None."""
        if self.kind == "int":
            if self.low is not None and value < self.low:
                return f"must be >= {self.low}"
            if self.high is not None and value > self.high:
                return f"must be <= {self.high}"
        elif self.kind == "str":
            if self.low and not value.strip():
                return "must not be empty"
        elif self.kind == "choice":
            if (value.upper() if self.fold else value) not in self.choices:
                return f"must be one of {', '.join(self.choices)}"
        elif self.kind == "names":
            if self.low and len(value) < self.low:
                return f"must name at least {self.low}"
            for name in value:
                if self.choices and name not in self.choices:
                    return f"{name!r} is not one of {', '.join(self.choices)}"
                if self.pattern and not re.fullmatch(self.pattern, name):
                    return f"{name!r} must look like {self.what}"
        elif self.kind == "address":
            host, sep, port = value.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                return "must look like HOST:PORT (for example 127.0.0.1:9092), with a port from 1 to 65535"
        elif self.kind == "fsync":
            from kgroup.storage.config import FsyncPolicy, StorageConfigError  # noqa: PLC0415
            try:
                FsyncPolicy.parse(value)
            except StorageConfigError:
                return 'must be "always", "never" or "interval:MS" (MS >= 1)'
        return None


@dataclass(frozen=True)
class Relation:
    """`low` must stay at or below `high` (below, when `strict`), both keys of `table`."""

    table: str
    low: str
    high: str
    strict: bool = False


def _ints(table: str, low: int, high: int, *names: str) -> list[Key]:
    return [Key(table, name, "int", low, high) for name in names]


_TOP = [
    Key("", "listen", "address"), Key("", "advertised", "address"),
    Key("", "http_listen", "address"), Key("", "control_listen", "address"),
    Key("", "data_dir", "str", low=1), Key("", "cluster_id", "str", low=1),
    Key("", "cluster", "cluster"), Key("", "fsync", "fsync"),
    Key("", "auto_create_topics", "bool"), Key("", "group_events", "bool"),
    Key("", "dlq_auto_create_topics", "bool"), Key("", "dlq_topic_name_prefix", "str"),
    *_ints("", 0, INT32, "node_id"),
    *_ints("", 100, INT32, "node_timeout_ms"),
    *_ints("", 1, INT32, "metadata_partitions", "max_request_bytes", "default_partitions", "log_segment_bytes",
           "max_message_bytes"),
    *_ints("", -1, INT64, "log_retention_ms", "log_retention_bytes"),
    *_ints("", 1, INT64, "log_retention_check_interval_ms"),
    # The listener and credentials of this node's own requests to the other nodes (issue 32).
    Key("", "inter_node_listener", "str", low=1),
    Key("", "inter_node_sasl_mechanism", "choice", choices=SASL_MECHANISMS),
    Key("", "inter_node_username", "str", low=1), Key("", "inter_node_password", "str"),
    Key("", "inter_node_ssl_cafile", "str", low=1), Key("", "inter_node_ssl_certfile", "str", low=1),
    Key("", "inter_node_ssl_keyfile", "str", low=1),
]

# Group-kind configs (consumer_*, share_*, streams_*) that may be 0, with their min and max.
_ZERO_OK = {"streams_num_standby_replicas", "streams_num_warmup_replicas", "streams_acceptable_recovery_lag",
            "streams_initial_rebalance_delay_ms", "streams_assignment_interval_ms",
            # KIP-1263: 0 computes a target assignment at every change (Kafka's min is 0)
            "consumer_assignment_interval_ms", "share_assignment_interval_ms"}


def _kind_keys() -> tuple[list[Key], list[Relation]]:
    """Every group kind's [group] keys from its configs (core/group_configs.py): the
    broker default, its min and its max, each within the config's type, min <= value <= max."""
    keys, relations = [], []
    for configs in KINDS:
        for d in configs:
            key = d.name.replace(".", "_")
            if d.plain:
                continue                # no broker setting (Kafka has none either)
            if d.choices:
                keys.append(Key("group", key, "choice", choices=d.choices))
                continue
            kind = d.name.split(".", 1)[0]
            low_key, high_key = (key.replace(f"{kind}_", f"{kind}_{m}_", 1) for m in ("min", "max"))
            floor = 0 if key in _ZERO_OK else 1
            keys += _ints("group", floor, INT64 if d.long else INT32, low_key, key, high_key)
            relations += [Relation("group", low_key, key), Relation("group", key, high_key)]
    for session, heartbeat in PAIRS:
        relations.append(Relation("group", heartbeat.replace(".", "_"), session.replace(".", "_"), strict=True))
    return keys, relations


_KIND_KEYS, _KIND_RELATIONS = _kind_keys()

_GROUP = [
    *_ints("group", 1, INT32, "min_session_timeout_ms", "max_session_timeout_ms", "max_group_size",
           "consumer_max_size", "share_max_size", "streams_max_size"),
    *_ints("group", 0, INT32, "initial_rebalance_delay_ms", "offset_metadata_max_bytes"),
    *_ints("group", 1, INT64, "offsets_retention_ms", "offsets_retention_check_interval_ms"),
    Key("group", "consumer_assignors", "names", low=1),
    Key("group", "consumer_migration_policy", "choice", choices=MIGRATION_POLICIES),
    Key("group", "streams_assign_warmups", "bool"),
    *_KIND_KEYS,
]

_LOG = [
    Key("log", "format", "choice", choices=LOG_FORMATS),
    Key("log", "level", "choice", choices=LOG_LEVELS, fold=True),
    *_ints("log", 1, INT32, "rebalance_warn_count", "fenced_warn_count"),
    *_ints("log", 1, INT64, "rebalance_warn_window_ms"),
]

_TRANSACTIONS = _ints("transactions", 1, INT32, "max_timeout_ms", "id_expiration_ms",
                      "id_expiration_check_interval_ms", "producer_id_expiration_ms")

_AUTH = [
    Key("auth", "authorizer", "bool"), Key("auth", "allow_everyone_if_no_acl", "bool"),
    Key("auth", "super_users", "names", pattern=r"[^:]+:.+", what="User:NAME"),
    *_ints("auth", 0, INT64, "connections_max_reauth_ms"),
    Key("auth", "delegation_token_secret_key", "str", low=1),
    *_ints("auth", 1, INT64, "delegation_token_max_lifetime_ms", "delegation_token_expiry_time_ms"),
]

_LISTENERS = [
    Key("listeners", "name", "str", low=1), Key("listeners", "address", "address"),
    Key("listeners", "advertised", "address"),
    Key("listeners", "protocol", "choice", choices=SECURITY_PROTOCOLS),
    Key("listeners", "sasl_mechanisms", "names", choices=SASL_MECHANISMS),
    Key("listeners", "ssl_certfile", "str", low=1), Key("listeners", "ssl_keyfile", "str", low=1),
    Key("listeners", "ssl_keyfile_password", "str"), Key("listeners", "ssl_cafile", "str", low=1),
    Key("listeners", "ssl_client_auth", "choice", choices=CLIENT_AUTH),
]

KEYS: dict[tuple[str, str], Key] = {(k.table, k.name): k
                                    for k in (*_TOP, *_GROUP, *_LOG, *_TRANSACTIONS, *_AUTH, *_LISTENERS)}

RELATIONS: tuple[Relation, ...] = (Relation("group", "min_session_timeout_ms", "max_session_timeout_ms"),
                                   *_KIND_RELATIONS)

# Tables of the file, by the name they have at the top level.
TABLES = ("group", "log", "transactions", "auth", "listeners")

# Config fields that are no key of their own: field -> the key (or table) that sets it.
FIELDS_BEHIND_KEYS: dict[tuple[str, str], str] = {
    **{("", f"{address}_{part}"): address for address in ("listen", "advertised", "http_listen", "control_listen")
       for part in ("host", "port")},
    **{("", table): f"[{table}]" for table in ("group", "log", "transactions", "auth")},
    ("", "listeners"): "[[listeners]]",
    ("", "listen_given"): "listen",
    ("group", "consumer_group_overrides"): "[group.overrides.<group id>]",
    ("listeners", "host"): "address", ("listeners", "port"): "address",
    ("listeners", "advertised_host"): "advertised", ("listeners", "advertised_port"): "advertised",
}


def keys_of(table: str) -> list[str]:
    """The keys of one table ("" for the top level), as the README documents them."""
    return [name for (t, name) in KEYS if t == table]




@dataclass(frozen=True)
class LoggingConfig:
    """The `[log]` table: how the broker logs, and when group trouble becomes a WARNING."""

    format: str = "text"                      # "text" or "json" (one object a line)
    level: str = "INFO"
    # WARNING when a group rebalances more than this many times within the window ...
    rebalance_warn_count: int = 5
    rebalance_warn_window_ms: int = 300_000
    # ... or one member (instance id, else client id and host) is fenced more than this often.
    fenced_warn_count: int = 3

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ConfigError(f"[log] format must be one of {', '.join(LOG_FORMATS)}, not {self.format!r}")
        if self.level.upper() not in LOG_LEVELS:
            raise ConfigError(f"[log] level must be one of {', '.join(LOG_LEVELS)}, not {self.level!r}")
        for name in ("rebalance_warn_count", "rebalance_warn_window_ms", "fenced_warn_count"):
            if getattr(self, name) < 1:
                raise ConfigError(f"[log] {name} must be at least 1, not {getattr(self, name)}")


DEFAULT_SASL_MECHANISMS = ("SCRAM-SHA-512", "SCRAM-SHA-256")
_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class ListenerConfig:
    """One `[[listeners]]` table (Kafka's listeners / listener.security.protocol.map /
    sasl.enabled.mechanisms / ssl.* per listener)."""

    name: str
    host: str
    port: int
    protocol: str = "PLAINTEXT"
    advertised_host: str | None = None
    advertised_port: int | None = None
    sasl_mechanisms: tuple[str, ...] = ()
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_keyfile_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    # ssl.client.auth: none | requested | required (mutual TLS: principal from the certificate)
    ssl_client_auth: str = "none"

    def __post_init__(self) -> None:
        where = f"[[listeners]] {self.name!r}"
        if not _LISTENER_NAME.match(self.name):
            raise ConfigError(f"{where}: a listener name is letters, digits and '_' (e.g. SECURE)")
        if self.protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(f"{where}: protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                              f"not {self.protocol!r}")
        if self.sasl:
            if not self.sasl_mechanisms:
                object.__setattr__(self, "sasl_mechanisms", DEFAULT_SASL_MECHANISMS)
            for mech in self.sasl_mechanisms:
                if mech not in SASL_MECHANISMS:
                    raise ConfigError(f"{where}: unknown SASL mechanism {mech!r} (known: {', '.join(SASL_MECHANISMS)})")
        elif self.sasl_mechanisms:
            raise ConfigError(f"{where}: sasl_mechanisms needs protocol SASL_PLAINTEXT or SASL_SSL")
        ssl_keys = ("ssl_certfile", "ssl_keyfile", "ssl_keyfile_password", "ssl_cafile")
        if self.ssl:
            if not self.ssl_certfile or not self.ssl_keyfile:
                raise ConfigError(f"{where}: protocol {self.protocol} needs ssl_certfile and ssl_keyfile")
            if self.ssl_client_auth not in CLIENT_AUTH:
                raise ConfigError(f"{where}: ssl_client_auth must be one of {', '.join(CLIENT_AUTH)}")
            if self.ssl_client_auth != "none" and not self.ssl_cafile:
                raise ConfigError(f"{where}: ssl_client_auth = {self.ssl_client_auth!r} needs ssl_cafile "
                                  "(the CA that signs client certificates)")
        elif any(getattr(self, k) for k in ssl_keys) or self.ssl_client_auth != "none":
            raise ConfigError(f"{where}: ssl_* settings need protocol SSL or SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def ssl(self) -> bool:
        return self.protocol.endswith("SSL")

    @property
    def advertised(self) -> tuple[str, int]:
        return (self.advertised_host or self.host, self.advertised_port or self.port)


@dataclass(frozen=True)
class AuthConfig:
    """The `[auth]` table: authorization (Kafka's authorizer.class.name, super.users,
    allow.everyone.if.no.acl.found), connections.max.reauth.ms (KIP-368) and delegation
    tokens (KIP-48: delegation.token.secret.key, .max.lifetime.ms, .expiry.time.ms)."""

    authorizer: bool = False
    allow_everyone_if_no_acl: bool = False
    super_users: tuple[str, ...] = ()
    connections_max_reauth_ms: int = 0
    # Tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED) unless a secret key is set.
    delegation_token_secret_key: str | None = field(default=None, repr=False)
    delegation_token_max_lifetime_ms: int = 7 * 24 * 3600 * 1000
    delegation_token_expiry_time_ms: int = 24 * 3600 * 1000

    def __post_init__(self) -> None:
        for principal in self.super_users:
            kind, colon, name = principal.partition(":")
            if not (kind and colon and name):
                raise ConfigError(f"[auth] super_users: {principal!r} must look like User:NAME")
        if self.connections_max_reauth_ms < 0:
            raise ConfigError("[auth] connections_max_reauth_ms must be 0 (sessions never expire) or more")


@dataclass(frozen=True)
class BrokerConfig:
    listen_host: str = "127.0.0.1"
    listen_port: int = 9092
    # What clients are told to connect to (Metadata, FindCoordinator); defaults to listen.
    advertised_host: str | None = None
    advertised_port: int | None = None
    data_dir: str = "./kgroup-data"
    node_id: int = 1
    cluster_id: str = "kgroup"
    # offsets.topic.num.partitions: coordinator shards.
    metadata_partitions: int = 50
    # "always" | "interval:<ms>" | "never"
    fsync: str = "always"
    # socket.request.max.bytes
    max_request_bytes: int = DEFAULT_MAX_FRAME_SIZE
    # auto.create.topics.enable / num.partitions
    auto_create_topics: bool = True
    # KIP-1191's share-group dead-letter queue: Kafka's errors.deadletterqueue.topic.name.prefix
    # and errors.deadletterqueue.auto.create.topics.enable.
    dlq_topic_name_prefix: str = "dlq."
    dlq_auto_create_topics: bool = False
    default_partitions: int = 1
    # log.segment.bytes / log.retention.ms / log.retention.bytes
    log_segment_bytes: int = 1 << 30
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    # message.max.bytes
    max_message_bytes: int = 1_048_588
    # Write every group change as an event to the internal topic __kgroup_events.
    group_events: bool = True
    # The web console, /metrics and /api (off unless set: nothing listens).
    http_listen_host: str | None = None
    http_listen_port: int | None = None
    # A cluster sharing data_dir: every node's (id, host, port), the same list on each node;
    # empty for a single broker. node_timeout_ms: a node that holds its lock but stopped
    # renewing its lease this long (stopped, hung) loses its partitions.
    cluster: tuple[tuple[int, str, int], ...] = ()
    node_timeout_ms: int = 6000
    # The control API (faults, groups; control_api.py): off unless an address is given.
    control_listen_host: str | None = None
    control_listen_port: int | None = None
    group: GroupConfig = field(default_factory=GroupConfig)
    log: LoggingConfig = field(default_factory=LoggingConfig)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)
    # [[listeners]] beside the PLAINTEXT one of listen/advertised (see `listeners_to_open`).
    listeners: tuple[ListenerConfig, ...] = ()
    # Whether `listen` was set (file or flag): with [[listeners]] it adds a PLAINTEXT listener.
    listen_given: bool = True
    auth: AuthConfig = field(default_factory=AuthConfig)
    # Kafka's inter.broker.listener.name: the listener (one of this node's, by name) on which
    # this node sends the other nodes its own requests (transaction markers, verification),
    # with its own credentials there (Kafka's sasl.mechanism.inter.broker.protocol and the
    # listener's JAAS login; for TLS the CA that signs the peers' certificates and, where
    # they ask for one, this node's client certificate). Unset: the PLAINTEXT --cluster ports.
    inter_node_listener: str | None = None
    inter_node_sasl_mechanism: str | None = None
    inter_node_username: str | None = None
    inter_node_password: str | None = field(default=None, repr=False)
    inter_node_ssl_cafile: str | None = None
    inter_node_ssl_certfile: str | None = None
    inter_node_ssl_keyfile: str | None = None

    def __post_init__(self) -> None:
        # Refuse at start what would otherwise fail later and far away (a topic auto-created
        # with -3 partitions, a frame limit of 0).
        for name in ("listen_port", "advertised_port", "http_listen_port", "control_listen_port"):
            port = getattr(self, name)
            if port is not None and not 0 < port < 65536:
                raise ConfigError(f"{name} must be a port number (1-65535), not {port}")
        for name in ("metadata_partitions", "default_partitions", "max_request_bytes", "max_message_bytes",
                     "log_segment_bytes", "log_retention_check_interval_ms"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, not {getattr(self, name)}")
        for name in ("log_retention_ms", "log_retention_bytes"):
            if getattr(self, name) < -1:
                raise ConfigError(f"{name} must be -1 (no limit) or more, not {getattr(self, name)}")
        if self.node_id < 0:
            raise ConfigError(f"node_id must be 0 or more, not {self.node_id}")
        if self.node_timeout_ms < 100:
            raise ConfigError(f"node_timeout_ms must be at least 100, not {self.node_timeout_ms}")
        if self.cluster:
            ids = [n for n, _, _ in self.cluster]
            if len(set(ids)) != len(ids):
                raise ConfigError(f"cluster names node {max(ids, key=ids.count)} twice")
            if self.node_id not in ids:
                raise ConfigError(f"node_id {self.node_id} is not in the cluster list "
                                  f"({', '.join(map(str, sorted(ids)))}); pass --node-id")
        names = [lst.name for lst in self.listeners_to_open]
        addresses = [(lst.host, lst.port) for lst in self.listeners_to_open]
        for seen in (names, addresses):
            dupes = sorted({str(x) for x in seen if seen.count(x) > 1})
            if dupes:
                raise ConfigError(f"two listeners share {dupes[0]}: each needs its own name and port "
                                  "(listen/--listen is the PLAINTEXT listener named PLAINTEXT)")
        self._check_inter_node()

    def _check_inter_node(self) -> None:
        """The inter-node listener is one of this node's, and its credentials fit its protocol."""
        given = [name for name in ("inter_node_sasl_mechanism", "inter_node_username", "inter_node_password",
                                   "inter_node_ssl_cafile", "inter_node_ssl_certfile", "inter_node_ssl_keyfile")
                 if getattr(self, name) is not None]
        listener = self.inter_node_listener_config
        if listener is None:
            if self.inter_node_listener is not None:
                names = ", ".join(lst.name for lst in self.listeners_to_open)
                raise ConfigError(f"inter_node_listener {self.inter_node_listener!r} is none of this node's "
                                  f"listeners ({names})")
            if given:
                raise ConfigError(f"{given[0]} needs inter_node_listener (the listener it is for)")
            return
        where = f"inter_node_listener {listener.name!r} ({listener.protocol})"
        if listener.sasl:
            if not self.inter_node_username or self.inter_node_password is None:
                raise ConfigError(f"{where} needs inter_node_username and inter_node_password "
                                  "(this node's own SASL credentials there)")
            mechanism = self.inter_node_sasl_mechanism or listener.sasl_mechanisms[0]
            if mechanism not in listener.sasl_mechanisms:
                raise ConfigError(f"inter_node_sasl_mechanism {mechanism!r} is not enabled on {where}: "
                                  f"{', '.join(listener.sasl_mechanisms)}")
        else:
            for name in ("inter_node_sasl_mechanism", "inter_node_username", "inter_node_password"):
                if name in given:
                    raise ConfigError(f"{name} needs an inter_node_listener with protocol SASL_PLAINTEXT or SASL_SSL; "
                                      f"{where} has none")
        if not listener.ssl:
            for name in ("inter_node_ssl_cafile", "inter_node_ssl_certfile", "inter_node_ssl_keyfile"):
                if name in given:
                    raise ConfigError(f"{name} needs an inter_node_listener with protocol SSL or SASL_SSL; {where} "
                                      "has none")
        if (self.inter_node_ssl_certfile is None) != (self.inter_node_ssl_keyfile is None):
            raise ConfigError("inter_node_ssl_certfile and inter_node_ssl_keyfile go together (this node's "
                              "client certificate and its key)")

    @property
    def inter_node_listener_config(self) -> ListenerConfig | None:
        """The listener named by inter_node_listener (None: unset, or no such listener)."""
        for lst in self.listeners_to_open:
            if lst.name == self.inter_node_listener:
                return lst
        return None

    def inter_node_security(self) -> dict[str, Any]:
        """This node's client settings on the inter-node listener, by Kafka's client names
        (kgroup.client.security reads them); {} for the PLAINTEXT --cluster ports."""
        listener = self.inter_node_listener_config
        if listener is None:
            return {}
        out: dict[str, Any] = {"security.protocol": listener.protocol}
        if listener.sasl:
            out.update({"sasl.mechanism": self.inter_node_sasl_mechanism or listener.sasl_mechanisms[0],
                        "sasl.username": self.inter_node_username, "sasl.password": self.inter_node_password})
        if listener.ssl:
            # The peers' certificates are signed by the CA this listener trusts, unless told otherwise.
            cafile = self.inter_node_ssl_cafile or listener.ssl_cafile
            if cafile:
                out["ssl.ca.location"] = cafile
            if self.inter_node_ssl_certfile:
                out["ssl.certificate.location"] = self.inter_node_ssl_certfile
                out["ssl.key.location"] = self.inter_node_ssl_keyfile
        return out

    @property
    def nodes(self) -> dict[int, tuple[str, int]]:
        """Every node's advertised address: the cluster list, or this broker alone."""
        if self.cluster:
            return {n: (host, port) for n, host, port in self.cluster}
        return {self.node_id: self.advertised}

    @property
    def control_listen(self) -> tuple[str, int] | None:
        if self.control_listen_host is None or self.control_listen_port is None:
            return None
        return (self.control_listen_host, self.control_listen_port)

    @property
    def listeners_to_open(self) -> tuple[ListenerConfig, ...]:
        """Every listener: `listen` as a PLAINTEXT listener named PLAINTEXT (unless only
        [[listeners]] are configured), then the [[listeners]] tables in order."""
        if self.listeners and not self.listen_given:
            return self.listeners
        plain = ListenerConfig("PLAINTEXT", self.listen_host, self.listen_port, "PLAINTEXT",
                               self.advertised_host, self.advertised_port)
        return (plain, *self.listeners)

    @property
    def advertised(self) -> tuple[str, int]:
        """The first listener's advertised address (what handlers name; a connection on
        another listener is told that listener's own address, broker/security/listeners.py)."""
        if self.listeners and not self.listen_given:
            return self.listeners[0].advertised
        return (self.advertised_host or self.listen_host, self.advertised_port or self.listen_port)


def parse_cluster(value: Any, what: str = "cluster") -> tuple[tuple[int, str, int], ...]:
    """`0=HOST:PORT,1=HOST:PORT` (or a list of `ID=HOST:PORT`) -> ((id, host, port), ...)."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise ConfigError(f"{what} must look like 0=HOST:PORT,1=HOST:PORT, not {value!r}")
    nodes = []
    for entry in items:
        node, sep, address = str(entry).strip().partition("=")
        if not sep or not node.strip().isdigit():
            raise ConfigError(f"{what}: {entry!r} must look like ID=HOST:PORT (for example 0=127.0.0.1:9092)")
        host, port = parse_host_port(address.strip(), f"{what} entry {node.strip()}")
        nodes.append((int(node), host, port))
    return tuple(sorted(nodes))


# Fields a caller of load_config may override (the flags, and tests' group settings); the
# file's keys, their types and ranges are KEYS (above).
GROUP_KEYS = {f.name for f in dataclasses.fields(GroupConfig)}
LOG_TYPES = {f.name for f in dataclasses.fields(LoggingConfig)}
# Settings given as HOST:PORT, kept as <name>_host and <name>_port.
_ADDRESSES = ("listen", "advertised", "http_listen", "control_listen")


def _typed(label: str, value: Any, key: Key) -> Any:
    """`value` from the TOML file if it has the key's type and lies in its range (lists
    become tuples); else a ConfigError that starts with `label` (file, key and value).

    Without this a wrong type starts the broker and fails inside it later (a string frame
    limit breaks every connection), or surfaces as a Python comparison error.
    """
    if key.kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{label}: must be a whole number")
    elif key.kind == "bool":
        if not isinstance(value, bool):
            raise ConfigError(f"{label}: must be true or false")
    elif key.kind == "names":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{label}: must be a list of names")
        value = tuple(value)
    elif not isinstance(value, str):
        raise ConfigError(f"{label}: must be a string")
    problem = key.problem(value)
    if problem:
        raise ConfigError(f"{label}: {problem}")
    return value


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{what} must look like HOST:PORT (for example 127.0.0.1:9092), not {text!r}")
    return host.strip("[]"), int(port)


def _unknown(key: str, table: str, path: str, where: str = "") -> ConfigError:
    """An unknown key, with the keys of its table the README documents."""
    known = ", ".join(sorted(keys_of(table)))
    if not table:
        known += ", [group], [log], [transactions], [auth], [[listeners]]"
    elif table == "group":
        known += ", [group.overrides.<group id>]"
    place = where or (f"[{table}]" if table else "the top level")
    return ConfigError(f"{path}: unknown setting {key!r} in {place}; known: {known}")


def _listeners(value: Any, path: str) -> tuple[ListenerConfig, ...]:
    """The `[[listeners]]` array of tables."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        raise ConfigError(f"{path}: listeners must be [[listeners]] tables (name, address, protocol, ...)")
    out = []
    for table in value:
        if "name" not in table:
            raise ConfigError(f"{path}: every [[listeners]] table needs a name (e.g. name = \"SECURE\")")
        name = _typed(f"{path}: [[listeners]] name = {toml_text(table['name'])}", table["name"],
                      KEYS[("listeners", "name")])
        where = f"[[listeners]] {name!r}"
        if "address" not in table:
            raise ConfigError(f"{path}: {where} needs an address (HOST:PORT)")
        fields: dict[str, Any] = {"name": name}
        for key, val in table.items():
            if key == "name":
                continue
            if ("listeners", key) not in KEYS:
                raise _unknown(key, "listeners", path, where)
            val = _typed(f"{path}: {where} {key} = {toml_text(val)}", val, KEYS[("listeners", key)])
            if key in ("address", "advertised"):
                prefix = "" if key == "address" else "advertised_"
                fields[f"{prefix}host"], fields[f"{prefix}port"] = parse_host_port(val, f"{where} {key}")
            else:
                fields[key] = val
        try:
            out.append(ListenerConfig(**fields))
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return tuple(out)


# The `kgroup serve` flags that have a key in the file, by the name load_config takes them
# under (the flag's argparse dest): each is None unless given on the command line, so a
# value in the file is used unless the flag is given. [log] level and format are
# log_level and log_format here.
FLAG_KEYS = ("listen", "advertised", "data_dir", "fsync", "group_events", "http_listen", "log_level",
             "log_format", "control_listen", "node_id", "cluster", "node_timeout_ms")


def read_file(path: str) -> dict[str, Any]:
    """The TOML file as it is, or a ConfigError that says what is wrong with it."""
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _group_overrides(per_group: Any, path: str) -> tuple[tuple[str, int, int], ...]:
    """The file's `[group.overrides.<group id>]` tables."""
    if not isinstance(per_group, dict):
        raise ConfigError(f"{path}: [group.overrides] must be a table of group ids")
    rows = []
    for gid, table in per_group.items():
        try:
            rows.append((gid, int(table["consumer_session_timeout_ms"]),
                         int(table["consumer_heartbeat_interval_ms"])))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: [group.overrides.{gid}] needs consumer_session_timeout_ms and "
                              "consumer_heartbeat_interval_ms (milliseconds)") from None
    return tuple(rows)


# Where each value came from, for messages: (table, key) -> "FILE: [table] key = value" or
# "--flag value".
Given = dict[tuple[str, str], str]


def _table(raw: Any, table: str, path: str, into: dict[str, Any], given: Given) -> None:
    """One of the file's `[table]` tables: every key known, typed and in range."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [{table}] must be a table")
    for key, value in raw.items():
        if table == "group" and key == "overrides":
            rows = _group_overrides(value, path)
            if rows:
                into["consumer_group_overrides"] = rows
            continue
        spec = KEYS.get((table, key))
        if spec is None:
            raise _unknown(key, table, path)
        label = f"{path}: {spec.where} = {toml_text(value)}"
        into[key] = _typed(label, value, spec)
        given[(table, key)] = label


def _read_toml(path: str, broker: dict[str, Any], group: dict[str, Any], logging_: dict[str, Any],
               txn: dict[str, Any], given: Given) -> None:
    """The settings of the TOML file at `path`, into the tables `load_config` fills."""
    raw = read_file(path)
    tables = {"group": group, "log": logging_, "transactions": txn}
    for key, value in raw.items():
        if key in tables:
            _table(value, key, path, tables[key], given)
        elif key == "auth":
            auth: dict[str, Any] = {}
            _table(value, "auth", path, auth, given)
            try:
                broker["auth"] = AuthConfig(**auth)
            except ConfigError as exc:
                raise ConfigError(f"{path}: {exc}") from None
        elif key == "listeners":
            broker["listeners"] = _listeners(value, path)
        elif ("", key) not in KEYS:
            raise _unknown(key, "", path)
        elif key == "cluster":
            broker["cluster"] = parse_cluster(value, f"{path}: cluster")
        else:
            spec = KEYS[("", key)]
            label = f"{path}: {spec.where} = {toml_text(value)}"
            value = _typed(label, value, spec)
            given[("", key)] = label
            if key in _ADDRESSES:
                broker[f"{key}_host"], broker[f"{key}_port"] = parse_host_port(value, key)
            else:
                broker[key] = value


def _shift_ports(broker: dict[str, Any], offset: int, path: str) -> None:
    """`kgroup serve --port-offset N` (node N of `kgroup cluster`): N added to the port of every
    listener the file names — each [[listeners]] address and advertised address, http_listen and
    control_listen — so nodes sharing one file on one host each get their own ports. A flag
    given on the command line is taken as it is."""
    def shifted(port: int, where: str) -> int:
        if port + offset > 65535:
            raise ConfigError(f"{path}: {where} port {port} + --port-offset {offset} is above 65535")
        return port + offset

    listeners = []
    for lst in broker.get("listeners", ()):
        where = f"[[listeners]] {lst.name!r}"
        advertised = (shifted(lst.advertised_port, f"{where} advertised")
                      if lst.advertised_port is not None else None)
        listeners.append(dataclasses.replace(lst, port=shifted(lst.port, f"{where} address"),
                                             advertised_port=advertised))
    if listeners:
        broker["listeners"] = tuple(listeners)
    for key in ("http_listen", "control_listen"):
        if broker.get(f"{key}_port") is not None:
            broker[f"{key}_port"] = shifted(broker[f"{key}_port"], key)


def _flag_label(key: str, value: Any) -> str:
    """How a setting given to load_config (a `kgroup serve` flag, or a caller's override) is named."""
    if key in FLAG_KEYS:
        return f"--{key.replace('_', '-')} {value}"
    return f"{key} = {toml_text(value)}"


def _check_override(table: str, key: str, value: Any, given: Given) -> None:
    """A flag's value (typed by its parser) within its key's range."""
    spec = KEYS.get((table, key))
    label = _flag_label(key if table != "log" else f"log_{key}", value)
    given[(table, key)] = label
    if spec is None or spec.kind in ("address", "cluster"):
        return                      # parsed by the caller, with the flag named
    problem = spec.problem(value)
    if problem:
        raise ConfigError(f"{label}: {problem}")


_DEFAULTS = {"": BrokerConfig, "group": GroupConfig, "log": LoggingConfig, "transactions": TransactionConfig}


def _check_relations(values: dict[str, dict[str, Any]], given: Given) -> None:
    """Every ordering between keys (RELATIONS), blaming the key the user gave:
    the upper one if only it was given (`... = 4000: must be >= share_heartbeat_interval_ms
    (5000)`), else the lower one."""
    defaults = {table: {f.name: f.default for f in dataclasses.fields(cls)} for table, cls in _DEFAULTS.items()}
    for rel in RELATIONS:
        def value(key: str, table: str = rel.table) -> Any:
            return values[table].get(key, defaults[table][key])

        low, high = value(rel.low), value(rel.high)
        if low < high or (low == high and not rel.strict):
            continue
        if (rel.table, rel.high) in given and (rel.table, rel.low) not in given:
            raise ConfigError(f"{given[(rel.table, rel.high)]}: must be {'>' if rel.strict else '>='} "
                              f"{rel.low} ({low})")
        label = given.get((rel.table, rel.low), f"{rel.low} = {low}")
        raise ConfigError(f"{label}: must be {'<' if rel.strict else '<='} {rel.high} ({high})")


def load_config(path: str | None = None, **overrides: Any) -> BrokerConfig:
    """Settings from an optional TOML file, then flag overrides (None means not given).

    The file has top-level broker keys and a [group] table, e.g.
    `listen = "127.0.0.1:9092"`, `fsync = "always"`, `[group] initial_rebalance_delay_ms = 0`.
    Every key is checked for type and range as it is read (KEYS), a flag's value
    for range, and then the orderings between keys, each named as the user gave it.
    """
    broker: dict[str, Any] = {}
    group: dict[str, Any] = {}
    logging_: dict[str, Any] = {}
    txn: dict[str, Any] = {}
    given: Given = {}
    port_offset = overrides.pop("port_offset", None)
    if path is not None:
        _read_toml(path, broker, group, logging_, txn, given)
        if port_offset:
            _shift_ports(broker, port_offset, path)
    for key, value in overrides.items():
        if value is None:
            continue
        if key in _ADDRESSES:
            host, port = parse_host_port(value, "--" + key.replace("_", "-"))
            broker[f"{key}_host"], broker[f"{key}_port"] = host, port
            given[("", key)] = _flag_label(key, value)
        elif key.startswith("log_") and key[4:] in LOG_TYPES:
            _check_override("log", key[4:], value, given)
            logging_[key[4:]] = value
        elif key == "cluster":
            broker["cluster"] = parse_cluster(value, "--cluster")
        elif key in GROUP_KEYS:
            _check_override("group", key, value, given)
            group[key] = value
        else:
            _check_override("", key, value, given)
            broker[key] = value
    _check_relations({"": broker, "group": group, "log": logging_, "transactions": txn}, given)
    # In a cluster the node's own --cluster entry is its PLAINTEXT listener.
    broker["listen_given"] = "listen_host" in broker or "listen_port" in broker or bool(broker.get("cluster"))
    if broker.get("cluster"):
        # A node listens on, and is advertised as, its own entry unless told otherwise.
        own = {n: (h, p) for n, h, p in broker["cluster"]}.get(broker.get("node_id", BrokerConfig.node_id))
        if own is not None:
            for key in ("listen", "advertised"):
                if f"{key}_host" not in broker:
                    broker[f"{key}_host"], broker[f"{key}_port"] = own
    try:
        config = BrokerConfig(**broker, group=GroupConfig(**group), log=LoggingConfig(**logging_),
                              transactions=TransactionConfig(**txn))
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    load_assignor_plugins()
    for name in config.group.consumer_assignors:
        try:
            get_server_assignor(name)
        except UnknownAssignor:
            # Otherwise every consumer-protocol member would get UNSUPPORTED_ASSIGNOR.
            raise ConfigError(f"[group] consumer_assignors: unknown server assignor {name!r}") from None
    return config
