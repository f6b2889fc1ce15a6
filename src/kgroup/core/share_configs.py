"""The share.* group configs (KIP-932): names, broker defaults, bounds, and a group's value.

How this works: `SHARE_GROUP_CONFIGS` is the table of the share-group configs, each with the
broker setting of its default (the TOML `[group]` table's `share_*` keys, Kafka's
`group.share.*` names), its bounds and how its text is checked. A group's value is its
dynamic config (set with IncrementalAlterConfigs on the GROUP resource and kept in the
group-metadata log, `stored.group_configs`) or else the broker's default. The lower bounds
are looser than Kafka's (a 1 s record lock, a 1 s session) so tests can run fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from kgroup.core.share_partition import ShareLimits

if TYPE_CHECKING:
    from kgroup.core.config import GroupConfig

SESSION_TIMEOUT = "share.session.timeout.ms"
HEARTBEAT_INTERVAL = "share.heartbeat.interval.ms"
RECORD_LOCK_DURATION = "share.record.lock.duration.ms"
DELIVERY_COUNT_LIMIT = "share.delivery.count.limit"
AUTO_OFFSET_RESET = "share.auto.offset.reset"
MAX_RECORD_LOCKS = "share.partition.max.record.locks"

AUTO_OFFSET_RESETS = ("latest", "earliest")


@dataclass(frozen=True, slots=True)
class ShareConfigDef:
    name: str
    broker_name: str                          # Kafka's broker setting of the default
    toml_key: str                             # our [group] key
    default: Callable[["GroupConfig"], object]
    check: Callable[[str], object]            # text -> value, ValueError if out of bounds
    doc: str


def _int_between(low: int, high: int) -> Callable[[str], int]:
    def check(text: str) -> int:
        value = int(str(text).strip())
        if not low <= value <= high:
            raise ValueError(f"must be between {low} and {high}, not {value}")
        return value
    return check


def _reset(text: str) -> str:
    value = str(text).strip().lower()
    if value not in AUTO_OFFSET_RESETS:
        raise ValueError(f"must be one of {', '.join(AUTO_OFFSET_RESETS)}, not {text!r}")
    return value


SHARE_GROUP_CONFIGS: Mapping[str, ShareConfigDef] = MappingProxyType({d.name: d for d in (
    ShareConfigDef(SESSION_TIMEOUT, "group.share.session.timeout.ms", "share_session_timeout_ms",
                   lambda c: c.share_session_timeout_ms, _int_between(1_000, 3_600_000),
                   "The timeout to detect client failures of a share group member."),
    ShareConfigDef(HEARTBEAT_INTERVAL, "group.share.heartbeat.interval.ms", "share_heartbeat_interval_ms",
                   lambda c: c.share_heartbeat_interval_ms, _int_between(100, 3_600_000),
                   "The heartbeat interval given to the members of a share group."),
    ShareConfigDef(RECORD_LOCK_DURATION, "group.share.record.lock.duration.ms", "share_record_lock_duration_ms",
                   lambda c: c.share_record_lock_duration_ms, _int_between(1_000, 3_600_000),
                   "How long a share group member holds an acquired record."),
    ShareConfigDef(DELIVERY_COUNT_LIMIT, "group.share.delivery.count.limit", "share_delivery_count_limit",
                   lambda c: c.share_delivery_count_limit, _int_between(2, 10),
                   "How many times a record is delivered before it is archived."),
    ShareConfigDef(AUTO_OFFSET_RESET, "share.auto.offset.reset", "share_auto_offset_reset",
                   lambda c: c.share_auto_offset_reset, _reset,
                   "Where a share partition starts when it has no state: latest or earliest."),
    ShareConfigDef(MAX_RECORD_LOCKS, "group.share.partition.max.record.locks", "share_partition_max_record_locks",
                   lambda c: c.share_partition_max_record_locks, _int_between(100, 10_000),
                   "The most in-flight records of one share partition."),
)})


def check_broker_share_configs(config: "GroupConfig") -> None:
    """Raise ValueError unless every broker-wide share default is within its bounds."""
    for d in SHARE_GROUP_CONFIGS.values():
        try:
            d.check(str(d.default(config)))
        except ValueError as exc:
            raise ValueError(f"[group] {d.toml_key}: {exc}") from None
    if config.share_heartbeat_interval_ms >= config.share_session_timeout_ms:
        raise ValueError("[group] share_heartbeat_interval_ms must be below share_session_timeout_ms")
    if config.share_max_size < 1:
        raise ValueError("[group] share_max_size must be >= 1")


class ShareConfigs:
    """A share group's configs: its dynamic values over the broker's defaults."""

    def __init__(self, config: "GroupConfig", dynamic: Mapping[str, tuple[tuple[str, str], ...]]) -> None:
        self.config = config
        self.dynamic = dynamic            # group id -> ((name, value), ...), replayed state

    def value(self, group_id: str, name: str) -> object:
        d = SHARE_GROUP_CONFIGS[name]
        for key, raw in self.dynamic.get(group_id, ()):
            if key == name:
                return d.check(raw)
        return d.default(self.config)

    def session_timeout(self, group_id: str) -> int:
        return int(self.value(group_id, SESSION_TIMEOUT))  # type: ignore[arg-type]

    def heartbeat_interval(self, group_id: str) -> int:
        return int(self.value(group_id, HEARTBEAT_INTERVAL))  # type: ignore[arg-type]

    def auto_offset_reset(self, group_id: str) -> str:
        return str(self.value(group_id, AUTO_OFFSET_RESET))

    def limits(self, group_id: str) -> ShareLimits:
        """What the group's share partitions run with."""
        return ShareLimits(int(self.value(group_id, RECORD_LOCK_DURATION)),  # type: ignore[arg-type]
                           int(self.value(group_id, DELIVERY_COUNT_LIMIT)),  # type: ignore[arg-type]
                           int(self.value(group_id, MAX_RECORD_LOCKS)))  # type: ignore[arg-type]
