"""Every key of the broker's TOML file, with its type and its range: one table.

broker/config.py walks it to read a file (a value of the wrong type or out of range is
refused with the key as the user wrote it: `kgroup.toml: [group] min_session_timeout_ms =
-5: must be >= 1`), to name the known keys of a table when one is unknown, and to check the
flags that mirror keys. `RELATIONS` are the orderings between keys (a min below its max, a
heartbeat below its session timeout); the key the user gave is the one blamed. The tests
walk the config dataclasses against this table (a field with no key here, or a key with no
range, fails) and the README's Configuration table against it (every key documented).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kgroup.core.group_configs import KINDS, PAIRS
from kgroup.toml_values import toml_value as toml_text

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
    *_ints("", 0, INT32, "node_id"),
    *_ints("", 100, INT32, "node_timeout_ms"),
    *_ints("", 1, INT32, "metadata_partitions", "max_request_bytes", "default_partitions", "log_segment_bytes",
           "max_message_bytes"),
    *_ints("", -1, INT64, "log_retention_ms", "log_retention_bytes"),
    *_ints("", 1, INT64, "log_retention_check_interval_ms"),
]

# Group-kind configs (consumer_*, share_*, streams_*) that may be 0, with their min and max.
_ZERO_OK = {"streams_num_standby_replicas", "streams_num_warmup_replicas", "streams_acceptable_recovery_lag",
            "streams_initial_rebalance_delay_ms", "streams_assignment_interval_ms"}


def _kind_keys() -> tuple[list[Key], list[Relation]]:
    """Every group kind's [group] keys from its configs (core/group_configs.py): the
    broker default, its min and its max, each within the config's type, min <= value <= max."""
    keys, relations = [], []
    for configs in KINDS:
        for d in configs:
            key = d.name.replace(".", "_")
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
