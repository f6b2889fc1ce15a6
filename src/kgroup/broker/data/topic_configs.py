"""Topic configs: Kafka's names, their types and defaults, and which ones kgroup acts on.

A topic config a client sets (CreateTopics, AlterConfigs, IncrementalAlterConfigs) must be
one of Kafka 4.x's topic config names, with a value of its type; anything else is refused
with INVALID_CONFIG naming the valid ones, so a typo (`retention.mss`) never passes
silently. Configs marked `honoured` change what the broker does (storage applies
`retention.ms`, `retention.bytes`, `segment.bytes`, `index.interval.bytes`; Produce applies
`max.message.bytes`); the others are kept and described as set, so tools that set them
(Kafka Streams sets `cleanup.policy=compact` on its changelogs) work, but change nothing.
Defaults come from the broker's settings where Kafka has a broker synonym.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType

from kgroup.broker.config import BrokerConfig

LONG_MAX = str(2**63 - 1)


class ConfigType(IntEnum):
    """DescribeConfigs config types, with Kafka's numbers."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigProblem(ValueError):
    """A topic config name or value is not acceptable; the message says why."""


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    type: ConfigType
    default: Callable[[BrokerConfig], str]
    synonym: str | None = None        # the broker setting the default comes from
    honoured: bool = False
    choices: tuple[str, ...] = ()     # allowed values (each item, for a list)
    minimum: int | None = None
    doc: str | None = None


def _fixed(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _config: value


_DEFS = (
    TopicConfigDef("cleanup.policy", ConfigType.LIST, _fixed("delete"), "log.cleanup.policy",
                   choices=("delete", "compact"),
                   doc="delete: old segments go by retention; compact is kept but not applied"),
    TopicConfigDef("compression.type", ConfigType.STRING, _fixed("producer"), "compression.type",
                   choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    TopicConfigDef("compression.gzip.level", ConfigType.INT, _fixed("-1")),
    TopicConfigDef("compression.lz4.level", ConfigType.INT, _fixed("9")),
    TopicConfigDef("compression.zstd.level", ConfigType.INT, _fixed("3")),
    TopicConfigDef("delete.retention.ms", ConfigType.LONG, _fixed("86400000"), minimum=0),
    TopicConfigDef("errors.deadletterqueue.group.enable", ConfigType.BOOLEAN, _fixed("false"), honoured=True,
                   doc="share groups may write dead letters here (KIP-1191)"),
    TopicConfigDef("file.delete.delay.ms", ConfigType.LONG, _fixed("60000"), minimum=0),
    TopicConfigDef("flush.messages", ConfigType.LONG, _fixed(LONG_MAX), minimum=1),
    TopicConfigDef("flush.ms", ConfigType.LONG, _fixed(LONG_MAX), minimum=0),
    TopicConfigDef("follower.replication.throttled.replicas", ConfigType.LIST, _fixed("")),
    TopicConfigDef("index.interval.bytes", ConfigType.INT, _fixed("4096"), honoured=True, minimum=0,
                   doc="bytes between entries of a segment's offset index"),
    TopicConfigDef("leader.replication.throttled.replicas", ConfigType.LIST, _fixed("")),
    TopicConfigDef("local.retention.bytes", ConfigType.LONG, _fixed("-2"), minimum=-2),
    TopicConfigDef("local.retention.ms", ConfigType.LONG, _fixed("-2"), minimum=-2),
    TopicConfigDef("max.compaction.lag.ms", ConfigType.LONG, _fixed(LONG_MAX), minimum=1),
    TopicConfigDef("max.decompressed.message.bytes", ConfigType.INT, _fixed("2147483639"), minimum=1),
    TopicConfigDef("max.message.bytes", ConfigType.INT, lambda c: str(c.max_message_bytes), "message.max.bytes",
                   honoured=True, minimum=0, doc="largest record batch Produce accepts"),
    TopicConfigDef("message.timestamp.after.max.ms", ConfigType.LONG, _fixed("3600000"), minimum=0),
    TopicConfigDef("message.timestamp.before.max.ms", ConfigType.LONG, _fixed(LONG_MAX), minimum=0),
    TopicConfigDef("message.timestamp.type", ConfigType.STRING, _fixed("CreateTime"),
                   choices=("CreateTime", "LogAppendTime")),
    TopicConfigDef("min.cleanable.dirty.ratio", ConfigType.DOUBLE, _fixed("0.5")),
    TopicConfigDef("min.compaction.lag.ms", ConfigType.LONG, _fixed("0"), minimum=0),
    TopicConfigDef("min.insync.replicas", ConfigType.INT, _fixed("1"), minimum=1),
    TopicConfigDef("preallocate", ConfigType.BOOLEAN, _fixed("false")),
    TopicConfigDef("remote.copy.lag.bytes", ConfigType.LONG, _fixed("-1"), minimum=-1),
    TopicConfigDef("remote.copy.lag.ms", ConfigType.LONG, _fixed("0"), minimum=-1),
    TopicConfigDef("remote.log.copy.disable", ConfigType.BOOLEAN, _fixed("false")),
    TopicConfigDef("remote.log.delete.on.disable", ConfigType.BOOLEAN, _fixed("false")),
    TopicConfigDef("remote.storage.enable", ConfigType.BOOLEAN, _fixed("false")),
    TopicConfigDef("retention.bytes", ConfigType.LONG, lambda c: str(c.log_retention_bytes), "log.retention.bytes",
                   honoured=True, minimum=-1, doc="bytes a partition keeps before old segments go (-1: no limit)"),
    TopicConfigDef("retention.ms", ConfigType.LONG, lambda c: str(c.log_retention_ms), "log.retention.ms",
                   honoured=True, minimum=-1, doc="how long records are kept (-1: forever)"),
    TopicConfigDef("segment.bytes", ConfigType.INT, lambda c: str(c.log_segment_bytes), "log.segment.bytes",
                   honoured=True, minimum=64, doc="segment size before the log rolls a new one"),
    TopicConfigDef("segment.index.bytes", ConfigType.INT, _fixed("10485760"), minimum=4),
    TopicConfigDef("segment.jitter.ms", ConfigType.LONG, _fixed("0"), minimum=0),
    TopicConfigDef("segment.ms", ConfigType.LONG, _fixed("604800000"), minimum=1),
    TopicConfigDef("unclean.leader.election.enable", ConfigType.BOOLEAN, _fixed("false")),
)

TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = MappingProxyType({d.name: d for d in _DEFS})
_INT_RANGE = {ConfigType.INT: (-(2**31), 2**31 - 1), ConfigType.LONG: (-(2**63), 2**63 - 1)}


def unknown_name(name: str, known: Mapping[str, object] | None = None, what: str = "topic") -> ConfigProblem:
    """The error for a config name not in ``known`` (topic configs): a close match, then the list."""
    known = TOPIC_CONFIGS if known is None else known
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return ConfigProblem(f"Unknown {what} config name: {name}{hint}; valid names: {', '.join(sorted(known))}")


def check_value(name: str, value: str | None) -> str:
    """``value`` as stored for topic config ``name``; ConfigProblem if it is not valid."""
    d = TOPIC_CONFIGS.get(name)
    if d is None:
        raise unknown_name(name)
    if value is None:
        raise ConfigProblem(f"Null value not supported for topic config {name}")
    text = value.strip()
    bad = ConfigProblem(f"Invalid value {value} for configuration {name}: not a {d.type.name.lower()}")
    if d.type in _INT_RANGE:
        try:
            number = int(text)
        except ValueError:
            raise bad from None
        lo, hi = _INT_RANGE[d.type]
        if not lo <= number <= hi:
            raise bad
        if d.minimum is not None and number < d.minimum:
            raise ConfigProblem(f"Invalid value {value} for configuration {name}: "
                                f"Value must be at least {d.minimum}")
        return str(number)
    if d.type is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise bad
        return text.lower()
    if d.type is ConfigType.DOUBLE:
        try:
            float(text)
        except ValueError:
            raise bad from None
        return text
    items = [i.strip() for i in text.split(",") if i.strip()] if d.type is ConfigType.LIST else [text]
    if d.choices:
        wrong = [i for i in items if i not in d.choices]
        if wrong:
            raise ConfigProblem(f"Invalid value {value} for configuration {name}: "
                                f"String must be one of: {', '.join(d.choices)}")
    return ",".join(items) if d.type is ConfigType.LIST else text


def checked(configs: Mapping[str, str | None]) -> dict[str, str]:
    """Every name and value checked (check_value); raises ConfigProblem on the first bad one."""
    return {name: check_value(name, value) for name, value in configs.items()}


@dataclass(frozen=True, slots=True)
class DescribedTopicConfig:
    name: str
    value: str
    type: ConfigType
    from_topic: bool
    # (name, value, from_topic) for the topic's value, then the broker setting's
    synonyms: tuple[tuple[str, str, bool], ...]
    doc: str | None


def describe(config: BrokerConfig, topic_configs: Mapping[str, str]) -> list[DescribedTopicConfig]:
    """Every topic config with its value for a topic that set ``topic_configs``."""
    out = []
    for name, d in TOPIC_CONFIGS.items():
        default = d.default(config)
        chain = []
        if name in topic_configs:
            chain.append((name, topic_configs[name], True))
        if d.synonym is not None:
            chain.append((d.synonym, default, False))
        value = topic_configs.get(name, default)
        out.append(DescribedTopicConfig(name, value, d.type, name in topic_configs, tuple(chain), d.doc))
    return out
