"""Client-metrics subscriptions (KIP-714): Kafka's CLIENT_METRICS config resources.

How this works: a subscription is a named config resource (type 16) with three keys, as
Kafka's ClientMetricsConfigs: `metrics` (a list of metric-name prefixes, `*` for all),
`interval.ms` (the push interval, 100 ms to 1 hour, default 5 minutes) and `match` (a list
of `selector=regex` entries over the client's instance id, client id, software name and
version, source address and port; every entry must match, in full, for the subscription to
apply; none means every client). IncrementalAlterConfigs and AlterConfigs change them,
DescribeConfigs and ListConfigResources read them; each change bumps `version`, so the
telemetry service (telemetry.py) re-evaluates a client's subscription on its next request.

Subscriptions are kept in `client-metrics.json` in the data dir (written atomically), so
they survive a restart and every node of a cluster sharing the dir reads the same ones
(`refresh`). Texts of refusals are Kafka 4.4's, compared by the differential scenario
conformance/scenarios/telemetry_raw.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.storage.atomic_files import write_atomically

CLIENT_METRICS = 16
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
DEFAULT_INTERVAL_MS = 300_000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
ALL_METRICS = "*"
SELECTORS = ("client_instance_id", "client_id", "client_software_name", "client_software_version",
             "client_source_address", "client_source_port")
# name -> (Kafka's ConfigType id, default, documentation) as DescribeConfigs reports them.
INT_TYPE, LIST_TYPE = 3, 7
KEYS: dict[str, tuple[int, str, str]] = {
    INTERVAL_MS: (INT_TYPE, str(DEFAULT_INTERVAL_MS), "Metrics push interval in milliseconds"),
    MATCH: (LIST_TYPE, "", "Client match criteria"),
    METRICS: (LIST_TYPE, "", "Telemetry metric name prefix list"),
}
# DescribeConfigs config sources: a subscription's own value, Kafka's default.
CLIENT_METRICS_CONFIG, DEFAULT_CONFIG = 7, 5
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
FILE_NAME = "client-metrics.json"


class ClientMetricsError(Exception):
    """A refused change or read: Kafka's error code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def _invalid_request(message: str) -> ClientMetricsError:
    return ClientMetricsError(ErrorCode.INVALID_REQUEST, message)


def _invalid_config(message: str) -> ClientMetricsError:
    return ClientMetricsError(ErrorCode.INVALID_CONFIG, message)


def split_list(value: str) -> list[str]:
    """A LIST config's items, as Kafka's ConfigDef parses one (trimmed, "" is none)."""
    return [] if not value.strip() else [v.strip() for v in value.split(",")]


def parse_match(entries: list[str]) -> dict[str, re.Pattern[str]]:
    """`selector=regex` entries to compiled patterns (Kafka's refusal text for a bad one)."""
    out: dict[str, re.Pattern[str]] = {}
    for entry in entries:
        parts = entry.split("=")
        if len(parts) != 2 or parts[0].strip() not in SELECTORS:
            raise _invalid_config(f"Illegal client matching pattern: {entry}")
        try:
            out[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise _invalid_config(f"Illegal client matching pattern: {entry}") from None
    return out


def _int_value(value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = None
    if number is None or not -(1 << 31) <= number < (1 << 31):
        raise _invalid_config(f"Invalid value {value} for configuration {INTERVAL_MS}: Not a number of type INT")
    return number


def validate(name: str, configs: dict[str, str]) -> dict[str, str]:
    """A subscription's configs checked as Kafka checks them; the values normalized (lists
    joined by ",")."""
    if not name:
        raise _invalid_request("Subscription name can't be empty")
    for key in configs:
        if key not in KEYS:
            raise _invalid_request(f"Unknown client metrics configuration: {key}")
    out = dict(configs)
    if INTERVAL_MS in configs:
        interval = _int_value(configs[INTERVAL_MS])
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise _invalid_request(f"Invalid value {interval} for {INTERVAL_MS}, interval must be between "
                                   f"{MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
        out[INTERVAL_MS] = str(interval)
    for key in (METRICS, MATCH):
        if key in configs:
            out[key] = ",".join(split_list(configs[key]))
    parse_match(split_list(out.get(MATCH, "")))
    return out


@dataclass(frozen=True, slots=True)
class MetricsSubscription:
    """One named subscription, ready to match clients."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def of(cls, name: str, configs: dict[str, str]) -> "MetricsSubscription":
        return cls(name, tuple(split_list(configs.get(METRICS, ""))),
                   int(configs.get(INTERVAL_MS, DEFAULT_INTERVAL_MS)),
                   tuple(sorted(parse_match(split_list(configs.get(MATCH, ""))).items())))

    def matches(self, attributes: dict[str, str | None]) -> bool:
        """Every selector's regex matches the client's attribute in full (a missing
        attribute matches nothing); no selector matches every client."""
        return all(attributes.get(k) is not None and p.fullmatch(attributes[k]) is not None for k, p in self.match)


class ClientMetricsConfigs:
    """The subscriptions of this broker (of every node sharing the data dir)."""

    Error = ClientMetricsError     # what a refused change raises (for the config APIs)

    def __init__(self, data_dir: str | Path | None) -> None:
        self.path = None if data_dir is None else Path(data_dir) / FILE_NAME
        self.configs: dict[str, dict[str, str]] = {}
        self.subscriptions: dict[str, MetricsSubscription] = {}
        self.version = 0
        self._raw: bytes | None = None
        self.refresh()

    def refresh(self) -> None:
        """Re-read the file (another node or a restart); a change bumps `version`."""
        if self.path is None or not self.path.exists():
            return
        try:
            raw = self.path.read_bytes()
            if raw == self._raw:
                return
            configs = json.loads(raw or b"{}")
        except (OSError, ValueError) as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from None
        self._raw = raw
        self._install(configs)

    def _install(self, configs: dict[str, dict[str, str]]) -> None:
        self.configs = {name: dict(values) for name, values in sorted(configs.items())}
        self.subscriptions = {name: MetricsSubscription.of(name, values) for name, values in self.configs.items()}
        self.version += 1

    def names(self) -> list[str]:
        return list(self.configs)

    def describe(self, name: str) -> list[tuple[str, str, int, int, str]]:
        """(key, value, source, config type, documentation) per key, set ones first-class."""
        if not name:
            raise _invalid_request("Client metrics subscription name must not be empty")
        own = self.configs.get(name, {})
        return [(key, own.get(key, default), CLIENT_METRICS_CONFIG if key in own else DEFAULT_CONFIG, kind, doc)
                for key, (kind, default, doc) in sorted(KEYS.items())]

    def alter(self, name: str, changes: tuple[tuple[str, int, str | None], ...], incremental: bool,
              validate_only: bool) -> None:
        """Apply (key, operation, value) changes; a subscription left without keys is removed."""
        configs = dict(self.configs.get(name, {})) if incremental else {}
        for key, op, value in changes:
            if op in (APPEND, SUBTRACT):
                word = "APPEND" if op == APPEND else "SUBTRACT"
                raise _invalid_config(f"Can't {word} to key {key} because its type is not LIST.")
            if op == DELETE:
                configs.pop(key, None)
            else:
                configs[key] = value if value is not None else ""
        checked = validate(name, configs)
        if validate_only or checked == self.configs.get(name) or (not checked and name not in self.configs):
            return
        updated = {**self.configs, name: checked}
        if not checked:
            updated.pop(name)
        if self.path is not None:
            self._raw = json.dumps(updated, sort_keys=True, indent=1).encode()
            write_atomically(self.path, [self._raw])
        self._install(updated)
