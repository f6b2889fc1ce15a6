"""Group-level configs (KIP-848): Kafka 4.x names, layered over the broker's settings.

How this works: a group's dynamic configs are set with IncrementalAlterConfigs or
AlterConfigs on a GROUP resource (type 32) and kept as one `GroupConfigRecord` per group in
the group-metadata log: keyed by group id, replayed like every other record and carried in
snapshots, so they live with the group's metadata partition wherever that partition is
loaded. The value a group runs with is the first found of: its dynamic config (source
GROUP_CONFIG), its `[group.overrides.<group id>]` table of the broker's TOML file (source
STATIC_BROKER_CONFIG), the broker's `[group]` setting (source STATIC_BROKER_CONFIG when it
differs from the built-in default, as Kafka reports a default set in server.properties, else
DEFAULT_CONFIG). Dynamic
values are checked against the broker's bounds (the TOML's min/max settings) as Kafka's
GroupConfig.validate does, and configs may be set for a group that does not exist yet.

`GROUP_CONFIGS` is the table of known names, built from `KINDS`: each group kind adds a
tuple of `GroupConfigDef`s there (the consumer protocol's `consumer.*`, the share groups'
`share.*`, the streams groups' `streams.*`); `PAIRS` lists the (session timeout, heartbeat interval) pairs whose effective
values must stay ordered. A config is an INT within its bounds, or a STRING among its
choices (`share.auto.offset.reset`, `share.isolation.level`); `value` gives it typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar
from dataclasses import dataclass
from functools import cache
from enum import IntEnum
from types import MappingProxyType

from kgroup.core.config import GroupConfig
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import GroupConfigRecord
from kgroup.core.result import ReplyTo, Result
from kgroup.core.state import ShardState


class ConfigSource(IntEnum):
    """DescribeConfigs config sources, with Kafka's numbers."""

    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


class ConfigOp(IntEnum):
    """IncrementalAlterConfigs operations, with Kafka's numbers."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class GroupConfigDef:
    """One group config: its name, where its broker default comes from, its bounds."""

    name: str
    broker_name: str                      # the broker setting of the default, Kafka's name
    default: Callable[[GroupConfig], int | str]
    toml_override: Callable[[GroupConfig, str], int | None]
    minimum: Callable[[GroupConfig], int]
    min_name: str
    maximum: Callable[[GroupConfig], int]
    max_name: str
    doc: str
    # A STRING config's valid values (lower case); empty for an INT config.
    choices: tuple[str, ...] = ()
    # A LONG config (64 bits) rather than an INT.
    long: bool = False
    # A config with no broker setting of its own (Kafka's synonym is the config itself, at its
    # built-in default): "BOOLEAN", or "STRING" / "LIST" (comma-separated) for free text; empty for the others.
    plain: str = ""
    # What else a STRING config takes besides its choices (share.auto.offset.reset's
    # by_duration:<ISO 8601>), and the message when a value is neither; or why a free-text
    # value is refused (None: it is fine).
    accepts: Callable[[str], bool] | None = None
    refusal: Callable[[str], str | None] | None = None
    # Kafka's ConfigDef lower bound (Range.atLeast), checked as the value is parsed, with
    # ConfigDef's words; None: none.
    at_least: int | None = None
    # How Kafka's GroupConfig.validate checks the broker's bounds: "range" (min to max),
    # "max" or "min" (one side only, the other left to `at_least`), "none". Bounds of
    # kgroup's own beyond Kafka's are checked after, in the range's words.
    bounds: str = "range"
    # Kafka's built-in default where kgroup's differs (DescribeConfigs then reports kgroup's
    # as a broker setting, as Kafka reports a default set in server.properties); None: the same.
    kafka_default: int | str | None = None
    # An internal config of Kafka's (ConfigDef.defineInternal): DescribeConfigs lists it only
    # when it is set (for the group, or by the broker away from Kafka's default).
    internal: bool = False

    @property
    def type_name(self) -> str:
        """Kafka's ConfigDef type: INT, LONG, BOOLEAN or STRING."""
        if self.plain:
            return self.plain
        return "STRING" if self.choices else ("LONG" if self.long else "INT")

    def parse(self, text: str | None) -> int | str:
        """The typed value of ``text``; GroupError INVALID_CONFIG when it is not one (bounds apart).
        Kafka trims the text and compares it case-sensitively (a boolean ignores case)."""
        if text is None:
            # Kafka's IncrementalAlterConfigs refuses a SET without a value before any check.
            raise GroupError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {self.name}")
        if self.plain == "BOOLEAN":
            value = str(text).strip().lower()
            if value not in ("true", "false"):
                raise _invalid(f"Invalid value {text} for configuration {self.name}: Expected value to be "
                               "either true or false")
            return value
        if self.plain in ("STRING", "LIST"):
            value = str(text).strip()
            problem = self.refusal(value) if self.refusal is not None else None
            if problem is not None:
                raise _invalid(problem)
            return value
        if self.choices:
            value = str(text).strip()
            if value not in self.choices and not (self.accepts is not None and self.accepts(value)):
                if self.accepts is not None:
                    raise _invalid(f"Invalid value {text} for configuration {self.name}: Invalid value `{value}` "
                                   f"for configuration {self.name}. The value must be either 'earliest', 'latest' "
                                   "or of the format 'by_duration:<PnDTnHnMn.nS>'.")
                raise _invalid(f"Invalid value {text} for configuration {self.name}: String must be one of: "
                               f"{', '.join(sorted(self.choices))}")
            return value
        try:
            number = int(str(text).strip())
        except ValueError:
            raise _invalid(f"Invalid value {text} for configuration {self.name}: Not a number of type "
                           f"{self.type_name}") from None
        bits = 63 if self.long else 31
        if not -(2 ** bits) <= number < 2 ** bits:
            raise _invalid(f"Invalid value {text} for configuration {self.name}: Not a number of type "
                           f"{self.type_name}")
        if self.at_least is not None and number < self.at_least:
            raise _invalid(f"Invalid value {number} for configuration {self.name}: Value must be at least "
                           f"{self.at_least}")
        return number

    def bounds_problem(self, config: GroupConfig, value: int | str) -> str | None:
        """Why ``value`` is outside the broker's bounds for this config, or None, in Kafka's
        words: "must be in the range <min> to <max> inclusive.", or for a one-sided check
        "must be less than or equal to <max>" / "must be greater than or equal to <min>"."""
        if self.choices or self.plain:
            return None
        low, high = self.minimum(config), self.maximum(config)
        if self.bounds == "max" and value > high:  # type: ignore[operator]
            return f"{self.name} must be less than or equal to {high}"
        if self.bounds == "min" and value < low:  # type: ignore[operator]
            return f"{self.name} must be greater than or equal to {low}"
        if not low <= value <= high:  # type: ignore[operator]
            return f"{self.name} must be in the range {low} to {high} inclusive."
        return None


def _override(index: int) -> Callable[[GroupConfig, str], int | None]:
    def look(config: GroupConfig, group_id: str) -> int | None:
        for row in config.consumer_group_overrides:
            if row[0] == group_id:
                return row[index]
        return None
    return look


CONSUMER_SESSION_TIMEOUT = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL = "consumer.heartbeat.interval.ms"
CONSUMER_ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"

def overridden_groups(config: GroupConfig) -> frozenset[str]:
    """The groups a `[group.overrides]` row names: only theirs inherit anything but the
    broker's setting (`_override` reads those rows, every other config `_no_override`)."""
    return frozenset(row[0] for row in config.consumer_group_overrides)


def _no_override(config: GroupConfig, group_id: str) -> None:
    return None


def _kind_config(name: str, doc: str, *, override: Callable[[GroupConfig, str], int | None] = _no_override,
                 choices: tuple[str, ...] = (), long: bool = False,
                 accepts: Callable[[str], bool] | None = None, **kafka: Any) -> GroupConfigDef:
    """A config of one group kind (its name's first word: consumer, share, streams): its
    default is the broker's [group] <kind>_* setting, its bounds the <kind>_min_* /
    <kind>_max_* ones (Kafka's group.<kind>.* names); a STRING config (``choices``) has
    no bounds."""
    kind = name.split(".", 1)[0]
    key = name.replace(".", "_")                          # share.record.lock.duration.ms -> share_record_lock_...
    bare = name.removeprefix(f"{kind}.")
    if choices:
        return GroupConfigDef(name, name, lambda c: getattr(c, key), override, lambda c: 0, "",
                              lambda c: 0, "", doc, choices, accepts=accepts)
    low, high = key.replace(f"{kind}_", f"{kind}_min_", 1), key.replace(f"{kind}_", f"{kind}_max_", 1)
    return GroupConfigDef(name, f"group.{name}", lambda c: getattr(c, key), override,
                          lambda c: getattr(c, low), f"group.{kind}.min.{bare}",
                          lambda c: getattr(c, high), f"group.{kind}.max.{bare}", doc, long=long, **kafka)


CONSUMER_GROUP_CONFIGS: tuple[GroupConfigDef, ...] = (
    _kind_config(CONSUMER_SESSION_TIMEOUT, "The timeout to detect client failures when using the consumer group "
                 "protocol.", override=_override(1)),
    _kind_config(CONSUMER_HEARTBEAT_INTERVAL, "The heartbeat interval given to the members of a consumer group.",
                 override=_override(2)),
    _kind_config(CONSUMER_ASSIGNMENT_INTERVAL, "The least time between two target assignments of a consumer group "
                 "(KIP-1263); 0 assigns at every change."),
)


SHARE_SESSION_TIMEOUT = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
SHARE_DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset"
SHARE_MAX_RECORD_LOCKS = "share.partition.max.record.locks"
SHARE_AUTO_OFFSET_RESETS = ("latest", "earliest")
SHARE_ISOLATION_LEVEL = "share.isolation.level"
SHARE_ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
SHARE_ASSIGNMENT_INTERVAL = "share.assignment.interval.ms"
SHARE_RENEW_ACKNOWLEDGE_ENABLE = "share.renew.acknowledge.enable"
DLQ_TOPIC_NAME = "errors.deadletterqueue.topic.name"
DLQ_COPY_RECORD_ENABLE = "errors.deadletterqueue.copy.record.enable"

# Java's Duration.parse: PnDTnHnMn.nS, each part optional and signed, letters in any case.
_DURATION = re.compile(r"([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?"
                       r"(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?", re.IGNORECASE)
BY_DURATION = "by_duration:"


def duration_ms(text: str) -> int | None:
    """An ISO 8601 duration (Java's Duration.parse) in milliseconds, or None when it is not one."""
    m = _DURATION.fullmatch(text)
    if m is None or m.group(3) == "T" or not any(m.group(i) for i in (2, 4, 5, 6)):
        return None
    sign = -1 if m.group(1) == "-" else 1
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in (2, 4, 5, 6))
    nanos = int((m.group(7) or "").ljust(9, "0")) * (-1 if (m.group(6) or "").startswith("-") else 1)
    total_ns = (((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1_000_000_000 + nanos
    return sign * total_ns // 1_000_000


def by_duration_ms(value: str) -> int | None:
    """share.auto.offset.reset's by_duration:<ISO 8601 duration> (KIP-1106) in milliseconds,
    or None when ``value`` is not one (a negative duration is not)."""
    if not value.startswith(BY_DURATION):
        return None
    ms = duration_ms(value[len(BY_DURATION):])
    return ms if ms is not None and ms >= 0 else None


def _dlq_topic_refusal(value: str) -> str | None:
    # Kafka's GroupConfig.validate: an internal topic's prefix cannot be a group's DLQ.
    return f"{DLQ_TOPIC_NAME}: DLQ topic name must not start with '__'" if value.startswith("__") else None


def _plain_config(name: str, type_name: str, default: str, doc: str,
                  refusal: Callable[[str], str | None] | None = None, broker_name: str = "",
                  **kafka: Any) -> GroupConfigDef:
    """A group config with no broker setting of kgroup's: its default is Kafka's built-in
    one (or, with ``kafka_default``, kgroup's fixed behaviour, ``default``)."""
    return GroupConfigDef(name, broker_name or name, lambda c: default, _no_override, lambda c: 0, "",
                          lambda c: 0, "", doc, plain=type_name, refusal=refusal, **kafka)

SHARE_GROUP_CONFIGS: tuple[GroupConfigDef, ...] = (
    _kind_config(SHARE_SESSION_TIMEOUT, "The timeout to detect client failures of a share group member."),
    _kind_config(SHARE_HEARTBEAT_INTERVAL, "The heartbeat interval given to the members of a share group."),
    _kind_config(SHARE_RECORD_LOCK_DURATION, "How long a share group member holds an acquired record."),
    _kind_config(SHARE_DELIVERY_COUNT_LIMIT, "How many times a record is delivered before it is archived."),
    _kind_config(SHARE_AUTO_OFFSET_RESET, "Where a share partition starts when it has no state: latest, earliest, "
                 "or by_duration:<ISO 8601 duration> (the first record at most that old).",
                 choices=SHARE_AUTO_OFFSET_RESETS, accepts=lambda v: by_duration_ms(v) is not None),
    _kind_config(SHARE_MAX_RECORD_LOCKS, "The most in-flight records of one share partition."),
    _kind_config(SHARE_ISOLATION_LEVEL, "read_committed hands out only records of committed transactions, up to the "
                 "last stable offset; read_uncommitted every record.", choices=SHARE_ISOLATION_LEVELS),
    _kind_config(SHARE_ASSIGNMENT_INTERVAL, "The least time between two target assignments of a share group "
                 "(KIP-1263); 0 assigns at every change."),
    _plain_config(SHARE_RENEW_ACKNOWLEDGE_ENABLE, "BOOLEAN", "true", "Whether the renew acknowledge type is "
                  "enabled for the share group (KIP-1222)."),
    _plain_config(DLQ_TOPIC_NAME, "STRING", "", "The name of the topic to be used as the dead-letter queue (DLQ) "
                  "topic for this share group (KIP-1191). If blank (the default), the group does not have a DLQ "
                  "topic.", refusal=_dlq_topic_refusal),
    _plain_config(DLQ_COPY_RECORD_ENABLE, "BOOLEAN", "false", "When writing onto the dead-letter queue topic, "
                  "whether to copy the original record onto the DLQ topic, or just write a record containing the "
                  "context information headers."),
)


STREAMS_SESSION_TIMEOUT = "streams.session.timeout.ms"
STREAMS_HEARTBEAT_INTERVAL = "streams.heartbeat.interval.ms"
STREAMS_NUM_STANDBY_REPLICAS = "streams.num.standby.replicas"
STREAMS_NUM_WARMUP_REPLICAS = "streams.num.warmup.replicas"
STREAMS_ACCEPTABLE_RECOVERY_LAG = "streams.acceptable.recovery.lag"
STREAMS_INITIAL_REBALANCE_DELAY = "streams.initial.rebalance.delay.ms"
STREAMS_TASK_OFFSET_INTERVAL = "streams.task.offset.interval.ms"
STREAMS_ASSIGNMENT_INTERVAL = "streams.assignment.interval.ms"
STREAMS_ASSIGNOR_OFFLOAD = "streams.assignor.offload.enable"
STREAMS_ASSIGNOR_NAME = "streams.assignor.name"
STREAMS_RACK_TAGS = "streams.rack.aware.assignment.tags"
# The task assignors a streams group can name (Kafka's group.streams.assignors; kgroup has one).
STREAMS_ASSIGNORS = ("sticky",)


def _streams_assignor_refusal(value: str) -> str | None:
    if value in STREAMS_ASSIGNORS:
        return None
    return (f"{STREAMS_ASSIGNOR_NAME} '{value}' is not a registered task assignor. Registered assignors are: "
            f"[{', '.join(STREAMS_ASSIGNORS)}].")


def _rack_tags_refusal(value: str) -> str | None:
    tags = [t.strip() for t in value.split(",") if t.strip()]
    return f"{STREAMS_RACK_TAGS} must not contain duplicate tag keys." if len(set(tags)) < len(tags) else None


# Checked as Kafka 4.4's GroupConfig checks them (ConfigDef lower bounds, then the broker's
# bounds, some one-sided), so a refusal reads the same word for word; the internal ones are
# described only once set.
STREAMS_GROUP_CONFIGS: tuple[GroupConfigDef, ...] = (
    _kind_config(STREAMS_SESSION_TIMEOUT, "The timeout to detect client failures when using the streams group "
                 "protocol.", at_least=1),
    _kind_config(STREAMS_HEARTBEAT_INTERVAL, "The heartbeat interval given to the members of a streams group.",
                 at_least=1),
    _kind_config(STREAMS_NUM_STANDBY_REPLICAS, "The number of standby replicas for each task.", at_least=0,
                 bounds="max"),
    _kind_config(STREAMS_NUM_WARMUP_REPLICAS, "The most warm-up tasks a streams group has at once (Kafka Streams' "
                 "max.warmup.replicas).", at_least=0, bounds="max", internal=True),
    _kind_config(STREAMS_ACCEPTABLE_RECOVERY_LAG, "The most changelog records a member may lag behind to be "
                 "considered caught up on a task.", long=True, at_least=0, bounds="none", internal=True),
    _kind_config(STREAMS_INITIAL_REBALANCE_DELAY, "How long an empty streams group waits for more members before "
                 "its first assignment.", at_least=0, bounds="none"),
    _kind_config(STREAMS_TASK_OFFSET_INTERVAL, "How often the members report their changelog offsets.", at_least=1,
                 bounds="min", internal=True),
    _kind_config(STREAMS_ASSIGNMENT_INTERVAL, "The interval between assignments (kgroup assigns at once).",
                 at_least=0, kafka_default=1_000),
    # kgroup computes every target assignment within the heartbeat that needs it: as Kafka
    # with this off (its default is on). Accepted and kept; it changes nothing.
    _plain_config(STREAMS_ASSIGNOR_OFFLOAD, "BOOLEAN", "false", "Whether to offload streams group assignment to a "
                  "group coordinator background thread (kgroup never does).",
                  broker_name=f"group.{STREAMS_ASSIGNOR_OFFLOAD}", kafka_default="true", internal=True),
    _plain_config(STREAMS_ASSIGNOR_NAME, "STRING", "sticky", "The task assignor of this streams group, by short "
                  "name; kgroup has one, sticky.", refusal=_streams_assignor_refusal),
    # kgroup's task assignor is not rack-aware: the tags are accepted and kept, unused.
    _plain_config(STREAMS_RACK_TAGS, "LIST", "", "The client tag keys the task assignor spreads standby replicas "
                  "over (accepted and kept; kgroup's assignor does not use them).", refusal=_rack_tags_refusal),
)


def check_broker_defaults(config: GroupConfig, kind: str, configs: tuple[GroupConfigDef, ...]) -> None:
    """Raise ValueError unless every broker-wide default of one group kind (``kind``: the
    prefix of its [group] keys, share or streams) lies within its bounds, its heartbeat
    interval is below its session timeout and its group size is at least one."""
    if getattr(config, f"{kind}_heartbeat_interval_ms") >= getattr(config, f"{kind}_session_timeout_ms"):
        raise ValueError(f"[group] {kind}_heartbeat_interval_ms must be below {kind}_session_timeout_ms")
    for d in configs:
        if d.plain:
            continue                                        # no broker setting
        key = d.name.replace(".", "_")                      # the [group] TOML key
        value = d.default(config)
        if d.choices:
            if value not in d.choices:
                raise ValueError(f"[group] {key}: must be one of {', '.join(d.choices)}, not {value!r}")
            continue
        low, high = d.minimum(config), d.maximum(config)
        if low > high:
            raise ValueError(f"[group] {key.replace(f'{kind}_', f'{kind}_min_', 1)} ({low}) is above "
                             f"{key.replace(f'{kind}_', f'{kind}_max_', 1)} ({high})")
        if not low <= value <= high:  # type: ignore[operator]
            raise ValueError(f"[group] {key}: must be between {low} and {high}, not {value}")
    if getattr(config, f"{kind}_max_size") < 1:
        raise ValueError(f"[group] {kind}_max_size must be >= 1")


# Each group kind's configs.
KINDS: tuple[tuple[GroupConfigDef, ...], ...] = (CONSUMER_GROUP_CONFIGS, SHARE_GROUP_CONFIGS, STREAMS_GROUP_CONFIGS)
# (session timeout, heartbeat interval): the first must stay greater than the second.
PAIRS: tuple[tuple[str, str], ...] = ((CONSUMER_SESSION_TIMEOUT, CONSUMER_HEARTBEAT_INTERVAL),
                                      (SHARE_SESSION_TIMEOUT, SHARE_HEARTBEAT_INTERVAL),
                                      (STREAMS_SESSION_TIMEOUT, STREAMS_HEARTBEAT_INTERVAL))

GROUP_CONFIGS: Mapping[str, GroupConfigDef] = MappingProxyType(
    {d.name: d for kind in KINDS for d in kind})


@dataclass(frozen=True, slots=True)
class AlterGroupConfigsRequest:
    """Changes to one group's dynamic configs.

    ``incremental``: IncrementalAlterConfigs, (name, op, value) changes on top of what is
    set. Otherwise AlterConfigs: the (name, SET, value) pairs replace every dynamic config.
    """

    group_id: str
    changes: tuple[tuple[str, int, str | None], ...]
    incremental: bool = True
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class DescribedGroupConfig:
    name: str
    value: str
    source: ConfigSource
    # (name, value, source) from the one in force down to the broker default.
    synonyms: tuple[tuple[str, str, ConfigSource], ...]
    doc: str
    type_name: str = "INT"                # Kafka's ConfigDef type: INT or STRING


def _invalid(message: str) -> GroupError:
    return GroupError(ErrorCode.INVALID_CONFIG, message)


def known_names() -> str:
    """Every group config name, sorted (the CLI's hint for an unknown one)."""
    return ", ".join(sorted(GROUP_CONFIGS))


_UNSET = object()       # a config the group has no dynamic value for


class GroupConfigs:
    """The group configs of one shard: lookups for the protocols, and the admin handlers."""

    def __init__(self, shard: ShardState) -> None:
        self.shard = shard
        # What a group without a `[group.overrides]` row inherits, per config name, for the
        # config the shard runs with (it is read on every heartbeat): (config, the groups
        # with a row, name -> value). Rebuilt when the shard's config object changes.
        self._inherits: tuple[GroupConfig, frozenset[str], dict[str, int | str]] | None = None
        # A group's dynamic configs as typed values, looked up by name on every heartbeat:
        # group id -> (the stored tuple they were parsed from, name -> value or _UNSET). The
        # stored tuple is replaced whole on a change, so its identity says when to parse again.
        self._parsed: dict[str, tuple[tuple, dict[str, object]]] = {}

    # ---- what a group runs with -------------------------------------------------------

    def value(self, group_id: str, name: str) -> int | str:
        """The effective value of config ``name`` for ``group_id``, typed (int, or str)."""
        dynamic = self.shard.stored.group_configs.get(group_id)
        if dynamic:
            parsed = self._parsed.get(group_id)
            if parsed is None or parsed[0] is not dynamic:
                parsed = self._parsed[group_id] = (dynamic, {})
            value = parsed[1].get(name)
            if value is None:
                value = next((GROUP_CONFIGS[name].parse(raw) for key, raw in dynamic if key == name), _UNSET)
                parsed[1][name] = value
            if value is not _UNSET:
                return value  # type: ignore[return-value]
        return self._inherited(group_id, name)

    def int_value(self, group_id: str, name: str) -> int:
        return int(self.value(group_id, name))

    def consumer_session_timeout(self, group_id: str) -> int:
        return self.int_value(group_id, CONSUMER_SESSION_TIMEOUT)

    def consumer_heartbeat_interval(self, group_id: str) -> int:
        return self.int_value(group_id, CONSUMER_HEARTBEAT_INTERVAL)

    # ---- IncrementalAlterConfigs / AlterConfigs ---------------------------------------

    def alter(self, req: AlterGroupConfigsRequest, reply: ReplyTo, now_ms: int) -> Result:
        """Check and apply changes to a group's dynamic configs; replies None when done."""
        # 1. The group id and every name must be known, each op fit for its (int or string) config.
        if not req.group_id:
            raise GroupError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        current = dict(self.shard.stored.group_configs.get(req.group_id, ()))
        updated = dict(current) if req.incremental else {}
        for name, op, value in req.changes:
            if name not in GROUP_CONFIGS:
                # Kafka's words; `kgroup groups alter-config` adds the valid names as a hint.
                raise _invalid(f"Unknown group config name: {name}")
            if op == ConfigOp.DELETE:
                updated.pop(name, None)
            elif op == ConfigOp.SET:
                updated[name] = str(GROUP_CONFIGS[name].parse(value))
            elif op in (ConfigOp.APPEND, ConfigOp.SUBTRACT):
                raise _invalid(f"{ConfigOp(op).name} is only for list configs; {name} is "
                               f"{'a string' if GROUP_CONFIGS[name].choices else 'an int'}")
            else:
                raise GroupError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
        # 2. Bounds, then the pairs, on the values the group would run with.
        for name, raw in updated.items():
            problem = GROUP_CONFIGS[name].bounds_problem(self.shard.config, GROUP_CONFIGS[name].parse(raw))
            if problem is not None:
                raise _invalid(problem)
        for session, heartbeat in PAIRS:
            s = int(updated[session]) if session in updated else int(self._inherited(req.group_id, session))
            h = int(updated[heartbeat]) if heartbeat in updated else int(self._inherited(req.group_id, heartbeat))
            if s <= h:
                raise _invalid(f"{session} ({s}) must be greater than {heartbeat} ({h})")
        # 3. One record holding the whole new set (a tombstone once none is left).
        if req.validate_only or updated == current:
            return Result((), ((reply, None),))
        value = tuple(sorted(updated.items())) or None
        return Result((GroupConfigRecord(req.group_id, value),), ((reply, None),))

    def _inherited(self, group_id: str, name: str) -> int | str:
        config = self.shard.config
        memo = self._inherits
        if memo is None or memo[0] is not config:
            memo = self._inherits = (config, overridden_groups(config), {})
        if group_id in memo[1]:
            return configured_value(config, group_id, name)
        value = memo[2].get(name)
        if value is None:
            value = memo[2][name] = configured_value(config, group_id, name)
        return value

    # ---- DescribeConfigs --------------------------------------------------------------

    def describe(self, group_id: str, reply: ReplyTo, now_ms: int) -> Result:
        """Every known config of ``group_id`` with its value, source and synonyms."""
        if not group_id:
            raise GroupError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        dynamic = dict(self.shard.stored.group_configs.get(group_id, ()))
        config = self.shard.config
        described = []
        for name in sorted(GROUP_CONFIGS):
            d = GROUP_CONFIGS[name]
            chain: list[tuple[str, str, ConfigSource]] = []
            if name in dynamic:
                chain.append((name, dynamic[name], ConfigSource.GROUP_CONFIG))
            override = d.toml_override(config, group_id)
            if override is not None:
                chain.append((name, str(override), ConfigSource.STATIC_BROKER_CONFIG))
            # The broker's setting: STATIC_BROKER_CONFIG when its `[group]` table changed it, or
            # kgroup's default is not Kafka's (Kafka's source for a default set in
            # server.properties), else DEFAULT_CONFIG. A changed one is followed by the
            # built-in default, as Kafka lists both.
            base = d.default(_built_in()) if d.kafka_default is None else d.kafka_default
            changed = str(d.default(config)) != str(base)
            if changed:
                chain.append((d.broker_name, str(d.default(config)), ConfigSource.STATIC_BROKER_CONFIG))
            chain.append((d.broker_name, str(base), ConfigSource.DEFAULT_CONFIG))
            if d.internal and len(chain) == 1:
                continue                # Kafka lists an internal config only once it is set
            described.append(DescribedGroupConfig(name, chain[0][1], chain[0][2], tuple(chain), d.doc, d.type_name))
        return Result((), ((reply, tuple(described)),))


class KindConfigs:
    """One modern group kind's configs as its groups run with them: a group's dynamic value
    over the broker's default, read on every call so that a change applies from the next
    heartbeat. A kind names its session timeout and heartbeat interval configs and adds
    lookups of its own."""

    SESSION_TIMEOUT: ClassVar[str]
    HEARTBEAT_INTERVAL: ClassVar[str]

    def __init__(self, shard: ShardState) -> None:
        self.configs = GroupConfigs(shard)

    def session_timeout(self, group_id: str) -> int:
        return self.configs.int_value(group_id, self.SESSION_TIMEOUT)

    def heartbeat_interval(self, group_id: str) -> int:
        return self.configs.int_value(group_id, self.HEARTBEAT_INTERVAL)


@cache
def _built_in() -> GroupConfig:
    return GroupConfig()
def configured_value(config: GroupConfig, group_id: str, name: str) -> int | str:
    """The value of config ``name`` for ``group_id`` without dynamic configs: its
    `[group.overrides]` entry, else the broker's setting."""
    d = GROUP_CONFIGS[name]
    override = d.toml_override(config, group_id)
    return d.default(config) if override is None else override


def replay_group_config(shard: ShardState, record: GroupConfigRecord) -> None:
    """Apply a GroupConfigRecord to stored state."""
    if record.configs is None:
        shard.stored.group_configs.pop(record.group_id, None)
    else:
        shard.stored.group_configs[record.group_id] = record.configs
