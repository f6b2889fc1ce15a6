"""The broker's own settings under their Kafka names, for DescribeConfigs on a BROKER resource.

These are their static values (the TOML file and the flags of `kgroup serve`), with
whether they are the defaults (source DEFAULT_CONFIG) or were set (STATIC_BROKER_CONFIG);
dynamic_configs.py lays the dynamic values of those Kafka lets change at run time over them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from kgroup.broker.config import BrokerConfig
from kgroup.broker.data.topic_configs import ConfigType
from kgroup.core.config import GroupConfig
from kgroup.core.transactions.config import TransactionConfig
from kgroup.storage.config import LogConfig


@dataclass(frozen=True, slots=True)
class BrokerSetting:
    name: str                           # Kafka's broker property
    key: str                            # our BrokerConfig field ("group." prefix: GroupConfig,
                                        # "transactions.": TransactionConfig, "log.": a fixed LogConfig value)
    type: ConfigType
    show: Callable[[object], str] = str


def _listener(address: tuple[str, int]) -> str:
    return f"PLAINTEXT://{address[0]}:{address[1]}"


def _bool(value: object) -> str:
    return "true" if value else "false"


SETTINGS: tuple[BrokerSetting, ...] = (
    BrokerSetting("node.id", "node_id", ConfigType.INT),
    BrokerSetting("broker.id", "node_id", ConfigType.INT),
    BrokerSetting("log.dirs", "data_dir", ConfigType.STRING),
    BrokerSetting("offsets.topic.num.partitions", "metadata_partitions", ConfigType.INT),
    BrokerSetting("socket.request.max.bytes", "max_request_bytes", ConfigType.INT),
    BrokerSetting("auto.create.topics.enable", "auto_create_topics", ConfigType.BOOLEAN, _bool),
    BrokerSetting("num.partitions", "default_partitions", ConfigType.INT),
    BrokerSetting("errors.deadletterqueue.topic.name.prefix", "dlq_topic_name_prefix", ConfigType.STRING),
    BrokerSetting("errors.deadletterqueue.auto.create.topics.enable", "dlq_auto_create_topics", ConfigType.BOOLEAN,
                  _bool),
    BrokerSetting("log.segment.bytes", "log_segment_bytes", ConfigType.INT),
    BrokerSetting("log.retention.ms", "log_retention_ms", ConfigType.LONG),
    BrokerSetting("log.retention.bytes", "log_retention_bytes", ConfigType.LONG),
    BrokerSetting("log.retention.check.interval.ms", "log_retention_check_interval_ms", ConfigType.LONG),
    BrokerSetting("message.max.bytes", "max_message_bytes", ConfigType.INT),
    BrokerSetting("group.min.session.timeout.ms", "group.min_session_timeout_ms", ConfigType.INT),
    BrokerSetting("group.max.session.timeout.ms", "group.max_session_timeout_ms", ConfigType.INT),
    BrokerSetting("group.initial.rebalance.delay.ms", "group.initial_rebalance_delay_ms", ConfigType.INT),
    BrokerSetting("group.max.size", "group.max_group_size", ConfigType.INT),
    BrokerSetting("offsets.retention.minutes", "group.offsets_retention_ms", ConfigType.INT,
                  lambda ms: str(int(ms) // 60_000)),
    BrokerSetting("offsets.retention.check.interval.ms", "group.offsets_retention_check_interval_ms",
                  ConfigType.LONG),
    BrokerSetting("offset.metadata.max.bytes", "group.offset_metadata_max_bytes", ConfigType.INT),
    BrokerSetting("group.consumer.session.timeout.ms", "group.consumer_session_timeout_ms", ConfigType.INT),
    BrokerSetting("group.consumer.min.session.timeout.ms", "group.consumer_min_session_timeout_ms",
                  ConfigType.INT),
    BrokerSetting("group.consumer.max.session.timeout.ms", "group.consumer_max_session_timeout_ms",
                  ConfigType.INT),
    BrokerSetting("group.consumer.heartbeat.interval.ms", "group.consumer_heartbeat_interval_ms", ConfigType.INT),
    BrokerSetting("group.consumer.min.heartbeat.interval.ms", "group.consumer_min_heartbeat_interval_ms",
                  ConfigType.INT),
    BrokerSetting("group.consumer.max.heartbeat.interval.ms", "group.consumer_max_heartbeat_interval_ms",
                  ConfigType.INT),
    BrokerSetting("group.consumer.assignors", "group.consumer_assignors", ConfigType.LIST, ",".join),
    BrokerSetting("group.consumer.max.size", "group.consumer_max_size", ConfigType.INT),
    BrokerSetting("group.consumer.migration.policy", "group.consumer_migration_policy", ConfigType.STRING),
    BrokerSetting("producer.id.expiration.ms", "transactions.producer_id_expiration_ms", ConfigType.INT),
    BrokerSetting("log.index.interval.bytes", "log.index_interval_bytes", ConfigType.INT),
)

_BROKER_DEFAULTS = {f.name: f.default for f in dataclasses.fields(BrokerConfig)
                    if f.default is not dataclasses.MISSING}
_GROUP_DEFAULTS = GroupConfig()
_TXN_DEFAULTS = TransactionConfig()
_LOG_DEFAULTS = LogConfig()


@dataclass(frozen=True, slots=True)
class DescribedBrokerConfig:
    name: str
    value: str
    type: ConfigType
    is_default: bool


def describe(config: BrokerConfig) -> list[DescribedBrokerConfig]:
    """Every setting above, plus the listeners, as the broker runs with them."""
    out = [DescribedBrokerConfig("listeners", _listener((config.listen_host, config.listen_port)),
                                 ConfigType.STRING, False),
           DescribedBrokerConfig("advertised.listeners", _listener(config.advertised), ConfigType.STRING, False)]
    for s in SETTINGS:
        if s.key.startswith("group."):
            field = s.key.removeprefix("group.")
            value, default = getattr(config.group, field), getattr(_GROUP_DEFAULTS, field)
        elif s.key.startswith("transactions."):
            field = s.key.removeprefix("transactions.")
            value, default = getattr(config.transactions, field), getattr(_TXN_DEFAULTS, field)
        elif s.key.startswith("log."):
            value = default = getattr(_LOG_DEFAULTS, s.key.removeprefix("log."))
        else:
            value, default = getattr(config, s.key), _BROKER_DEFAULTS.get(s.key)
        out.append(DescribedBrokerConfig(s.name, s.show(value), s.type, value == default))
    return out
