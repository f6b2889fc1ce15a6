"""Transcripts of what a client observed, the named normalizations, and their comparison.

How this works: a scenario adds entries — a label and a value (a kio response, a client's
outcomes, a group's description, records read) — and timings (a label, seconds and the
tolerance within which the two brokers must agree). `Normalizer` turns every value into
plain data (dicts, lists, strings, numbers) and applies the normalizations of
`NORMALIZATIONS`, each by the field it names, with aliases numbered in order of first
appearance within the transcript (so `member-1` is the same member wherever it appears and
"the leader is the first joiner" is still compared). Nothing else is rewritten: every other
field, error code and version is compared as the broker sent it. `compare` diffs the two
normalized transcripts line by line and checks each timing within its tolerance.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import uuid
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from kgroup.conformance.errors import enum_value

# The only rewrites applied before two transcripts are compared: name -> why.
NORMALIZATIONS: dict[str, str] = {
    "member ids": "a member id is generated (a UUID suffix): each becomes member-N in order of first "
                  "appearance, so equality between ids is still compared",
    "cluster ids": "a cluster id is random per cluster: CLUSTER",
    "topic ids": "a topic id (any UUID but the zero one) is random per topic: uuid-N in order of first "
                 "appearance",
    "producer ids": "producer ids come from a broker's own counter: producer-N in order of first appearance "
                    "(-1 kept)",
    "fetch session ids": "a fetch session id is random: session-N in order of first appearance (0 kept)",
    "telemetry subscription ids": "a client's telemetry subscription id is derived from its random client "
                                  "instance id (KIP-714): subscription-N in order of first appearance (0 kept)",
    "timestamps": "wall-clock times (commit, append and start times, LogAppendTime record timestamps): "
                  "TIME (-1 kept)",
    "throttle times": "quota throttling depends on load: 0",
    "host names and ports": "each broker (and its recording proxy) listens on a port of its own, and a "
                            "client's host is how it reached that broker: HOST, PORT",
    "log directories and disk space": "a broker's log directory is a path of its own and its disk's free "
                                      "space changes by the second: LOGDIR and BYTES (-1 kept)",
    "SASL tokens": "a SCRAM server message carries a random nonce and salt: TOKEN (empty kept)",
    "delegation tokens": "a delegation token's id is random and its HMAC keyed by it: token-N and hmac-N in order "
                         "of first appearance (\"\" and empty kept); its issue, expiry and max timestamps are "
                         "wall-clock times (TIME, -1 kept), and so is a SASL session's lifetime that ends with "
                         "the token: LIFETIME (0 kept); Kafka keeps tokens in a hash map, so a list of tokens is "
                         "compared in that order of first appearance",
    "error messages": "an error message is free text: MESSAGE when there is one (null and \"\" compared as "
                      "they are)",
    "member order": "Kafka keeps a group's members in a hash map keyed by their random ids, so the order of "
                    "a member list (JoinGroup's, DescribeGroups', ConsumerGroupDescribe's, ...) is arbitrary: "
                    "members already seen are listed by alias, new ones by their other fields",
    "group order": "Kafka answers a request naming several groups shard by shard, and lists groups from hash "
                   "maps: lists of groups are compared in group-id order",
    "partition order": "Kafka answers partitions from hash maps (committed offsets, a produce's results): "
                       "lists of partitions are compared in partition order, and so are a topic's partition "
                       "numbers in an assignment (a set in Kafka: a member still revoking some is described "
                       "with them after the ones it keeps)",
    "name order": "Kafka builds lists of named entries (topics, configs, users, transactions) from hash maps: they are "
                  "compared in name order (per-topic results naming none, by id, first, then by error; "
                  "a transaction's topics and an election's results by topic; a member's subscribed topic "
                  "names, a hash set in Kafka)",
    "heartbeat timing": "in real-client scenarios a classic Heartbeat answered NONE or REBALANCE_IN_PROGRESS "
                        "is left out of a client's outcomes: which of the two a heartbeat gets depends on when "
                        "its timer fired (raw scenarios compare every heartbeat exactly; other errors are kept)",
    "rebalance rounds": "in real-client scenarios a SyncGroup answered REBALANCE_IN_PROGRESS is left out of a "
                        "client's outcomes: it is a rebalance round another member's (re)join overtook, and how "
                        "many rounds a group takes to settle depends on how late each request arrives on a loaded "
                        "machine (the settling round's JoinGroup and SyncGroup, the group described at each step, "
                        "commits and records are still compared; raw scenarios compare every SyncGroup exactly)",
    "mechanism order": "a user's SCRAM credentials come from a hash map: compared in mechanism order",
    "ACL order": "Kafka's authorizer keeps bindings in hash maps: lists of ACL resources and bindings are "
                 "compared by (resource type, name, pattern type, principal, operation)",
    "topic order": "an assignment's topics come from a hash map keyed by random topic ids: lists of "
                   "(topic id, partitions) are ordered by the topic's alias (scenarios note their topics' ids "
                   "in name order first, so aliases follow names); a v13 produce's answer (KIP-516) groups its "
                   "results, keyed by topic id and partition in a hash map, by topic: its topics too, the zero id "
                   "among them",
}

_MEMBER_KEYS = frozenset({"member_id", "leader", "leader_id", "member_ids", "assigned_member_id"})
_HOST_KEYS = frozenset({"host", "client_host"})
_PORT_KEYS = frozenset({"port"})
_TIME_KEYS = frozenset({"commit_timestamp", "log_append_time", "log_append_time_ms", "transaction_start_time_ms",
                        "last_timestamp", "timestamp_ms", "last_update_ms", "start_time"})
_PRODUCER_KEYS = frozenset({"producer_id"})
_SESSION_KEYS = frozenset({"session_id"})
_SUBSCRIPTION_KEYS = frozenset({"subscription_id"})
_MESSAGE_KEYS = frozenset({"error_message"})
_NAME_SET_KEYS = frozenset({"subscribed_topic_names"})
_PARTITION_SET_KEYS = frozenset({"partitions"})
_THROTTLE_KEYS = frozenset({"throttle_time", "throttle_time_ms"})
_CLUSTER_KEYS = frozenset({"cluster_id"})
_LOG_DIR_KEYS = frozenset({"log_dir"})
_DISK_KEYS = frozenset({"total_bytes", "usable_bytes"})
_TOKEN_KEYS = frozenset({"auth_bytes"})
_DELEGATION_TIME_KEYS = frozenset({"issue_timestamp", "expiry_timestamp", "max_timestamp"})
_ZERO_UUID = uuid.UUID(int=0)


class Normalizer:
    """Plain data from any value, with the named normalizations applied (see the module)."""

    def __init__(self) -> None:
        self._aliases: dict[str, dict[Any, str]] = {}

    def alias(self, kind: str, value: Any) -> str:
        table = self._aliases.setdefault(kind, {})
        if value not in table:
            table[value] = f"{kind}-{len(table) + 1}"
        return table[value]

    def plain(self, value: Any, key: str | None = None) -> Any:
        if key is not None and value is not None:
            special = self._by_key(key, value)
            if special is not _KEEP:
                return special
        if isinstance(value, Enum):
            return enum_value(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: self.plain(getattr(value, f.name), f.name) for f in dataclasses.fields(value)}
        if isinstance(value, dict):
            return {str(k): self.plain(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            if value and all(_has_str(v, "token_id") for v in value):
                value = sorted(value, key=self._token_order)
            elif value and all(_member_entry(v) for v in value):
                value = sorted(value, key=self._member_order)
            elif value and all(_topic_entry(v) for v in value):
                value = sorted(value, key=self._topic_order)
            elif value and all(_has_str(v, "resource_name") and _has_int(v, "resource_type") for v in value):
                value = sorted(value, key=lambda v: tuple(str(_field(v, k)) for k in (
                    "resource_type", "resource_name", "pattern_type", "principal", "operation")))
            elif value and all(_has_str(v, "group_id") for v in value):
                value = sorted(value, key=lambda v: _field(v, "group_id"))
            elif value and all(_has_int(v, "partition_index") for v in value):
                value = sorted(value, key=lambda v: _field(v, "partition_index"))
            elif value and all(_has_int(v, "index") and _has_int(v, "base_offset") for v in value):
                value = sorted(value, key=lambda v: _field(v, "index"))     # Produce's partitions
            elif value and all(_has_str(v, "name") for v in value):
                value = sorted(value, key=lambda v: _field(v, "name"))
            elif value and all(_has_str(v, "topic") and (_field(v, "partitions") is not None
                                                          or _field(v, "partition_result") is not None)
                               for v in value):
                # DescribeTransactions' topics, ElectLeaders' results
                value = sorted(value, key=lambda v: _field(v, "topic"))
            elif value and all(_has_str(v, "name") or _has_none(v, "name") for v in value) and all(
                    _has_error(v) for v in value):
                # per-topic results some of which name no topic (by id, or neither)
                value = sorted(value, key=lambda v: (_field(v, "name") or "", str(_field(v, "error_code"))))
            elif value and all(_has_int(v, "mechanism") and _has_int(v, "iterations") for v in value):
                value = sorted(value, key=lambda v: _field(v, "mechanism"))
            elif value and all(_has_str(v, "transactional_id") for v in value):
                value = sorted(value, key=lambda v: _field(v, "transactional_id"))
            elif value and all(_has_str(v, "user") for v in value):
                value = sorted(value, key=lambda v: _field(v, "user"))
            return [self.plain(v, key) for v in value]
        if isinstance(value, (set, frozenset)):
            return sorted((self.plain(v, key) for v in value), key=repr)
        if isinstance(value, timedelta):
            return int(value.total_seconds() * 1000)
        if isinstance(value, datetime):
            return "TIME"
        if isinstance(value, uuid.UUID):
            return "ZERO-UUID" if value == _ZERO_UUID else self.alias("uuid", value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).hex()
        if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
            return value
        if isinstance(value, float):
            return value
        return repr(value)

    def _member_order(self, entry: Any) -> tuple[int, str, str]:
        """Members seen before by their alias number; new ones by their other fields."""
        member = _field(entry, "member_id")
        known = self._aliases.get("member", {}).get(member)
        rest = Normalizer().plain({k: v for k, v in _fields(entry).items() if k not in _MEMBER_KEYS})
        text = json.dumps(rest, sort_keys=True, default=str)
        return (0, f"{int(known.rsplit('-', 1)[1]):09d}", text) if known else (1, "", text)

    def _token_order(self, entry: Any) -> tuple[int, int, str]:
        """Tokens seen before by their alias number; new ones by their id."""
        known = self._aliases.get("token", {}).get(_field(entry, "token_id"))
        return (0, int(known.rsplit("-", 1)[1]), "") if known else (1, 0, _field(entry, "token_id"))

    def _topic_order(self, entry: Any) -> tuple[int, str, str]:
        """Topics seen before by their alias number; new ones by their other fields."""
        known = self._aliases.get("uuid", {}).get(_field(entry, "topic_id"))
        rest = Normalizer().plain({k: v for k, v in _fields(entry).items() if k != "topic_id"})
        text = json.dumps(rest, sort_keys=True, default=str)
        return (0, f"{int(known.rsplit('-', 1)[1]):09d}", text) if known else (1, "", text)

    def _by_key(self, key: str, value: Any) -> Any:
        if key in _MEMBER_KEYS:
            if isinstance(value, str):
                return value if value == "" else self.alias("member", value)
            if isinstance(value, (list, tuple)):
                return [v if v == "" else self.alias("member", v) for v in value]
        if key in _HOST_KEYS and isinstance(value, str):
            return "HOST"
        if key in _PORT_KEYS and isinstance(value, int):
            return "PORT"
        if key in _CLUSTER_KEYS and isinstance(value, str):
            return "CLUSTER"
        if key in _LOG_DIR_KEYS and isinstance(value, str):
            return "LOGDIR"
        if key in _DISK_KEYS and isinstance(value, int):
            return value if value < 0 else "BYTES"
        if key in _TOKEN_KEYS and isinstance(value, (bytes, bytearray)):
            return "TOKEN" if value else ""
        if key in _THROTTLE_KEYS:
            return 0
        if key == "token_id" and isinstance(value, str):
            return value if value == "" else self.alias("token", value)
        if key == "hmac" and isinstance(value, (bytes, bytearray)):
            return "" if not value else self.alias("hmac", bytes(value))
        if key in _DELEGATION_TIME_KEYS and isinstance(value, (int, datetime)):
            return value if isinstance(value, int) and value < 0 else "TIME"
        if key == "session_lifetime" and isinstance(value, timedelta):
            return 0 if not value else "LIFETIME"
        if key in _NAME_SET_KEYS and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return sorted(value)
        if (key in _PARTITION_SET_KEYS and isinstance(value, (list, tuple)) and value
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            return sorted(value)
        if key in _MESSAGE_KEYS:
            return "MESSAGE" if isinstance(value, str) and value else value
        if key in _PRODUCER_KEYS and isinstance(value, int):
            return value if value < 0 else self.alias("producer", value)
        if key in _SESSION_KEYS and isinstance(value, int):
            return value if value == 0 else self.alias("session", value)
        if key in _SUBSCRIPTION_KEYS and isinstance(value, int):
            return value if value == 0 else self.alias("subscription", value)
        if key in _TIME_KEYS and isinstance(value, (int, datetime)):
            return value if isinstance(value, int) and value < 0 else "TIME"
        return _KEEP


_KEEP = object()


def _fields(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict):
        return entry
    return {f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)}


def _field(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)


def _has_str(entry: Any, name: str) -> bool:
    return (isinstance(entry, dict) or dataclasses.is_dataclass(entry)) and isinstance(_field(entry, name), str)


def _has_none(entry: Any, name: str) -> bool:
    if isinstance(entry, dict):
        return name in entry and entry[name] is None
    return dataclasses.is_dataclass(entry) and hasattr(entry, name) and getattr(entry, name) is None


def _has_error(entry: Any) -> bool:
    return (isinstance(entry, dict) and "error_code" in entry) or (
        dataclasses.is_dataclass(entry) and hasattr(entry, "error_code"))


def _has_int(entry: Any, name: str) -> bool:
    value = _field(entry, name) if (isinstance(entry, dict) or dataclasses.is_dataclass(entry)) else None
    return isinstance(value, int) and not isinstance(value, bool)


def _topic_entry(entry: Any) -> bool:
    """An entry of a list of topics by id: a dict or kio entity with a UUID topic_id (or, in
    a produce's answer, the zero id: Kafka keys those results by topic id and partition)."""
    if not (isinstance(entry, dict) or dataclasses.is_dataclass(entry)):
        return False
    value = _field(entry, "topic_id")
    return isinstance(value, uuid.UUID) or (value is None and _field(entry, "partition_responses") is not None)


def _member_entry(entry: Any) -> bool:
    """An entry of a member list: a dict or kio entity with a member_id."""
    if isinstance(entry, dict):
        return isinstance(entry.get("member_id"), str)
    return dataclasses.is_dataclass(entry) and isinstance(getattr(entry, "member_id", None), str)


@dataclasses.dataclass
class Timing:
    label: str
    seconds: float
    tolerance: float


class Transcript:
    """What one run of a scenario observed on one broker."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, Any]] = []
        self.timings: list[Timing] = []

    def add(self, label: str, value: Any) -> None:
        self.entries.append((label, value))

    def timing(self, label: str, seconds: float, tolerance: float) -> None:
        """A duration the other broker must match within `tolerance` seconds."""
        self.timings.append(Timing(label, seconds, tolerance))

    def lines(self) -> list[str]:
        """The normalized transcript, one JSON line per entry (aliases shared by all)."""
        n = Normalizer()
        return [f"{label}: {json.dumps(n.plain(value), sort_keys=True)}" for label, value in self.entries]


@dataclasses.dataclass
class Comparison:
    """How two transcripts of one scenario compare. With `known` entries (a divergence
    explained in divergences.py), `agree` is about the other entries and `known_differs`
    says whether the known ones still differ; `known_diff` shows how."""

    agree: bool
    diff: str
    lines: int
    known_differs: bool = False
    known_diff: str = ""

    def __bool__(self) -> bool:
        return self.agree


def _split(lines: list[str], known: tuple[str, ...]) -> tuple[list[str], list[str]]:
    inside = [line for line in lines if line.startswith(known)] if known else []
    return inside, [line for line in lines if not (known and line.startswith(known))]


def compare(reference: Transcript, candidate: Transcript, ref_name: str = "kafka",
            cand_name: str = "kgroup", known: tuple[str, ...] = ()) -> Comparison:
    """Line-by-line equality of the normalized transcripts and every timing within its
    tolerance; `diff` shows what differs (a unified diff, then the timings out of bounds).
    Entries whose label starts with one of `known` are compared apart (see Comparison)."""
    known_a, a = _split(reference.lines(), known)
    known_b, b = _split(candidate.lines(), known)
    out = []
    if a != b:
        out += list(difflib.unified_diff(a, b, ref_name, cand_name, lineterm="", n=2))
    ta = {t.label: t for t in reference.timings}
    tb = {t.label: t for t in candidate.timings}
    for label in sorted(set(ta) | set(tb)):
        x, y = ta.get(label), tb.get(label)
        if x is None or y is None:
            out.append(f"timing {label!r}: only on {ref_name if y is None else cand_name}")
        elif abs(x.seconds - y.seconds) > max(x.tolerance, y.tolerance):
            out.append(f"timing {label!r}: {ref_name} {x.seconds:.2f} s, {cand_name} {y.seconds:.2f} s "
                       f"(tolerance {max(x.tolerance, y.tolerance):.2f} s)")
    known_diff = "\n".join(difflib.unified_diff(known_a, known_b, ref_name, cand_name, lineterm="", n=0))
    return Comparison(not out, "\n".join(out), len(a) + len(known_a), known_a != known_b, known_diff)
