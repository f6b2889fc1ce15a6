"""The options of the ``kgroup`` Spark source and sink, checked once, up front.

Names follow Spark's own Kafka connector where it has one (``kafka.bootstrap.servers``,
``subscribe``, ``subscribePattern``, ``assign``, ``startingOffsets``, ``endingOffsets``,
``maxOffsetsPerTrigger``, ``minPartitions``, ``maxRecordsPerPartition``,
``failOnDataLoss``, ``topic``); ``group.id``, ``group.mode``, ``group.instance.id`` and
``group.protocol`` are ours. Any other ``kafka.<name>`` is a setting of kgroup's consumer
(source) or producer (sink), by Kafka's name, e.g. ``kafka.session.timeout.ms``.

Spark hands options over with lower-cased names; every mistake raises ``OptionError``
naming the option as the user spelled it in the documentation, before anything connects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kgroup.client.settings import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS
from kgroup.group_types import CLASSIC, CONSUMER

EARLIEST = -2
LATEST = -1

# Offsets as Spark's Kafka source writes them: {"topic": {"0": 23, "1": -2}}.
PartitionOffsets = dict[tuple[str, int], int]

# Options Spark itself adds or that belong to the query, not to us.
_SPARK_OWN = frozenset({"path", "checkpointlocation", "queryname"})
# Consumer settings the source decides itself (group membership, what to read).
_SOURCE_FIXED = frozenset({"bootstrap.servers", "group.id", "group.instance.id",
                           "group.protocol", "enable.auto.commit", "auto.offset.reset"})
_PRODUCER_FIXED = frozenset({"bootstrap.servers"})
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


class OptionError(ValueError):
    """A bad option of the kgroup source or sink; the message names the option."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """What to read and how; see the module comment for the names."""

    bootstrap: str
    subscribe: tuple[str, ...] = ()
    pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting: str | PartitionOffsets | None = None   # None: the mode's default
    ending: str | PartitionOffsets | None = None
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    group_id: str | None = None
    group_member: bool = False
    group_instance_id: str | None = None
    group_protocol: str = CLASSIC.name
    consumer: Mapping[str, Any] = field(default_factory=dict)

    def topics_wanted(self) -> str:
        """How the subscription reads in an error message."""
        if self.assign:
            return "assign " + ",".join(f"{t}-{p}" for t, p in self.assign)
        if self.pattern is not None:
            return f"subscribePattern {self.pattern}"
        return "subscribe " + ",".join(self.subscribe)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """Where to write: bootstrap servers, a default topic, producer settings."""

    bootstrap: str
    topic: str | None = None
    producer: Mapping[str, Any] = field(default_factory=dict)


# -- the source ------------------------------------------------------------------------


def source_options(raw: Mapping[str, str]) -> SourceOptions:
    """Check the source's options; OptionError names the first bad one."""
    opts = {str(k).lower(): v for k, v in raw.items()}
    known = {"kafka.bootstrap.servers", "bootstrap.servers", "subscribe", "subscribepattern",
             "assign", "startingoffsets", "endingoffsets", "maxoffsetspertrigger",
             "minpartitions", "maxrecordsperpartition", "failondataloss", "group.id",
             "group.mode", "group.instance.id", "group.protocol"}
    consumer = _kafka_settings(opts, known, CONSUMER_DEFAULTS, _SOURCE_FIXED, "consumer")
    bootstrap = _bootstrap(opts)

    chosen = [name for name in ("subscribe", "subscribePattern", "assign") if opts.get(name.lower())]
    if len(chosen) != 1:
        given = " and ".join(chosen) if chosen else "none of them"
        raise OptionError(f"set exactly one of the options subscribe, subscribePattern and "
                          f"assign (got {given})")
    subscribe: tuple[str, ...] = ()
    pattern = None
    assign: tuple[tuple[str, int], ...] = ()
    if chosen[0] == "subscribe":
        subscribe = tuple(sorted({t.strip() for t in opts["subscribe"].split(",") if t.strip()}))
        for t in subscribe:
            _check_topic(t, "subscribe")
        if not subscribe:
            raise OptionError("option subscribe: give a comma-separated list of topics")
    elif chosen[0] == "subscribePattern":
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"option subscribePattern: {pattern!r} is not a regular "
                              f"expression ({exc})") from None
    else:
        assign = _assign(opts["assign"])

    group_id = opts.get("group.id") or None
    mode = (opts.get("group.mode") or "").strip().lower()
    if mode not in ("", "member"):
        raise OptionError(f"option group.mode: {opts['group.mode']!r} is not a mode; the only "
                          "one is 'member' (leave it unset to read without membership)")
    member = mode == "member"
    if member and not group_id:
        raise OptionError("option group.mode=member needs option group.id")
    if member and assign:
        raise OptionError("option group.mode=member reads what the group assigns; use "
                          "subscribe or subscribePattern instead of assign")
    instance = opts.get("group.instance.id") or None
    if instance and not member:
        raise OptionError("option group.instance.id only applies with group.mode=member")
    protocol = (opts.get("group.protocol") or "classic").strip().lower()
    if protocol not in (CLASSIC.name, CONSUMER.name):
        raise OptionError(f"option group.protocol: {opts['group.protocol']!r} must be "
                          "'classic' or 'consumer'")

    return SourceOptions(
        bootstrap=bootstrap, subscribe=subscribe, pattern=pattern, assign=assign,
        starting=_offsets_option(opts, "startingOffsets"),
        ending=_offsets_option(opts, "endingOffsets"),
        max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
        min_partitions=_positive(opts, "minPartitions"),
        max_records_per_partition=_positive(opts, "maxRecordsPerPartition"),
        fail_on_data_loss=_boolean(opts, "failOnDataLoss", True),
        group_id=group_id, group_member=member, group_instance_id=instance,
        group_protocol=protocol, consumer=consumer)


def check_batch(opts: SourceOptions) -> None:
    """What only a batch read rules out (Spark's Kafka source has the same rules)."""
    if opts.group_id:
        raise OptionError("option group.id is for streaming reads (readStream), whose "
                          "progress it commits; a batch read commits nothing")
    if opts.starting == "latest" or _has(opts.starting, LATEST):
        raise OptionError("option startingOffsets: 'latest' (-1) is not allowed in a batch "
                          "read; use 'earliest' or offsets")
    if opts.ending == "earliest" or _has(opts.ending, EARLIEST):
        raise OptionError("option endingOffsets: 'earliest' (-2) is not allowed in a batch "
                          "read; use 'latest' or offsets")
    if opts.max_offsets_per_trigger is not None:
        raise OptionError("option maxOffsetsPerTrigger is for streaming reads")


def check_stream(opts: SourceOptions) -> None:
    """What only a streaming read rules out."""
    if opts.ending is not None:
        raise OptionError("option endingOffsets is for batch reads; a stream has no end "
                          "(use Trigger.AvailableNow to stop at the offsets of its start)")
    if opts.group_member and isinstance(opts.starting, dict):
        raise OptionError("option startingOffsets: with group.mode=member a partition starts "
                          "at the group's committed offset; give 'earliest' or 'latest' for "
                          "partitions the group has no offset for")


def _has(spec: str | PartitionOffsets | None, value: int) -> bool:
    return isinstance(spec, dict) and value in spec.values()


# -- the sink ----------------------------------------------------------------------------


def sink_options(raw: Mapping[str, str]) -> SinkOptions:
    """Check the sink's options; OptionError names the first bad one."""
    opts = {str(k).lower(): v for k, v in raw.items()}
    known = {"kafka.bootstrap.servers", "bootstrap.servers", "topic"}
    producer = _kafka_settings(opts, known, PRODUCER_DEFAULTS, _PRODUCER_FIXED, "producer")
    topic = opts.get("topic") or None
    if topic is not None:
        _check_topic(topic, "topic")
    return SinkOptions(bootstrap=_bootstrap(opts), topic=topic, producer=producer)


# -- pieces ------------------------------------------------------------------------------


def _bootstrap(opts: Mapping[str, str]) -> str:
    value = opts.get("kafka.bootstrap.servers") or opts.get("bootstrap.servers")
    if not value or not value.strip():
        raise OptionError("option kafka.bootstrap.servers is missing: give the broker as "
                          "host:port, e.g. .option('kafka.bootstrap.servers', '127.0.0.1:9092')")
    from kgroup.client.cluster import parse_bootstrap

    try:
        parse_bootstrap(value)
    except ValueError as exc:
        raise OptionError(f"option kafka.bootstrap.servers: {exc}") from None
    return value.strip()


def _kafka_settings(opts: Mapping[str, str], known: set[str], defaults: Mapping[str, Any],
                    fixed: frozenset[str], who: str) -> dict[str, Any]:
    """``kafka.<setting>`` options as client settings; any other unknown name is an error."""
    out: dict[str, Any] = {}
    names = {n.lower(): n for n in defaults}
    for key, value in opts.items():
        if key in known or key in _SPARK_OWN:
            continue
        if not key.startswith("kafka."):
            raise OptionError(f"unknown option {key!r}; see the kgroup Spark options in the "
                              "README (client settings go as kafka.<name>)")
        name = key[len("kafka."):]
        if name == "group.id":
            raise OptionError("option kafka.group.id: use option group.id, which also commits "
                              "the query's progress to that group")
        if name not in names:
            raise OptionError(f"option {key}: {name!r} is not a setting of kgroup's {who}")
        if name in fixed:
            raise OptionError(f"option {key} is set by the kgroup source itself; see its "
                              "group.* options and startingOffsets")
        default = defaults[names[name]]
        if isinstance(default, bool):
            out[names[name]] = _bool_value(key, value)
        elif isinstance(default, int) and not (name == "acks" and str(value).lower() == "all"):
            try:
                out[names[name]] = int(value)
            except ValueError:
                raise OptionError(f"option {key}: {value!r} is not a whole number") from None
        else:
            out[names[name]] = value
    return out


def _check_topic(topic: str, option: str) -> None:
    if not _TOPIC.fullmatch(topic):
        raise OptionError(f"option {option}: {topic!r} is not a topic name (letters, digits, "
                          "'.', '_' and '-', at most 249)")


def _assign(text: str) -> tuple[tuple[str, int], ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option assign: not JSON ({exc.msg}); write "
                          '{"topic": [0, 1]}') from None
    if not isinstance(data, dict) or not data:
        raise OptionError('option assign: write a JSON object of topic -> partitions, '
                          'e.g. {"topic": [0, 1]}')
    out = []
    for topic, parts in data.items():
        _check_topic(topic, "assign")
        if not isinstance(parts, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
            raise OptionError(f"option assign: the partitions of {topic!r} must be a list of "
                              "partition numbers")
        out += [(topic, p) for p in parts]
    return tuple(sorted(set(out)))


def _offsets_option(opts: Mapping[str, str], name: str) -> str | PartitionOffsets | None:
    text = opts.get(name.lower())
    if text is None or not str(text).strip():
        return None
    text = str(text).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    if not text.startswith("{"):
        raise OptionError(f"option {name}: {text!r} is not 'earliest', 'latest' or JSON "
                          'offsets like {"topic": {"0": 23, "1": -2}}')
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OptionError(f"option {name}: not JSON ({exc.msg})") from None
    out: PartitionOffsets = {}
    if not isinstance(data, dict):
        raise OptionError(f"option {name}: write a JSON object of topic -> partition -> offset")
    for topic, parts in data.items():
        _check_topic(topic, name)
        if not isinstance(parts, dict):
            raise OptionError(f"option {name}: the value of {topic!r} must be an object of "
                              "partition -> offset")
        for p, off in parts.items():
            if not str(p).isdigit():
                raise OptionError(f"option {name}: {p!r} in {topic!r} is not a partition number")
            if not isinstance(off, int) or isinstance(off, bool) or off < EARLIEST:
                raise OptionError(f"option {name}: the offset of {topic}-{p} must be an offset, "
                                  "-2 (earliest) or -1 (latest)")
            out[(topic, int(p))] = off
    return out


def _positive(opts: Mapping[str, str], name: str) -> int | None:
    text = opts.get(name.lower())
    if text is None or str(text).strip() == "":
        return None
    try:
        value = int(str(text).strip())
    except ValueError:
        raise OptionError(f"option {name}: {text!r} is not a whole number") from None
    if value <= 0:
        raise OptionError(f"option {name}: must be at least 1 (got {value})")
    return value


def _boolean(opts: Mapping[str, str], name: str, default: bool) -> bool:
    text = opts.get(name.lower())
    if text is None:
        return default
    return _bool_value(name, text)


def _bool_value(name: str, text: Any) -> bool:
    value = str(text).strip().lower()
    if value not in ("true", "false"):
        raise OptionError(f"option {name}: {text!r} must be true or false")
    return value == "true"
