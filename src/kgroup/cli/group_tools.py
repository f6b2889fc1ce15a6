"""The group tools operators know from ``kafka-consumer-groups.sh`` and ``rpk group``.

``groups list`` (state and type filters, case-insensitive, checked), ``groups describe``
(``--offsets``, the default; ``--members [--verbose]``; ``--state``; several groups or
``--all-groups``; Kafka's column names), ``groups reset-offsets`` (every Kafka scenario:
``--to-earliest``, ``--to-latest``, ``--to-offset``, ``--to-current``, ``--to-datetime``,
``--by-duration``, ``--shift-by``, ``--from-file``; ``--topic T[:P,P]`` or ``--all-topics``;
``--dry-run`` by default, ``--execute``; ``--export`` as CSV), ``groups delete-offsets`` and
``groups alter-config`` (group configs over IncrementalAlterConfigs). ``--format json`` on
list and describe prints one document (output.py).

Every kind of the registry (kgroup/group_types.py) goes through the same commands: what a
command does with a group follows what its kind is, never its name. Where a kind keeps its
progress says how positions are read, reset and deleted: committed offsets, or (share
groups, KIP-932) each share partition's start offset (DescribeShareGroupOffsets), shown
beside the log end and the records past it still in flight (not yet accepted or archived),
reset in an empty group by AlterShareGroupOffsets and deleted per whole topic. A partition
of a kind that shares partitions may be assigned to several members, so its row names them
all.

Each command is ``async def cmd(args, admin, out) -> int`` like those in commands.py.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kgroup.client.admin import (
    EARLIEST,
    GROUP_RESOURCE,
    LATEST,
    AdminClient,
    GroupDescription,
)
from kgroup.client.errors import BrokerError, UnsupportedApi
from kgroup.core.group_configs import DLQ_TOPIC_NAME, known_names
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, CONSUMER, DescribeApi, GroupType, Positions, group_type, state_names, type_names
from kgroup.offset_reset import reset_refused

from .commands import describe_group_or_none, existing_topic, group_errors, log_end_offsets, raise_group_error
from .config_tools import alter_and_print
from .errors import CliError, UsageError
from . import member_telemetry
from .member_payloads import assignment_text, kafka_assignment
from .ops_parser import one_group
from .output import cell, emit_json, table
from .specs import TopicSpec, read_partition_list, read_reset_plan

# Kafka's group states and types (GroupState, GroupType), for the list filters.
GROUP_STATES = state_names()
GROUP_TYPES = type_names()


def _checked(values: list[str], valid: tuple[str, ...], what: str) -> list[str]:
    """The filter values, matched case-insensitively to Kafka's spelling; UsageError if unknown."""
    by_lower = {v.lower(): v for v in valid}
    out = []
    for value in values:
        for part in value.split(","):
            known = by_lower.get(part.strip().lower())
            if known is None:
                raise UsageError(f"unknown group {what} {part.strip()!r}", f"use one of: {', '.join(valid)}")
            out.append(known)
    return out


# -- list ---------------------------------------------------------------------------------


async def groups_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    states = _checked(args.state, GROUP_STATES, "state")
    types = _checked(args.type, GROUP_TYPES, "type")
    groups = await admin.list_groups(states=states, types=types)
    if args.format == "json":
        emit_json({"groups": [{"group": g.group_id, "state": g.state, "type": g.group_type,
                               "protocol_type": g.protocol_type or None} for g in groups]}, out)
        return 0
    rows = [["GROUP", "STATE", "TYPE", "PROTOCOL-TYPE"]]
    rows += [[g.group_id, cell(g.state), cell(g.group_type), g.protocol_type or "-"] for g in groups]
    table(rows, out)
    return 0


async def _chosen_groups(args: Any, admin: AdminClient) -> list[str]:
    """GROUP arguments and --group options in order, or every group with --all-groups."""
    named = list(dict.fromkeys([*(getattr(args, "groups", None) or []), *(args.group or [])]))
    if args.all_groups:
        if named:
            raise UsageError("give group names or --all-groups, not both")
        return [g.group_id for g in await admin.list_groups()]
    if not named:
        raise UsageError("name a group (GROUP or --group GROUP) or give --all-groups")
    if getattr(args, "regex", False):
        try:
            patterns = [re.compile(p) for p in named]
        except re.error as exc:
            raise UsageError(f"invalid regular expression {exc.pattern!r}: {exc}",
                             "use Python's re syntax, e.g. '^orders-.*'") from None
        matched = sorted(g.group_id for g in await admin.list_groups() if any(p.search(g.group_id) for p in patterns))
        if not matched:
            raise CliError(f"no group matches {' or '.join(map(repr, named))}", "list them with `kgroup groups list`")
        return matched
    return named


# -- describe ------------------------------------------------------------------------------


def _kind(desc: GroupDescription | None) -> GroupType:
    """The kind of a described group (a broker that describes none: classic, as Kafka's tools)."""
    return (group_type(desc.group_type) if desc is not None else None) or CLASSIC


def _is_streams(desc: GroupDescription | None) -> bool:
    return desc is not None and _kind(desc).describe_api is DescribeApi.STREAMS_GROUP_DESCRIBE


def _is_share(desc: GroupDescription | None) -> bool:
    """Whether the group's progress is share-partition state rather than committed offsets."""
    return _kind(desc).positions is Positions.SHARE_STATE


async def _positions(admin: AdminClient, group: str, desc: GroupDescription | None) -> dict[tuple[str, int], int]:
    """Where the group stands per partition: committed offsets, or a share group's start offsets."""
    with group_errors(group):
        if _is_share(desc):
            return await admin.list_share_group_offsets(group)
        return await admin.list_group_offsets(group)


@dataclass(slots=True)
class _Described:
    group: str
    description: GroupDescription | None
    coordinator: tuple[int, str, int] | None
    # committed offsets; for a share group its share partitions' start offsets
    committed: dict[tuple[str, int], int]
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    # share groups only: (topic, partition) -> the broker's share lag (records past the start
    # offset not yet acknowledged or archived: DescribeShareGroupOffsets' Lag)
    share_lag: dict[tuple[str, int], int] | None = None
    # --offsets --verbose: the leader epoch committed with each offset
    leader_epochs: dict[tuple[str, int], int] | None = None
    # share groups only: errors.deadletterqueue.topic.name (KIP-1191), None if unset or unknown
    dead_letter_topic: str | None = None
    # --members --verbose --telemetry: member id -> its client's pushed key metrics (KIP-714)
    member_metrics: dict[str, dict[str, float]] | None = None
    # streams groups only: log start offsets, the lag of a partition without a commit
    # (kafka-streams-groups.sh's OFFSET-LAG is then log end - log start)
    starts: dict[tuple[str, int], int] | None = None

    @property
    def state(self) -> str | None:
        return None if self.description is None else self.description.state

    @property
    def kind(self) -> str:
        """What Kafka's tools call the group in their notes: its kind's name, a classic group
        being a consumer group (kafka-consumer-groups.sh says so of classic groups too)."""
        kind = _kind(self.description)
        return CONSUMER.name if kind is CLASSIC else kind.name

    def owners(self) -> dict[tuple[str, int], list[Any]]:
        """(topic, partition) -> its members (one, except in a share group), in member order."""
        members = self.description.members if self.description is not None else ()
        owners: dict[tuple[str, int], list[Any]] = {}
        for m in members:
            for t, ps in (m.assignment or {}).items():
                for p in ps:
                    owners.setdefault((t, p), []).append(m)
        return owners


async def _describe_one(admin: AdminClient, group: str) -> _Described:
    desc = await describe_group_or_none(admin, group)
    share_lag = None
    if _is_share(desc):
        # 1. A share group: start offsets and lags in one DescribeShareGroupOffsets.
        with group_errors(group):
            shares = await admin.share_group_offsets(group)
        committed = {k: start for k, (start, _) in shares.items() if start >= 0}
        share_lag = {k: n for k, (_, n) in shares.items() if n >= 0}
    else:
        committed = await admin.list_group_offsets(group)
    if desc is not None and desc.state == "Dead" and not committed:
        raise CliError(f"group {group!r} does not exist", "check the name with `kgroup groups list`")
    try:
        coord = await admin.find_coordinator(group)
        coordinator = (coord.node_id, coord.host, coord.port)
    except (BrokerError, UnsupportedApi):
        coordinator = None
    got = _Described(group, desc, coordinator, committed, share_lag=share_lag)
    if share_lag is not None:
        got.dead_letter_topic = await _dead_letter_topic(admin, group)
    keys = set(committed) | set(got.owners()) | set(share_lag or ())
    got.ends = await log_end_offsets(admin, {t for t, _ in keys})
    if _is_streams(desc):
        got.starts = await log_end_offsets(admin, {t for t, _ in got.owners()}, EARLIEST)
    return got


async def _dead_letter_topic(admin: AdminClient, group: str) -> str | None:
    """A share group's dead-letter topic (KIP-1191); None if it has none or the broker will not say."""
    try:
        entries = await admin.describe_configs(GROUP_RESOURCE, group, [DLQ_TOPIC_NAME])
    except (BrokerError, UnsupportedApi):
        return None
    return next((e.value for e in entries if e.name == DLQ_TOPIC_NAME and e.value), None)


def _offset_rows(d: _Described) -> list[dict[str, Any]]:
    """One row per partition; the same keys for every group type (README's JSON shape)."""
    owners = d.owners()
    share = d.share_lag is not None
    rows = []
    keys = set(d.committed) | set(owners) | set(d.share_lag or ())
    if d.starts is not None and owners:
        # A streams group with tasks: kafka-streams-groups.sh's rows, the source partitions of
        # the members' active tasks (an empty group keeps its committed offsets' rows).
        keys = set(owners)
    for key in sorted(keys):
        cur, end = d.committed.get(key), d.ends.get(key)
        members = owners.get(key, [])
        member = members[0] if members and not share else None
        start = (d.starts or {}).get(key)
        rows.append({"topic": key[0], "partition": key[1],
                     "current_offset": None if share else cur, "log_end_offset": end,
                     "lag": (d.share_lag or {}).get(key) if share else
                     max(0, end - cur) if cur is not None and end is not None else
                     end - start if start is not None and end is not None else None,
                     "consumer_id": member.member_id if member else None,
                     "host": member.client_host if member else None,
                     "client_id": member.client_id if member else None,
                     "start_offset": cur if share else None,
                     "consumer_ids": [m.member_id for m in members] if share else None})
        if d.leader_epochs is not None:
            epoch = d.leader_epochs.get(key, -1)
            rows[-1]["leader_epoch"] = epoch if epoch >= 0 else None
    return rows


def _lag_per_topic(d: _Described) -> dict[str, int]:
    """rpk's lag per topic: the lag of the topic's partitions summed (those with a known lag)."""
    lags: dict[str, int] = {}
    for r in _offset_rows(d):
        if r["lag"] is not None:
            lags[r["topic"]] = lags.get(r["topic"], 0) + r["lag"]
    return dict(sorted(lags.items()))


def _member_rows(d: _Described) -> list[dict[str, Any]]:
    desc = d.description
    members = desc.members if desc is not None else ()
    # DescribeGroups carries each member's bytes; ConsumerGroupDescribe and ShareGroupDescribe none.
    has_bytes = desc is not None and _kind(desc).describe_api is DescribeApi.DESCRIBE_GROUPS
    rows = []
    for m in members:
        partitions = None if m.assignment is None else \
            [{"topic": t, "partition": p} for t, ps in sorted(m.assignment.items()) for p in ps]
        if partitions is not None:
            by_topic = _by_topic(partitions)
            assignment = ", ".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(by_topic.items())) or "-"
        else:
            assignment = assignment_text(desc, m)        # tasks, leader/follower, or opaque bytes
        target = m.target_assignment
        rows.append({"consumer_id": m.member_id, "group_instance_id": m.group_instance_id, "host": m.client_host,
                     "client_id": m.client_id, "partitions": partitions, "assignment": assignment,
                     "metadata_bytes": len(m.metadata) if has_bytes else None,
                     "assignment_bytes": len(m.assignment_bytes) if has_bytes else None,
                     # --members --verbose: Kafka 4.4's columns (KIP-848's epochs and target
                     # assignment; KIP-1099's UPGRADED for a consumer group's classic members)
                     "current_epoch": m.member_epoch,
                     "current_assignment": assignment_text(desc, m),
                     "target_epoch": desc.assignment_epoch if target is not None else None,
                     "target_assignment": None if target is None else kafka_assignment(target) or None,
                     "upgraded": m.upgraded,
                     # A streams group member: its process, topology epoch and tasks by kind.
                     **({"process_id": m.process_id, "topology_epoch": m.topology_epoch,
                         "tasks": _plain_tasks(m.tasks), "target_tasks": _plain_tasks(m.target_tasks)}
                        if m.tasks is not None else {}),
                     **({"telemetry": d.member_metrics.get(m.member_id)} if d.member_metrics is not None else {})})
    return rows


def _plain_tasks(tasks: Any) -> dict[str, dict[str, list[int]]] | None:
    return None if tasks is None else {kind: {s: sorted(ps) for s, ps in sorted(by_sub.items())}
                                       for kind, by_sub in tasks.items()}


def _streams_assignments(tasks: dict[str, dict[str, list[int]]] | None, prefix: str = "") -> str:
    """kafka-streams-groups.sh's ASSIGNMENTS: "ACTIVE: 0:[0]; 1:[0]; STANDBY: 0:[1]; " (kinds
    without tasks left out)."""
    out = ""
    for kind in ("active", "standby", "warmup"):
        by_sub = (tasks or {}).get(kind) or {}
        if any(by_sub.values()):
            out += f"{prefix}{kind.upper()}: " + "".join(f"{s}:[{','.join(map(str, ps))}]; "
                                                         for s, ps in by_sub.items() if ps)
    return out


def _print_streams_members(d: _Described, members: list[dict[str, Any]], out: TextIO, verbose: bool) -> None:
    """Kafka 4.4's kafka-streams-groups.sh --describe --members table (--verbose: the target
    assignment's and topology's epochs, each member's protocol and epoch, its target tasks)."""
    desc = d.description
    head = ["GROUP"] + (["TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH"] if verbose else []) + ["MEMBER"] + \
        (["MEMBER-PROTOCOL", "MEMBER-EPOCH"] if verbose else []) + ["PROCESS", "CLIENT-ID", "ASSIGNMENTS"]
    rows = [head]
    for m in members:
        assignments = _streams_assignments(m["tasks"])
        if verbose:
            assignments += _streams_assignments(m["target_tasks"], "TARGET-")
        rows.append([d.group] + ([cell(desc.assignment_epoch), cell(m["topology_epoch"])] if verbose else []) +
                    [m["consumer_id"]] + (["streams", cell(m["current_epoch"])] if verbose else []) +
                    [cell(m["process_id"]), m["client_id"], assignments.rstrip() or "-"])
    table(rows, out)


def _document(d: _Described, lag_per_topic: bool = False) -> dict[str, Any]:
    desc = d.description
    extra = {"lag_per_topic": _lag_per_topic(d)} if lag_per_topic else {}
    return extra | {
        "group": d.group,
        "state": d.state,
        "type": desc.group_type if desc else None,
        "protocol_type": desc.protocol_type or None if desc else None,
        "assignment_strategy": desc.protocol or None if desc else None,
        "coordinator": None if d.coordinator is None else
        {"id": d.coordinator[0], "host": d.coordinator[1], "port": d.coordinator[2]},
        "members": _member_rows(d),
        "offsets": _offset_rows(d),
        **({"dead_letter_topic": d.dead_letter_topic} if d.share_lag is not None else {}),
    }


def _note_state(d: _Described, err: TextIO) -> None:
    """Kafka's notes for an inactive or rebalancing group (to stderr, as Kafka's tool)."""
    if d.state == "Empty":
        err.write(f"kgroup: {d.kind} group {d.group!r} has no active members\n")
    elif d.state not in (None, "Stable", "Dead"):
        err.write(f"kgroup: warning: {d.kind} group {d.group!r} is rebalancing ({d.state})\n")


def _print_offsets(d: _Described, out: TextIO) -> None:
    if d.starts is not None:
        # kafka-streams-groups.sh --describe [--verbose]: OFFSET-LAG (a partition without a
        # commit lags by its whole log), --verbose adds the committed offset and leader epoch.
        verbose = d.leader_epochs is not None
        rows = [["GROUP", "TOPIC", "PARTITION"] +
                (["CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET"] if verbose else []) + ["OFFSET-LAG"]]
        rows += [[d.group, r["topic"], str(r["partition"])] +
                 ([cell(r["current_offset"]), cell(r["leader_epoch"]), cell(r["log_end_offset"])] if verbose else []) +
                 [cell(r["lag"])] for r in _offset_rows(d)]
    elif d.share_lag is not None:
        # kafka-share-groups --describe's columns: the start offset and the broker's lag.
        rows = [["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]]
        rows += [[d.group, r["topic"], str(r["partition"]), cell(r["start_offset"]), cell(r["lag"])]
                 for r in _offset_rows(d)]
    else:
        epochs = d.leader_epochs is not None         # --verbose: Kafka's LEADER-EPOCH column
        rows = [["GROUP", "TOPIC", "PARTITION"] + (["LEADER-EPOCH"] if epochs else []) +
                ["CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]]
        rows += [[d.group, r["topic"], str(r["partition"])] + ([cell(r["leader_epoch"])] if epochs else []) +
                 [cell(r["current_offset"]), cell(r["log_end_offset"]), cell(r["lag"]), cell(r["consumer_id"]),
                  cell(r["host"]), cell(r["client_id"])]
                 for r in _offset_rows(d)]
    if len(rows) > 1:
        table(rows, out)
    if d.dead_letter_topic:
        out.write(f"\nDEAD-LETTER-TOPIC {d.dead_letter_topic}\n")


def _print_lag_per_topic(d: _Described, out: TextIO) -> None:
    rows = [["GROUP", "TOPIC", "LAG"]] + [[d.group, t, str(lag)] for t, lag in _lag_per_topic(d).items()]
    if len(rows) > 1:
        table(rows, out)


def _print_members(d: _Described, out: TextIO, verbose: bool) -> None:
    """Kafka 4.4's --members tables: kafka-share-groups' for a share group, else
    kafka-consumer-groups' (GROUP-INSTANCE-ID only when a member has one, blank for the
    others; --verbose: each member's epoch and assignment, the group's target epoch and the
    member's target, and UPGRADED when a consumer group has members of both protocols)."""
    members = _member_rows(d)
    if _kind(d.description).describe_api is DescribeApi.STREAMS_GROUP_DESCRIBE:    # members hold tasks
        _print_streams_members(d, members, out, verbose)
        return
    if _is_share(d.description):
        head = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", *(["MEMBER-EPOCH"] if verbose else []),
                "ASSIGNMENT"]
        rows = [head] + [[d.group, m["consumer_id"], m["host"], m["client_id"], str(len(m["partitions"] or ())),
                          *([cell(m["current_epoch"])] if verbose else []),
                          kafka_assignment(_by_topic(m["partitions"]))]
                         for m in sorted(members, key=lambda m: m["consumer_id"])]
        table(rows, out)
        return
    with_instance = any(m["group_instance_id"] for m in members)
    upgraded = verbose and {m["upgraded"] for m in members} >= {True, False}
    head = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else []) + \
        ["HOST", "CLIENT-ID", "#PARTITIONS"]
    if verbose:
        head += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        head += ["UPGRADED"] if upgraded else []
    pushed = d.member_metrics               # --telemetry: the members' own metrics (KIP-714)
    head += [c for c, _ in member_telemetry.COLUMNS] if pushed is not None else []
    rows = [head]
    for m in members:
        parts = m["partitions"]
        row = [d.group, m["consumer_id"]] + ([m["group_instance_id"] or ""] if with_instance else [])
        row += [m["host"], m["client_id"], cell(None if parts is None else len(parts))]
        if verbose:
            row += [cell(m["current_epoch"]), m["current_assignment"], cell(m["target_epoch"]),
                    cell(m["target_assignment"])]
            row += [cell(None if m["upgraded"] is None else str(m["upgraded"]).lower())] if upgraded else []
        row += member_telemetry.cells(pushed.get(m["consumer_id"])) if pushed is not None else []
        rows.append(row)
    table(rows, out)


def _by_topic(partitions: list[dict[str, Any]] | None) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions or ():
        by_topic.setdefault(tp["topic"], []).append(tp["partition"])
    return by_topic


def _print_state(d: _Described, out: TextIO, verbose: bool = False) -> None:
    coordinator = "-" if d.coordinator is None else f"{d.coordinator[1]}:{d.coordinator[2]}  ({d.coordinator[0]})"
    desc = d.description
    if _is_streams(desc):
        # kafka-streams-groups.sh --describe --state [--verbose]: the group's task assignor,
        # --verbose its group epoch and target assignment epoch.
        table([["GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE",
                *(["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"] if verbose else []), "#MEMBERS"],
               [d.group, coordinator, desc.protocol or "-", cell(d.state),
                *([cell(desc.epoch), cell(desc.assignment_epoch)] if verbose else []), str(len(desc.members))]], out)
        return
    epoch = ["GROUP-EPOCH"] if verbose else []           # --verbose: Kafka's GROUP-EPOCH (none for classic)
    table([["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", *epoch, "#MEMBERS"],
           [d.group, coordinator, (desc.protocol or "-") if desc else "-", cell(d.state),
            *([cell(desc.epoch if desc else None)] if verbose else []),
            str(len(desc.members)) if desc else "-"]], out)


async def groups_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    if args.lag_per_topic and (args.members or args.state):
        raise UsageError("--lag-per-topic goes with --offsets (the default)")
    telemetry = getattr(args, "telemetry", None)
    if telemetry and not (args.members and args.verbose):
        raise UsageError("--telemetry goes with --members --verbose")
    described = []
    for g in await _chosen_groups(args, admin):
        d = await _describe_one(admin, g)
        if args.verbose and not (args.members or args.state) and d.share_lag is None:
            d.leader_epochs = await admin.committed_leader_epochs(g)
        if telemetry:
            d.member_metrics = await member_telemetry.by_member(telemetry, g)
        described.append(d)
    if args.format == "json":
        emit_json({"groups": [_document(d, args.lag_per_topic) for d in described]}, out)
        return 0
    for i, d in enumerate(described):
        if i:
            out.write("\n")
        _note_state(d, sys.stderr)
        if args.state:
            _print_state(d, out, args.verbose)
        elif args.members:
            _print_members(d, out, args.verbose)
        else:
            _print_offsets(d, out)
            if args.lag_per_topic:
                out.write("\n")
                _print_lag_per_topic(d, out)
    return 0


# -- reset-offsets ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Logs:
    """Log start and end offsets, fetched once per topic."""

    admin: AdminClient
    starts: dict[tuple[str, int], int] = field(default_factory=dict)
    ends: dict[tuple[str, int], int] = field(default_factory=dict)

    async def load(self, topic: str, partitions: list[int]) -> None:
        missing = [p for p in partitions if (topic, p) not in self.ends]
        if missing:
            for p, off in (await self.admin.list_offsets(topic, missing, EARLIEST)).items():
                self.starts[(topic, p)] = off
            for p, off in (await self.admin.list_offsets(topic, missing, LATEST)).items():
                self.ends[(topic, p)] = off

    def clamp(self, key: tuple[str, int], offset: int) -> int:
        """Into [log start, log end], as Kafka's tool clamps a requested offset."""
        return min(max(offset, self.starts[key]), self.ends[key])


async def _partitions_of(admin: AdminClient, spec: TopicSpec) -> list[int]:
    existing = [p.partition for p in (await existing_topic(admin, spec.topic)).partitions]
    if spec.partitions is None:
        return existing
    absent = sorted(set(spec.partitions) - set(existing))
    if absent:
        raise CliError(f"topic {spec.topic!r} has no partition {absent[0]} (it has {len(existing)})",
                       f"use partitions 0..{len(existing) - 1}")
    return list(spec.partitions)


async def _reset_scope(args: Any, admin: AdminClient, group: str, committed: dict[tuple[str, int], int],
                       plan: dict[str, dict[tuple[str, int], int]] | None) -> list[tuple[str, int]]:
    if plan is not None and args.to_group is not None:
        # --to-group: the other group's partitions, within --topic where given.
        wanted = plan[args.to_group]
        if not args.topic:
            return sorted(wanted)
        keys = {(spec.topic, p) for spec in args.topic for p in await _partitions_of(admin, spec)}
        return sorted(keys & set(wanted))
    if plan is not None:
        if group not in plan:
            raise CliError(f"the reset plan has no line for group {group!r}",
                           "add group,topic,partition,offset lines for it")
        return sorted(plan[group])
    if args.all_topics:
        return sorted(committed)
    keys = []
    for spec in args.topic:
        keys += [(spec.topic, p) for p in await _partitions_of(admin, spec)]
    return sorted(set(keys))


async def _reset_targets(args: Any, admin: AdminClient, group: str, keys: list[tuple[str, int]],
                         committed: dict[tuple[str, int], int], logs: _Logs,
                         plan: dict[str, dict[tuple[str, int], int]] | None) -> dict[tuple[str, int], int]:
    by_topic: dict[str, list[int]] = {}
    for t, p in keys:
        by_topic.setdefault(t, []).append(p)
    for t, ps in by_topic.items():
        await logs.load(t, ps)
    if args.to_datetime is not None or args.by_duration is not None:
        when = (args.to_datetime if args.to_datetime is not None
                else int(time.time() * 1000) - args.by_duration)
        found: dict[tuple[str, int], int] = {}
        for t, ps in by_topic.items():
            for p, off in (await admin.list_offsets(t, ps, when)).items():
                # No record at or after that time: the log end, as Kafka's tool does.
                found[(t, p)] = logs.ends[(t, p)] if off < 0 else off
        return {k: found[k] for k in keys}
    targets = {}
    for key in keys:
        if args.to_earliest:
            targets[key] = logs.starts[key]
        elif args.to_latest:
            targets[key] = logs.ends[key]
        elif args.to_offset is not None:
            targets[key] = logs.clamp(key, args.to_offset)
        elif args.to_current:
            targets[key] = committed.get(key, logs.ends[key])
        elif args.shift_by is not None:
            if key not in committed:
                raise CliError(f"cannot shift the offset of {key[0]}-{key[1]} for group {group!r}: "
                               "it has no committed offset", "reset it with --to-earliest or --to-offset first")
            targets[key] = logs.clamp(key, committed[key] + args.shift_by)
        else:
            targets[key] = logs.clamp(key, plan[args.to_group if args.to_group is not None else group][key])
    return targets


def _refusal_hint(group: str, desc: GroupDescription) -> str:
    """A command that makes the group inactive: remove-members works only on static members."""
    static = [m.group_instance_id for m in desc.members if m.group_instance_id]
    if static and len(static) == len(desc.members):
        ids = " ".join(f"--instance-id {i}" for i in static)
        return (f"stop its consumers; static members whose processes are gone can be removed with "
                f"`kgroup groups remove-members {group} {ids}`")
    return f"stop its consumers (see them with `kgroup groups describe {group} --members`) and retry"


async def _source_plan(admin: AdminClient, source: str) -> dict[str, dict[tuple[str, int], int]]:
    """--to-group: the other group's committed offsets, as a plan keyed by its name."""
    with group_errors(source):
        offsets = await admin.list_group_offsets(source)
    if not offsets:
        raise CliError(f"group {source!r} has no committed offsets to copy",
                       "check the name with `kgroup groups list`")
    return {source: offsets}


async def groups_reset_offsets(args: Any, admin: AdminClient, out: TextIO) -> int:
    if args.from_file is None and args.to_group is None and not args.topic and not args.all_topics:
        raise UsageError("say which partitions to reset", "give --topic TOPIC[:PARTITION,...] (repeatable) "
                         "or --all-topics")
    groups = await _chosen_groups(args, admin)
    plan = None
    if args.to_group is not None:
        plan = await _source_plan(admin, args.to_group)
    elif args.from_file is not None:
        try:
            plan = read_reset_plan(Path(args.from_file).read_text(), groups)
        except FileNotFoundError:
            raise CliError(f"no such file: {args.from_file}", "give the CSV that --export wrote") from None
        except ValueError as exc:
            raise CliError(f"{args.from_file}: {exc}", "write topic,partition,offset lines "
                           "(or group,topic,partition,offset)") from None
    logs = _Logs(admin)
    share_groups: set[str] = set()          # their "committed offsets" are share-partition start offsets
    plans: dict[str, tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]] = {}
    skipped: list[str] = []
    for group in groups:
        desc = await describe_group_or_none(admin, group)
        why = reset_refused(group, desc.state, len(desc.members)) if desc is not None else None
        if why is not None:
            # Kafka's words; several groups: the others go on, this one is named as skipped.
            if len(groups) == 1:
                raise CliError(why, _refusal_hint(group, desc))
            sys.stderr.write(f"kgroup: skipped group {group!r}: {why}; {_refusal_hint(group, desc)}\n")
            skipped.append(group)
            continue
        committed = await _positions(admin, group, desc)
        keys = await _reset_scope(args, admin, group, committed, plan)
        plans[group] = (committed, await _reset_targets(args, admin, group, keys, committed, logs, plan))
        if _is_share(desc):
            share_groups.add(group)
    # Output: the CSV --from-file reads back, or the plan as a table.
    if args.export:
        single = len(groups) == 1 and not args.all_groups
        for group, (_, targets) in plans.items():
            for (t, p), off in sorted(targets.items()):
                out.write(f"{t},{p},{off}\n" if single else f"{group},{t},{p},{off}\n")
    else:
        rows = [["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]]
        for group, (committed, targets) in plans.items():
            rows += [[group, t, str(p), cell(committed.get((t, p))), str(off)] for (t, p), off in sorted(targets.items())]
        table(rows, out)
    if not args.execute:
        sys.stderr.write("kgroup: dry run: nothing committed; add --execute to commit these offsets\n")
    else:
        for group, (_, targets) in plans.items():
            if not targets:
                continue
            with group_errors(group):
                if group in share_groups:
                    by_topic: dict[str, dict[int, int]] = {}
                    for (t, p), off in targets.items():
                        by_topic.setdefault(t, {})[p] = off
                    await admin.alter_share_group_offsets(group, by_topic)
                else:
                    await admin.alter_group_offsets(group, targets, require_empty=False)
        sys.stderr.write(f"kgroup: committed new offsets for {len(plans)} group(s)\n")
    if skipped:
        raise CliError(f"skipped {len(skipped)} active group(s): {', '.join(skipped)}",
                       "stop their consumers and reset those groups again")
    return 0


# -- delete-offsets ----------------------------------------------------------------------------


def _offset_delete_specs(args: Any) -> list[TopicSpec]:
    """--topic specs, and those of a --from-file of 'topic partition' lines."""
    specs = list(args.topic)
    if args.from_file is not None:
        try:
            listed = read_partition_list(Path(args.from_file).read_text())
        except FileNotFoundError:
            raise CliError(f"no such file: {args.from_file}", "give a file of 'topic partition' lines") from None
        except ValueError as exc:
            raise CliError(f"{args.from_file}: {exc}", "write one 'topic partition' (or topic,partition) a line") from None
        specs += [TopicSpec(t, tuple(ps)) for t, ps in listed.items()]
    if not specs:
        raise UsageError("say which offsets to delete", "give --topic TOPIC[:PARTITION,...] (repeatable) "
                         "or --from-file FILE")
    return specs


async def groups_delete_offsets(args: Any, admin: AdminClient, out: TextIO) -> int:
    """The same offsets deleted from each group named; with several, a GROUP column, and
    every group is tried, those with offsets not deleted named."""
    groups = list(dict.fromkeys([*args.groups, *args.group]))
    if not groups:
        raise UsageError("name a group (GROUP or --group GROUP)")
    specs = _offset_delete_specs(args)
    several = len(groups) > 1
    failed: list[str] = []
    for i, group in enumerate(groups):
        if i:
            out.write("\n")
        try:
            await _delete_offsets_of(group, specs, admin, out, several)
        except CliError as exc:
            if not several:
                raise
            sys.stderr.write(f"kgroup: group {group!r}: {exc} ({exc.hint})\n")
            failed.append(group)
    if failed:
        raise CliError(f"offsets of {len(failed)} of {len(groups)} group(s) not deleted: {', '.join(failed)}",
                       "see the reasons above")
    return 0


def _status_table(keys: list[list[str]], head: list[str], statuses: list[ErrorCode], group: str | None,
                  out: TextIO) -> None:
    prefix = ["GROUP"] if group is not None else []
    rows = [prefix + head + ["STATUS"]]
    rows += [([group] if group is not None else []) + k + ["Successful" if e is ErrorCode.NONE else e.name]
             for k, e in zip(keys, statuses)]
    table(rows, out)


async def _delete_offsets_of(group: str, specs: list[TopicSpec], admin: AdminClient, out: TextIO,
                             group_column: bool) -> None:
    if _is_share(await describe_group_or_none(admin, group)):
        return await _delete_share_offsets(group, specs, admin, out, group_column)
    wanted: dict[str, list[int]] = {}
    for spec in specs:
        wanted.setdefault(spec.topic, [])
        wanted[spec.topic] = sorted(set(wanted[spec.topic]) | set(await _partitions_of(admin, spec)))
    with group_errors(group):
        result = await admin.delete_group_offsets(group, wanted)
    done = sorted(result.items())
    _status_table([[t, str(p)] for (t, p), _ in done], ["TOPIC", "PARTITION"], [e for _, e in done],
                  group if group_column else None, out)
    failed = sorted({e for e in result.values() if e is not ErrorCode.NONE})
    if failed:
        hint = ("the group's members still consume that topic; stop them or unsubscribe first"
                if ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC in failed else "check the group and topic names")
        raise CliError(f"offsets of {sum(e is not ErrorCode.NONE for e in result.values())} partition(s) not "
                       f"deleted: {', '.join(e.name for e in failed)}", hint)


async def _delete_share_offsets(group: str, specs: list[TopicSpec], admin: AdminClient, out: TextIO,
                                group_column: bool) -> None:
    """A share group's state is deleted per topic (DeleteShareGroupOffsets, as Kafka's
    kafka-share-groups.sh --delete-offsets): its share partitions start afresh, from
    share.auto.offset.reset, when the group next reads the topic."""
    partial = [spec for spec in specs if spec.partitions is not None]
    if partial:
        raise CliError(f"share group {group!r}: offsets are deleted per topic, not per partition "
                       f"({partial[0].topic}:{','.join(map(str, partial[0].partitions))})",
                       f"use --topic {partial[0].topic}")
    topics = sorted({spec.topic for spec in specs})
    for topic in topics:
        await existing_topic(admin, topic)                 # "does not exist", as for other groups
    with group_errors(group):
        result = await admin.delete_share_group_offsets(group, topics)
    done = sorted(result.items())
    _status_table([[t] for t, _ in done], ["TOPIC"], [e for _, e in done], group if group_column else None, out)
    failed = sorted({e for e in result.values() if e is not ErrorCode.NONE})
    if failed:
        raise CliError(f"share group offsets of {sum(e is not ErrorCode.NONE for e in result.values())} "
                       f"topic(s) not deleted: {', '.join(e.name for e in failed)}",
                       "check the group and topic names")


# -- alter-config ------------------------------------------------------------------------------


async def groups_alter_config(args: Any, admin: AdminClient, out: TextIO) -> int:
    try:
        return await alter_and_print(admin, GROUP_RESOURCE, one_group(args), "group", args, out)
    except BrokerError as exc:
        # The broker answers an unknown name in Kafka's words, without the names it knows.
        if exc.code is ErrorCode.INVALID_CONFIG and "Unknown group config name" in str(exc):
            raise CliError(str(exc), f"valid names: {known_names()}") from None
        raise


# -- delete -------------------------------------------------------------------------------------


async def groups_delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    """Delete each group; with several, every one is tried and those not deleted are named."""
    groups = await _chosen_groups(args, admin)
    failed: list[str] = []
    active: list[str] = []
    for group in groups:
        try:
            await admin.delete_groups([group])
        except BrokerError as exc:
            if len(groups) == 1:
                raise_group_error(exc, group)
                raise
            if exc.code is ErrorCode.NON_EMPTY_GROUP:
                active.append(group)
            try:
                raise_group_error(exc, group)
                why = str(exc)
            except CliError as named:
                why = str(named)
            sys.stderr.write(f"kgroup: group {group!r} not deleted: {why}\n")
            failed.append(group)
            continue
        out.write(f"Deleted group {group}.\n")
    if failed:
        raise CliError(f"{len(failed)} of {len(groups)} group(s) not deleted: {', '.join(failed)}",
                       f"stop the consumers of {', '.join(active)} (see them with `kgroup groups describe "
                       f"{active[0]} --members`) and delete again" if active else
                       "check the names with `kgroup groups list`")
    return 0


GROUP_COMMANDS: dict[tuple[str, str], Callable[[Any, AdminClient, TextIO], Awaitable[int]]] = {
    ("groups", "list"): groups_list,
    ("groups", "describe"): groups_describe,
    ("groups", "reset-offsets"): groups_reset_offsets,
    ("groups", "delete"): groups_delete,
    ("groups", "delete-offsets"): groups_delete_offsets,
    ("groups", "alter-config"): groups_alter_config,
}
