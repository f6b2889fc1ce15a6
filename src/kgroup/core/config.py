"""Coordinator settings, named and defaulted as Apache Kafka's broker names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Settings that shape classic-group and offset behaviour.

    Every field carries the Kafka broker property it mirrors, so an operator's existing
    numbers carry over.
    """

    # group.min.session.timeout.ms / group.max.session.timeout.ms
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    # group.initial.rebalance.delay.ms
    initial_rebalance_delay_ms: int = 3_000
    # group.max.size
    max_group_size: int = 2_147_483_647
    # offsets.retention.minutes (7 days), as milliseconds
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000
    # offsets.retention.check.interval.ms
    offsets_retention_check_interval_ms: int = 600_000
    # offset.metadata.max.bytes
    offset_metadata_max_bytes: int = 4096
    # Consumer protocol (KIP-848): group.consumer.* settings.
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    # group.consumer.assignors: the first is the default.
    consumer_assignors: tuple[str, ...] = ("uniform", "range")
    # group.consumer.max.size
    consumer_max_size: int = 2_147_483_647
    # group.consumer.assignment.interval.ms (KIP-1263): the target assignment is computed at
    # most once per interval (the group epoch still moves at once); 0 computes it at every
    # change. Kafka 4.4's default and bounds.
    consumer_assignment_interval_ms: int = 1_000
    consumer_min_assignment_interval_ms: int = 0
    consumer_max_assignment_interval_ms: int = 15_000
    # group.consumer.migration.policy: bidirectional | upgrade | downgrade | disabled
    consumer_migration_policy: str = "bidirectional"
    # Share groups (KIP-932): group.share.* broker settings, the defaults of the share.*
    # group configs. Their lower bounds are looser than Kafka's so tests can run fast.
    # The min/max settings bound the broker defaults and each group's share.* configs.
    share_session_timeout_ms: int = 45_000
    share_min_session_timeout_ms: int = 1_000
    share_max_session_timeout_ms: int = 60_000
    share_heartbeat_interval_ms: int = 5_000
    share_min_heartbeat_interval_ms: int = 100
    share_max_heartbeat_interval_ms: int = 15_000
    share_record_lock_duration_ms: int = 30_000
    share_min_record_lock_duration_ms: int = 1_000
    share_max_record_lock_duration_ms: int = 60_000
    share_delivery_count_limit: int = 5
    share_min_delivery_count_limit: int = 2
    share_max_delivery_count_limit: int = 10
    # latest | earliest (where a share partition starts when it has no state yet)
    share_auto_offset_reset: str = "latest"
    # read_uncommitted | read_committed (share.isolation.level: what share fetches deliver)
    share_isolation_level: str = "read_uncommitted"
    share_partition_max_record_locks: int = 2_000
    share_min_partition_max_record_locks: int = 100
    share_max_partition_max_record_locks: int = 10_000
    # group.share.assignment.interval.ms (KIP-1263), as for consumer groups.
    share_assignment_interval_ms: int = 1_000
    share_min_assignment_interval_ms: int = 0
    share_max_assignment_interval_ms: int = 15_000
    # group.share.max.size
    share_max_size: int = 200
    # Streams groups (KIP-1071): group.streams.* broker settings, the defaults of the
    # streams.* group configs, bounded by their min/max (lower bounds looser than Kafka's so
    # tests can run fast, as for share groups).
    streams_session_timeout_ms: int = 45_000
    streams_min_session_timeout_ms: int = 1_000
    streams_max_session_timeout_ms: int = 60_000
    streams_heartbeat_interval_ms: int = 5_000
    streams_min_heartbeat_interval_ms: int = 100
    streams_max_heartbeat_interval_ms: int = 15_000
    streams_num_standby_replicas: int = 0
    streams_min_num_standby_replicas: int = 0
    streams_max_num_standby_replicas: int = 2
    streams_num_warmup_replicas: int = 2
    streams_min_num_warmup_replicas: int = 0
    streams_max_num_warmup_replicas: int = 20
    streams_acceptable_recovery_lag: int = 10_000
    streams_min_acceptable_recovery_lag: int = 0
    streams_max_acceptable_recovery_lag: int = 2 ** 63 - 1
    streams_initial_rebalance_delay_ms: int = 3_000
    streams_min_initial_rebalance_delay_ms: int = 0
    streams_max_initial_rebalance_delay_ms: int = 2 ** 31 - 1
    streams_task_offset_interval_ms: int = 60_000
    streams_min_task_offset_interval_ms: int = 100
    streams_max_task_offset_interval_ms: int = 2 ** 31 - 1
    # group.streams.assignment.interval.ms: accepted for Kafka's tools; kgroup assigns at
    # once (as Kafka with an interval of 0).
    streams_assignment_interval_ms: int = 0
    streams_min_assignment_interval_ms: int = 0
    streams_max_assignment_interval_ms: int = 15_000
    # group.streams.max.size
    streams_max_size: int = 2_147_483_647
    # Not Kafka's: hand out KIP-441 warm-up tasks by reported lag (assignors/streams_warmups).
    # Kafka 4.4's assignment refiner is a no-op, so by default a stateful task moves to a
    # lagging process at once, as there; streams.num.warmup.replicas and
    # streams.acceptable.recovery.lag apply only with this on.
    streams_assign_warmups: bool = False
    # Per-group overrides of the consumer session timeout and heartbeat interval (Kafka's
    # group-level configs): ((group id, session timeout ms, heartbeat interval ms), ...).
    # What a group runs with is core/group_configs.py's to say (`GroupConfigs.value`, or
    # `configured_value` where no dynamic config can exist).
    consumer_group_overrides: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms must not exceed group.max.session.timeout.ms")
        if self.initial_rebalance_delay_ms < 0:
            raise ValueError("group.initial.rebalance.delay.ms must be >= 0")
        if self.max_group_size < 1:
            raise ValueError("group.max.size must be >= 1")
        if self.offsets_retention_ms < 1 or self.offsets_retention_check_interval_ms < 1:
            raise ValueError("offset retention settings must be positive")
        if not (self.consumer_min_session_timeout_ms <= self.consumer_session_timeout_ms
                <= self.consumer_max_session_timeout_ms):
            raise ValueError("group.consumer.session.timeout.ms must lie within its min and max")
        if not (self.consumer_min_heartbeat_interval_ms <= self.consumer_heartbeat_interval_ms
                <= self.consumer_max_heartbeat_interval_ms):
            raise ValueError("group.consumer.heartbeat.interval.ms must lie within its min and max")
        if self.consumer_heartbeat_interval_ms >= self.consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must be below the session timeout")
        if not (0 <= self.consumer_min_assignment_interval_ms <= self.consumer_assignment_interval_ms
                <= self.consumer_max_assignment_interval_ms):
            raise ValueError("group.consumer.assignment.interval.ms must lie within its min and max (min >= 0)")
        if self.consumer_migration_policy not in ("bidirectional", "upgrade", "downgrade", "disabled"):
            raise ValueError("group.consumer.migration.policy must be bidirectional, upgrade, downgrade or disabled")
        for gid, session, heartbeat in self.consumer_group_overrides:
            if not (self.consumer_min_session_timeout_ms <= session <= self.consumer_max_session_timeout_ms):
                raise ValueError(f"group {gid}: session timeout {session} ms is outside the broker's bounds")
            if not (self.consumer_min_heartbeat_interval_ms <= heartbeat <= self.consumer_max_heartbeat_interval_ms):
                raise ValueError(f"group {gid}: heartbeat interval {heartbeat} ms is outside the broker's bounds")
            if heartbeat >= session:
                raise ValueError(f"group {gid}: heartbeat interval must be below the session timeout")
        from kgroup.core.group_configs import (  # noqa: PLC0415 (cycle)
            SHARE_GROUP_CONFIGS,
            STREAMS_GROUP_CONFIGS,
            check_broker_defaults,
        )
        check_broker_defaults(self, "share", SHARE_GROUP_CONFIGS)
        check_broker_defaults(self, "streams", STREAMS_GROUP_CONFIGS)
        if not self.consumer_assignors:
            raise ValueError("group.consumer.assignors must name at least one assignor")
