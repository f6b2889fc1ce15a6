"""Scenarios for the rebalance lab: what a group looks like and what happens to it.

A scenario is plain data, usually read from YAML (see ``examples/lab/``):

    name: rolling-bounce
    seed: 7
    duration_s: 900
    topics: {orders: 60}
    coordinator: {initial_rebalance_delay_ms: 3000}      # any GroupConfig field
    network: {delay_ms: 1, jitter_ms: 0, request_timeout_ms: 30000}
    members:
      count: 20
      protocol: classic            # classic | consumer | streams (a streams: section, below)
      assignor: range              # classic: a client assignor (or a list, preferred first);
                                   # consumer: the server assignor (uniform | range)
      static: false                # group.instance.id set (= the member's name)
      session_timeout_ms: 10000
      heartbeat_interval_ms: 3000
      rebalance_timeout_ms: 300000 # max.poll.interval.ms
      processing_ms: 100           # time one poll's batch takes to process
      records_per_s: 100           # consumed per owned partition while consuming
      state_bytes_per_partition: 0
      auto_commit_interval_ms: 5000
      metadata_max_age_ms: 300000
      fatal_restart_ms: 10000      # a fatal group error kills the process; restarted after this
    streams: {num_standby_replicas: 1}  # a Kafka Streams app: partitions are tasks (StreamsSettings)
    events:
      - rolling_bounce: {at_s: 120, down_s: 5, interval_s: 30}
      - crash: {at_s: 600, member: 3, restart_after_s: 60}

Events (``at_s`` is when it starts; ``member`` is an index into the members, in start
order): ``bounce`` (clean close, back after ``down_s``), ``rolling_bounce`` (each member in
turn, ``interval_s`` apart, or ``members: [..]``), ``crash`` (no leave; back after
``restart_after_s`` if given), ``scale`` (``to`` members: new ones start, the newest close
cleanly), ``gc_pause`` (the member's process freezes ``duration_s``), ``network`` (the
member's link gets ``delay_ms``/``jitter_ms`` for ``duration_s``), ``cut`` (the member's
link drops everything for ``duration_s``), ``add_partitions`` (``topic`` grows ``to``
partitions), ``coordinator_restart`` (down ``down_s``, then the group-metadata log is
replayed), ``coordinator_failover`` (the coordinator's node dies: unreachable for
``detect_s`` until another node takes its partition over, which answers
COORDINATOR_LOAD_IN_PROGRESS for ``load_s`` while it replays the log, then serves), ``start`` / ``stop`` / ``kill`` (one member's process starts, closes cleanly, or
dies; what a recorded event stream becomes, see ``recorded``) and ``churn``, a generator: from ``from_s`` to ``to_s`` every ``every_s`` one of
``kinds`` (bounce, crash, gc_pause, cut) hits a member drawn with the scenario's seed.

Everything here is pure: ``parse_scenario`` takes the YAML text, ``timeline`` expands the
events into concrete, time-ordered actions (one expansion per ``ScenarioEventKind``, in one
table; each action is of an ``ActionKind``, which the engine runs through a table of its
own). Mistakes raise ``ScenarioError`` with the path of the offending field, so the CLI
can say exactly what to fix.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import partial
from typing import Any, Callable

import yaml

from kgroup.assignors import client_assignor_names, server_assignor_names
from kgroup.core.config import GroupConfig
from kgroup.group_types import CLASSIC, CONSUMER, STREAMS, GroupType, group_type

# The kinds of the registry (kgroup/group_types.py) the lab simulates: those it has member
# state machines for (kgroup.member: classic, consumer protocol), and streams groups, whose
# members the lab drives itself (lab/streams_lab.py).
LAB_KINDS: tuple[GroupType, ...] = (CLASSIC, CONSUMER, STREAMS)
PROTOCOLS = tuple(kind.name for kind in LAB_KINDS)
# What a streams scenario cannot take yet (lab/streams_lab.py drives members and
# coordinator itself and has no partition growth or coordinator restarts).
STREAMS_UNSUPPORTED = ("add_partitions", "coordinator_restart", "coordinator_failover", "network")


class ScenarioError(ValueError):
    """A scenario or sweep file that cannot be run; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class MemberSettings:
    """How every member of the simulated group is configured (Kafka consumer settings)."""

    count: int = 10
    protocol: str = CLASSIC.name                  # the group kind's name (one of LAB_KINDS)
    assignor: tuple[str, ...] = ("range",)
    static: bool = False
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 300_000
    processing_ms: int = 100
    records_per_s: int = 100
    state_bytes_per_partition: int = 0
    auto_commit_interval_ms: int = 5_000
    metadata_max_age_ms: int = 300_000
    start_stagger_ms: int = 0
    # A fatal group error ends the consumer process (the application sees the exception);
    # a supervisor starts it again this long after. 0: it stays down.
    fatal_restart_ms: int = 10_000

    @property
    def kind(self) -> GroupType:
        return group_type(self.protocol) or CLASSIC

    @property
    def server_assignor(self) -> str | None:
        # A kind that moves by group epochs has the coordinator assign: the one it asks for.
        return self.assignor[0] if self.kind.by_epoch else None


@dataclass(frozen=True, slots=True)
class StreamsSettings:
    """A Kafka Streams app instead of consumers (the ``streams:`` section): each topic is the
    source of one subtopology, so its partitions are that subtopology's tasks; a stateful
    subtopology has a changelog, whose state a task must restore wherever it becomes active.

    Restore cost (lab/restore.py): a task that becomes active on another process than its
    last one restores ``lag / restore_records_per_s`` seconds, the lag being the changelog's
    end minus what that process has of it (0 for a caught-up standby or warm-up)."""

    num_standby_replicas: int = 0
    stateless_topics: tuple[str, ...] = ()
    changelog_records: int = 1_000_000          # per task, when the scenario starts
    write_records_per_s: int = 100              # per active task, into its changelog
    restore_records_per_s: int = 50_000         # per task, while restoring
    acceptable_recovery_lag: int = 10_000
    num_warmup_replicas: int = 2


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """The link between each member and the coordinator (one broker)."""

    delay_ms: int = 1
    jitter_ms: int = 0
    request_timeout_ms: int = 30_000


class ActionKind(StrEnum):
    """What an ``Action`` does; its value is the kind a result window carries."""

    START = "start"                              # a member's process starts
    BOUNCE = "bounce"                            # a clean close, started again at until_ms
    CLOSE = "close"                              # a clean close
    CRASH = "crash"                              # the process dies (started again at until_ms, if >= 0)
    GC_PAUSE = "gc_pause"                        # the process freezes until until_ms
    NETWORK = "network"                          # the member's link is slower until until_ms
    CUT = "cut"                                  # the member's link drops everything until until_ms
    ADD_PARTITIONS = "add_partitions"            # a topic grows
    COORDINATOR_RESTART = "coordinator_restart"  # down until until_ms, then the log is replayed
    # Down, then loading for its last load_ms (COORDINATOR_LOAD_IN_PROGRESS), then serving.
    COORDINATOR_FAILOVER = "coordinator_failover"
    COORDINATOR_LOADING = "coordinator_loading"  # never in a timeline: a failover's loading part
    SCALE = "scale"                              # never run: the one window of a scale event


@dataclass(frozen=True, slots=True)
class Action:
    """One concrete thing that happens at ``at_ms`` (after ``timeline`` expands events).

    ``member`` is a member index (or -1); ``until_ms`` ends a timed disruption; ``load_ms``:
    of a coordinator_failover, the last part of it, when the new coordinator is loading;
    ``event`` is the index of the scenario event it came from (-1: the members' first starts).
    """

    at_ms: int
    kind: ActionKind
    member: int = -1
    until_ms: int = -1
    delay_ms: int = 0
    jitter_ms: int = 0
    topic: str = ""
    partitions: int = 0
    event: int = -1
    load_ms: int = 0


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str = "scenario"
    seed: int = 0
    duration_s: float = 600.0
    topics: tuple[tuple[str, int], ...] = (("topic", 12),)
    coordinator: GroupConfig = field(default_factory=GroupConfig)
    network: NetworkSettings = field(default_factory=NetworkSettings)
    members: MemberSettings = field(default_factory=MemberSettings)
    events: tuple[dict[str, Any], ...] = ()
    # Skip quiet stretches (every member Stable, nothing in flight) in one step; see engine.
    fast_forward: bool = True
    # Tasks of a Kafka Streams app instead of partitions (None: consumers).
    streams: StreamsSettings | None = None

    @property
    def duration_ms(self) -> int:
        return int(self.duration_s * 1000)

    @property
    def partition_count(self) -> int:
        return sum(n for _, n in self.topics)


# ---- parsing --------------------------------------------------------------------------------

class ScenarioEventKind(StrEnum):
    """An event of a scenario file (the one key of its mapping)."""

    BOUNCE = "bounce"
    ROLLING_BOUNCE = "rolling_bounce"
    CRASH = "crash"
    SCALE = "scale"
    GC_PAUSE = "gc_pause"
    NETWORK = "network"
    CUT = "cut"
    ADD_PARTITIONS = "add_partitions"
    COORDINATOR_RESTART = "coordinator_restart"
    COORDINATOR_FAILOVER = "coordinator_failover"
    CHURN = "churn"
    START = "start"
    STOP = "stop"
    KILL = "kill"


_E = ScenarioEventKind
# Each kind's fields with their types, and those it must have.
_EVENT_FIELDS: dict[ScenarioEventKind, dict[str, type]] = {
    _E.BOUNCE: {"at_s": float, "member": int, "down_s": float},
    _E.ROLLING_BOUNCE: {"at_s": float, "down_s": float, "interval_s": float, "members": list},
    _E.CRASH: {"at_s": float, "member": int, "restart_after_s": float},
    _E.SCALE: {"at_s": float, "to": int, "stagger_ms": int},
    _E.GC_PAUSE: {"at_s": float, "member": int, "duration_s": float},
    _E.NETWORK: {"at_s": float, "member": int, "delay_ms": int, "jitter_ms": int, "duration_s": float},
    _E.CUT: {"at_s": float, "member": int, "duration_s": float},
    _E.ADD_PARTITIONS: {"at_s": float, "topic": str, "to": int},
    _E.COORDINATOR_RESTART: {"at_s": float, "down_s": float},
    _E.COORDINATOR_FAILOVER: {"at_s": float, "detect_s": float, "load_s": float},
    _E.CHURN: {"from_s": float, "to_s": float, "every_s": float, "kinds": list, "down_s": float,
              "pause_s": float, "restart_after_s": float},
    _E.START: {"at_s": float, "member": int},
    _E.STOP: {"at_s": float, "member": int},
    _E.KILL: {"at_s": float, "member": int},
}
_REQUIRED: dict[ScenarioEventKind, tuple[str, ...]] = {
    _E.BOUNCE: ("at_s", "member"), _E.ROLLING_BOUNCE: ("at_s",), _E.CRASH: ("at_s", "member"),
    _E.SCALE: ("at_s", "to"), _E.GC_PAUSE: ("at_s", "member", "duration_s"),
    _E.NETWORK: ("at_s", "member", "duration_s"), _E.CUT: ("at_s", "member", "duration_s"),
    _E.ADD_PARTITIONS: ("at_s", "topic", "to"), _E.COORDINATOR_RESTART: ("at_s",),
    _E.COORDINATOR_FAILOVER: ("at_s",), _E.CHURN: ("every_s",),
    _E.START: ("at_s", "member"), _E.STOP: ("at_s", "member"), _E.KILL: ("at_s", "member"),
}
CHURN_KINDS = ("bounce", "crash", "gc_pause", "cut")


def parse_scenario(text: str, *, source: str = "scenario") -> Scenario:
    """A Scenario from YAML text; ScenarioError says what is wrong and where."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML ({_yaml_where(exc)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: expected a mapping of scenario fields at the top level")
    return scenario_from_dict(data, source=source)


def scenario_from_dict(data: dict[str, Any], *, source: str = "scenario") -> Scenario:
    """A Scenario from already-parsed data (a sweep builds these from its base and overrides)."""
    known = {"name", "seed", "duration_s", "topics", "coordinator", "network", "members", "events",
             "fast_forward", "streams"}
    _no_unknown(data, known, source)
    sc = Scenario()
    name = str(data.get("name", sc.name))
    seed = _typed(data, "seed", int, sc.seed, source)
    duration = _typed(data, "duration_s", float, sc.duration_s, source)
    if duration <= 0:
        raise ScenarioError(f"{source}: duration_s must be positive")
    topics = _topics(data.get("topics", dict(sc.topics)), source)
    coordinator = _coordinator(data.get("coordinator") or {}, f"{source}: coordinator")
    network = _dataclass_from(NetworkSettings, data.get("network") or {}, f"{source}: network")
    if network.delay_ms < 0 or network.jitter_ms < 0 or network.request_timeout_ms <= 0:
        raise ScenarioError(f"{source}: network delays must be >= 0 and request_timeout_ms > 0")
    members = _members(data.get("members") or {}, f"{source}: members")
    events = data.get("events") or []
    if not isinstance(events, list):
        raise ScenarioError(f"{source}: events must be a list")
    checked = tuple(_event(e, i, topics, f"{source}: events[{i}]") for i, e in enumerate(events))
    for i, ev in enumerate(checked):
        for key in ("at_s", "from_s"):
            if ev.get(key) is not None and ev[key] >= duration:
                # An event past the end would never happen: refuse it rather than ignore it.
                raise ScenarioError(f"{source}: events[{i}] ({ev['kind']}): {key} {ev[key]:g} is outside the "
                                    f"scenario, which runs 0 <= {key} < {duration:g} (duration_s)")
    fast = _typed(data, "fast_forward", bool, True, source)
    streams = _streams(data.get("streams"), members, topics, checked, f"{source}: streams")
    sc = Scenario(name, seed, duration, topics, coordinator, network, members, checked, fast, streams)
    if not members.kind.by_epoch and not (coordinator.min_session_timeout_ms <= members.session_timeout_ms
                                          <= coordinator.max_session_timeout_ms):
        raise ScenarioError(f"{source}: members: session_timeout_ms {members.session_timeout_ms} is outside "
                            f"the coordinator's [{coordinator.min_session_timeout_ms}, "
                            f"{coordinator.max_session_timeout_ms}] (INVALID_SESSION_TIMEOUT)")
    try:
        timeline(sc)                 # member indices and partition counts, checked now
    except ScenarioError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    return sc


def _yaml_where(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or "syntax error"
    return f"{problem} at line {mark.line + 1}" if mark is not None else str(problem)


def _no_unknown(data: dict[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        raise ScenarioError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _typed(data: dict[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    if key not in data or data[key] is None:
        return default
    value = data[key]
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is bool and isinstance(value, bool):
        return value
    if kind is str and isinstance(value, str):
        return value
    if kind is list and isinstance(value, list):
        return value
    raise ScenarioError(f"{where}: {key} must be {_kind_name(kind)}, not {value!r}")


def _kind_name(kind: type) -> str:
    return {float: "a number", int: "an integer", bool: "true or false", str: "a string",
            list: "a list"}[kind]


def _topics(raw: Any, where: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(raw, dict) or not raw:
        raise ScenarioError(f"{where}: topics must map each topic name to its partition count")
    out = []
    for name, count in raw.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ScenarioError(f"{where}: topics.{name} must be a partition count >= 1, not {count!r}")
        out.append((str(name), count))
    return tuple(sorted(out))


_BOOL_SETTINGS = {f.name for f in fields(GroupConfig) if f.type in (bool, "bool")}


def _coordinator(raw: Any, where: str) -> GroupConfig:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: must be a mapping of coordinator settings")
    allowed = {f.name for f in fields(GroupConfig)} - {"consumer_group_overrides"}
    _no_unknown(raw, allowed, where)
    values = {}
    for key, value in raw.items():
        if key == "consumer_assignors":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ScenarioError(f"{where}: consumer_assignors must be a list of names")
            values[key] = tuple(value)
        elif key == "consumer_migration_policy":
            values[key] = str(value)
        else:
            values[key] = _typed(raw, key, bool if key in _BOOL_SETTINGS else int, None, where)
    try:
        return GroupConfig(**values)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


def _dataclass_from(cls: type, raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: must be a mapping")
    names = {f.name: f for f in fields(cls)}
    _no_unknown(raw, set(names), where)
    values = {}
    for key in raw:
        default = getattr(cls(), key)
        values[key] = _typed(raw, key, type(default), default, where)
    return cls(**values)


def _streams(raw: Any, members: MemberSettings, topics: tuple[tuple[str, int], ...],
             events: tuple[dict[str, Any], ...], where: str) -> StreamsSettings | None:
    if raw is None:
        if members.kind is STREAMS:
            raise ScenarioError(f"{where}: a streams-protocol scenario needs a streams section")
        return None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: must be a mapping of streams settings")
    raw = dict(raw)
    stateless = raw.pop("stateless_topics", None) or []
    if not isinstance(stateless, list) or not all(t in dict(topics) for t in stateless):
        raise ScenarioError(f"{where}: stateless_topics must list topics of the scenario")
    spec = replace(_dataclass_from(StreamsSettings, raw, where), stateless_topics=tuple(stateless))
    if spec.restore_records_per_s <= spec.write_records_per_s:
        raise ScenarioError(f"{where}: restore_records_per_s must be above write_records_per_s "
                            f"(a restore would never catch up)")
    if min(spec.num_standby_replicas, spec.changelog_records, spec.write_records_per_s,
           spec.acceptable_recovery_lag, spec.num_warmup_replicas) < 0:
        raise ScenarioError(f"{where}: counts and rates must be >= 0")
    if members.kind is STREAMS:
        for ev in events:
            if ev["kind"] in STREAMS_UNSUPPORTED:
                raise ScenarioError(f"{where}: the lab's streams groups do not take {ev['kind']} events yet")
    return spec


def _members(raw: Any, where: str) -> MemberSettings:
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: must be a mapping of member settings")
    raw = dict(raw)
    assignor = raw.pop("assignor", None)
    spec = _dataclass_from(MemberSettings, {k: v for k, v in raw.items() if k != "assignor"}, where)
    if spec.protocol not in PROTOCOLS:
        raise ScenarioError(f"{where}: protocol must be {' or '.join(PROTOCOLS)}, not {spec.protocol!r}")
    if spec.kind is STREAMS:
        # The coordinator's task assignor (Kafka 4.4's only one, `sticky`).
        if assignor not in (None, "sticky", ["sticky"]):
            raise ScenarioError(f"{where}: a streams group's assignor is sticky, not {assignor!r}")
        return replace(spec, assignor=("sticky",))
    # Classic members assign on the client; a kind that moves by group epochs, on the server.
    server_side = spec.kind.by_epoch
    if assignor is None:
        names: tuple[str, ...] = ("uniform",) if server_side else ("range",)
    elif isinstance(assignor, str):
        names = (assignor,)
    elif isinstance(assignor, list) and assignor and all(isinstance(a, str) for a in assignor):
        names = tuple(assignor)
    else:
        raise ScenarioError(f"{where}: assignor must be a name or a list of names")
    known = server_assignor_names() if server_side else client_assignor_names()
    for n in names:
        if n not in known:
            side = "server" if server_side else "client"
            raise ScenarioError(f"{where}: unknown {side} assignor {n!r} for protocol "
                                f"{spec.protocol} (known: {', '.join(known)})")
    if server_side and len(names) != 1:
        raise ScenarioError(f"{where}: a consumer-protocol member asks for one server assignor")
    for key in ("count", "session_timeout_ms", "heartbeat_interval_ms", "rebalance_timeout_ms",
                "processing_ms", "auto_commit_interval_ms", "metadata_max_age_ms"):
        if getattr(spec, key) < (0 if key == "count" else 1):
            raise ScenarioError(f"{where}: {key} must be positive")
    if (spec.records_per_s < 0 or spec.state_bytes_per_partition < 0 or spec.start_stagger_ms < 0
            or spec.fatal_restart_ms < 0):
        raise ScenarioError(f"{where}: records_per_s, state_bytes_per_partition, start_stagger_ms and "
                            f"fatal_restart_ms must be >= 0")
    if spec.heartbeat_interval_ms >= spec.session_timeout_ms:
        raise ScenarioError(f"{where}: heartbeat_interval_ms must be below session_timeout_ms")
    return replace(spec, assignor=names)


def _event(raw: Any, index: int, topics: tuple[tuple[str, int], ...], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or len(raw) != 1:
        raise ScenarioError(f"{where}: each event is a mapping with one key, the event kind "
                            f"({', '.join(_EVENT_FIELDS)})")
    (name, body), = raw.items()
    if name not in _EVENT_FIELDS:
        raise ScenarioError(f"{where}: unknown event {name!r} (known: {', '.join(_EVENT_FIELDS)})")
    kind = ScenarioEventKind(name)
    body = body or {}
    if not isinstance(body, dict):
        raise ScenarioError(f"{where}: {kind} needs a mapping of its settings")
    spec = _EVENT_FIELDS[kind]
    _no_unknown(body, set(spec), f"{where} ({kind})")
    for key in _REQUIRED[kind]:
        if key not in body:
            raise ScenarioError(f"{where} ({kind}): missing {key}")
    checked: dict[str, Any] = {"kind": kind}
    for key, typ in spec.items():
        if key in body:
            checked[key] = _typed(body, key, typ, None, f"{where} ({kind})")
    for key in ("at_s", "from_s", "to_s", "down_s", "duration_s", "restart_after_s", "interval_s",
                "every_s", "pause_s", "delay_ms", "jitter_ms"):
        if checked.get(key) is not None and checked[key] < 0:
            raise ScenarioError(f"{where} ({kind}): {key} must be >= 0")
    if kind is _E.CHURN:
        if checked["every_s"] <= 0:
            raise ScenarioError(f"{where} (churn): every_s must be positive")
        for k in checked.get("kinds") or []:
            if k not in CHURN_KINDS:
                raise ScenarioError(f"{where} (churn): unknown kind {k!r} (known: {', '.join(CHURN_KINDS)})")
    if kind is _E.ADD_PARTITIONS:
        counts = dict(topics)
        if checked["topic"] not in counts:
            raise ScenarioError(f"{where} (add_partitions): no topic {checked['topic']!r} in topics")
    if kind is _E.SCALE and checked["to"] < 0:
        raise ScenarioError(f"{where} (scale): to must be >= 0")
    return checked


# ---- expanding events into a timeline ------------------------------------------------------

def timeline(sc: Scenario) -> list[Action]:
    """Every action of the scenario in time order: member starts, then the events expanded.

    Generators draw from a ``random.Random`` seeded with the scenario's seed, so the same
    scenario always gives the same timeline. Member indices past the current membership are
    rejected here rather than ignored.
    """
    m = sc.members
    out: list[Action] = [Action(i * m.start_stagger_ms, ActionKind.START, i) for i in range(m.count)]
    expansion = _Expansion(sc)
    for index, ev in enumerate(sc.events):
        kind = ev["kind"]
        expansion.where = f"events[{index}] ({kind})"
        out += _EXPAND[kind](expansion, ev, index, int(ev.get("at_s", 0) * 1000))
    out.sort(key=lambda a: (a.at_ms, a.event, a.member))
    return out


class _Expansion:
    """What expanding the events in order knows so far: the members that exist (0 .. live-1,
    after scaling), each topic's partition count, the generators' random draws."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.rng = random.Random(f"timeline:{sc.seed}")
        self.live = sc.members.count
        self.counts = dict(sc.topics)
        self.where = ""

    def member(self, i: int) -> int:
        if not 0 <= i < self.live:
            raise ScenarioError(f"{self.where}: member {i} does not exist (members are 0..{self.live - 1})")
        return i

    def bounce(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        down = int(ev.get("down_s", 5) * 1000)
        return [Action(at, ActionKind.BOUNCE, self.member(ev["member"]), at + down, event=index)]

    def rolling_bounce(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        down = int(ev.get("down_s", 5) * 1000)
        gap = int(ev.get("interval_s", 30) * 1000)
        who = [self.member(i) for i in ev.get("members") or range(self.live)]
        return [Action(at + n * gap, ActionKind.BOUNCE, i, at + n * gap + down, event=index)
                for n, i in enumerate(who)]

    def crash(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        back = ev.get("restart_after_s")
        until = -1 if back is None else at + int(back * 1000)
        return [Action(at, ActionKind.CRASH, self.member(ev["member"]), until, event=index)]

    def scale(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        to, live = ev["to"], self.live
        stagger = ev.get("stagger_ms", 0)
        self.live = to
        # One disruption: every action of the event carries when its last one happens.
        if to > live:
            last = at + (to - live - 1) * stagger
            return [Action(at + n * stagger, ActionKind.START, i, last, event=index)
                    for n, i in enumerate(range(live, to))]
        return [Action(at, ActionKind.CLOSE, i, at, event=index) for i in range(live - 1, to - 1, -1)]

    def for_a_while(self, ev: dict[str, Any], index: int, at: int, kind: ActionKind) -> list[Action]:
        """A disruption of one member for ``duration_s`` (gc_pause, network, cut)."""
        return [Action(at, kind, self.member(ev["member"]), at + int(ev["duration_s"] * 1000),
                       delay_ms=ev.get("delay_ms", 0), jitter_ms=ev.get("jitter_ms", 0), event=index)]

    def add_partitions(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        topic, to = ev["topic"], ev["to"]
        if to <= self.counts[topic]:
            raise ScenarioError(f"{self.where}: {topic} has {self.counts[topic]} partitions by then; "
                                f"to must be larger")
        self.counts[topic] = to
        return [Action(at, ActionKind.ADD_PARTITIONS, topic=topic, partitions=to, event=index)]

    def coordinator_restart(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        return [Action(at, ActionKind.COORDINATOR_RESTART, until_ms=at + int(ev.get("down_s", 1) * 1000),
                       event=index)]

    def coordinator_failover(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        detect, load = int(ev.get("detect_s", 0.5) * 1000), int(ev.get("load_s", 0.5) * 1000)
        if detect < 0 or load < 0:
            raise ScenarioError(f"{self.where}: detect_s and load_s must not be negative")
        return [Action(at, ActionKind.COORDINATOR_FAILOVER, until_ms=at + detect + load, load_ms=load,
                       event=index)]

    def churn(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        return _churn(ev, index, self.live, self.sc, self.rng)

    def start(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        if ev["member"] < 0:
            raise ScenarioError(f"{self.where}: member must be >= 0")
        self.live = max(self.live, ev["member"] + 1)
        return [Action(at, ActionKind.START, ev["member"], event=index)]

    def stop(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        return [Action(at, ActionKind.CLOSE, self.member(ev["member"]), event=index)]

    def kill(self, ev: dict[str, Any], index: int, at: int) -> list[Action]:
        return [Action(at, ActionKind.CRASH, self.member(ev["member"]), event=index)]


# Scenario event kind -> its expansion into actions.
_EXPAND: dict[ScenarioEventKind, Callable[[_Expansion, dict[str, Any], int, int], list[Action]]] = {
    _E.BOUNCE: _Expansion.bounce,
    _E.ROLLING_BOUNCE: _Expansion.rolling_bounce,
    _E.CRASH: _Expansion.crash,
    _E.SCALE: _Expansion.scale,
    _E.GC_PAUSE: partial(_Expansion.for_a_while, kind=ActionKind.GC_PAUSE),
    _E.NETWORK: partial(_Expansion.for_a_while, kind=ActionKind.NETWORK),
    _E.CUT: partial(_Expansion.for_a_while, kind=ActionKind.CUT),
    _E.ADD_PARTITIONS: _Expansion.add_partitions,
    _E.COORDINATOR_RESTART: _Expansion.coordinator_restart,
    _E.COORDINATOR_FAILOVER: _Expansion.coordinator_failover,
    _E.CHURN: _Expansion.churn,
    _E.START: _Expansion.start,
    _E.STOP: _Expansion.stop,
    _E.KILL: _Expansion.kill,
}
assert set(_EXPAND) == set(_EVENT_FIELDS) == set(_REQUIRED) == set(ScenarioEventKind), "one entry per kind"


def _churn(ev: dict[str, Any], index: int, live: int, sc: Scenario, rng: random.Random) -> list[Action]:
    """A churn generator: one disruption every ``every_s`` on a member drawn at random."""
    if live == 0:
        return []
    kinds = ev.get("kinds") or ["bounce"]
    start = int(ev.get("from_s", 0) * 1000)
    end = int(ev.get("to_s", sc.duration_s) * 1000)
    every = int(ev["every_s"] * 1000)
    down = int(ev.get("down_s", 5) * 1000)
    pause = int(ev.get("pause_s", 20) * 1000)
    back = int(ev.get("restart_after_s", 30) * 1000)
    out = []
    busy_until = [0] * live                        # one disruption at a time per member
    at = start + every // 2
    while at < end:
        kind = kinds[rng.randrange(len(kinds))]
        candidates = [i for i in range(live) if busy_until[i] <= at]
        if candidates:
            i = candidates[rng.randrange(len(candidates))]
            length = {"bounce": down, "crash": back, "gc_pause": pause, "cut": pause}[kind]
            out.append(Action(at, ActionKind(kind), i, at + length, event=index))
            busy_until[i] = at + length + every
        at += every
    return out
