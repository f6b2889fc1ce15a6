"""`kgroup groups watch [GROUP]`: a live, full-screen terminal view of one group or of all.

How this works: every `--interval-ms` the view asks the broker over the wire what any
Kafka-compatible broker answers — the API that describes the group's kind (DescribeGroups,
ConsumerGroupDescribe, ShareGroupDescribe: state, members, assignments), where the group
stands (OffsetFetch's committed offsets, or a share group's start offsets from
DescribeShareGroupOffsets: what its kind keeps, kgroup/group_types.py) and ListOffsets (log
ends, hence lag) — and redraws the screen in place (the terminal's alternate screen, as `top` does). Against
kgroup, which writes every group change to `__kgroup_events`, it also follows that topic
(from its last `BACKLOG` events, then as they come) and folds the events into the same
group timelines the broker keeps (broker/observe/group_history.py): generation, when members
joined, and the last rebalances with their cause, duration and partitions moved. Without
the topic those parts say so.

`q` (or Ctrl-C) quits and gives the terminal back as it was; `r` refreshes at once. The
view is made of plain ANSI escape sequences: `render_group` and `render_groups` are pure
functions from what was fetched to the lines on screen.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Any, TextIO

from kgroup.broker.observe.group_history import GroupHistory, GroupTimeline, humane
from kgroup.client.admin import EARLIEST, AdminClient
from kgroup.client.errors import BrokerError, UnsupportedApi
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, CONSUMER, GroupType, Positions, group_type
from kgroup.storage.group_hash import partition_for_group

from . import member_telemetry
from .commands import log_end_offsets
from .errors import CliError

EVENTS_TOPIC = "__kgroup_events"
BACKLOG = 20_000                 # events read back when the view starts
FETCH_ROUNDS = 20                # at most this many fetches of the event topic per refresh
REBALANCES_SHOWN = 8
UNKNOWN = "?"


# ---- what is fetched ---------------------------------------------------------------------

@dataclass
class MemberRow:
    member_id: str
    client_id: str
    host: str
    instance_id: str | None
    partitions: list[tuple[str, int]] | None      # None: not a ConsumerProtocol assignment


@dataclass
class PartitionRow:
    topic: str
    partition: int
    owner: str | None
    committed: int | None
    end: int | None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end is None or self.committed < 0:
            return None
        return max(0, self.end - self.committed)


@dataclass
class GroupSnapshot:
    group: str
    state: str
    protocol_type: str
    protocol: str
    epoch: int | None
    members: list[MemberRow] = field(default_factory=list)
    partitions: list[PartitionRow] = field(default_factory=list)
    # Its kind's name, as the API that described it tells ("": not described).
    group_type: str = ""

    @property
    def kind(self) -> GroupType | None:
        return group_type(self.group_type)

    @property
    def lag(self) -> int | None:
        lags = [p.lag for p in self.partitions if p.lag is not None]
        return sum(lags) if lags else None


@dataclass
class GroupRow:
    group: str
    group_type: str
    state: str
    members: int | None
    lag: int | None


async def fetch_group(admin: AdminClient, group: str) -> GroupSnapshot | None:
    """One group as the wire protocol shows it; None if the broker knows no such group."""
    try:
        desc = await admin.describe_group(group)
    except UnsupportedApi:
        desc = None
    kind = (group_type(desc.group_type) if desc is not None else None) or CLASSIC
    if kind.positions is Positions.SHARE_STATE:
        committed = await admin.list_share_group_offsets(group)
    else:
        committed = await admin.list_group_offsets(group)
    if desc is not None and desc.state == "Dead" and not committed:
        return None
    snap = GroupSnapshot(group, desc.state if desc else UNKNOWN, desc.protocol_type if desc else "",
                         desc.protocol if desc else "", desc.epoch if desc else None,
                         group_type=desc.group_type if desc else "")
    owners: dict[tuple[str, int], list[str]] = {}
    for m in desc.members if desc else ():
        parts = None
        if m.assignment is not None:
            parts = sorted((t, p) for t, ps in m.assignment.items() for p in ps)
            for tp in parts:
                owners.setdefault(tp, []).append(m.client_id or m.member_id)
        snap.members.append(MemberRow(m.member_id, m.client_id, m.client_host, m.group_instance_id, parts))
    keys = set(committed) | set(owners)
    ends = await log_end_offsets(admin, {t for t, _ in keys})
    # A partition of a kind that shares partitions may have several owners.
    snap.partitions = [PartitionRow(t, p, ",".join(owners[(t, p)]) if (t, p) in owners else None,
                                    committed.get((t, p)), ends.get((t, p)))
                       for t, p in sorted(keys)]
    return snap


async def fetch_groups(admin: AdminClient, limit: int) -> tuple[list[GroupRow], int]:
    """The first `limit` groups with members and lag, and how many groups there are."""
    listed = sorted(await admin.list_groups(), key=lambda g: g.group_id)
    rows = []
    for g in listed[:limit]:
        snap = await fetch_group(admin, g.group_id)
        if snap is None:
            continue
        rows.append(GroupRow(g.group_id, g.group_type or snap.group_type or CLASSIC.name,
                             snap.state, len(snap.members), snap.lag))
    return rows, len(listed)


class EventFollower:
    """Follows `__kgroup_events` (if the broker has it) into a GroupHistory.

    The topic has a partition per group-metadata partition, and a group's events are all in
    the one of its coordinator: a watched group is followed there; all groups, in every
    partition (merged by time: each group's events stay in order)."""

    def __init__(self, admin: AdminClient, group: str | None) -> None:
        self.admin = admin
        self.group = group
        self.key = group.encode() if group is not None else None
        self.history = GroupHistory(keep=REBALANCES_SHOWN * 4)
        self.offsets: dict[int, int] | None = None
        self.available: bool | None = None        # None: not looked yet

    async def poll(self) -> None:
        admin = self.admin
        if self.offsets is None:
            md = await admin.metadata([EVENTS_TOPIC])
            info = md.topics.get(EVENTS_TOPIC)
            self.available = info is not None and info.error is ErrorCode.NONE and bool(info.partitions)
            if not self.available:
                return
            count = len(info.partitions)
            partitions = ([partition_for_group(self.group, count)] if self.group is not None
                          else list(range(count)))
            latest = await admin.list_offsets(EVENTS_TOPIC, partitions)
            earliest = await admin.list_offsets(EVENTS_TOPIC, partitions, EARLIEST)
            self.offsets = {p: max(earliest[p], latest[p] - BACKLOG) for p in partitions}
        for _ in range(FETCH_ROUNDS):
            got = await admin.fetch_many(EVENTS_TOPIC, dict(self.offsets), max_wait_ms=0)
            events = []
            for p, fetched in got.items():
                if fetched.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                    self.offsets[p] = (await admin.list_offsets(EVENTS_TOPIC, [p], EARLIEST))[p]
                    continue
                if fetched.error is not ErrorCode.NONE:
                    continue
                for r in fetched.records:
                    self.offsets[p] = r.offset + 1
                    if self.key is not None and r.key != self.key:
                        continue
                    try:
                        event = json.loads(r.value or b"")
                    except ValueError:
                        continue
                    if isinstance(event, dict):
                        events.append(event)
            if not any(fetched.records for fetched in got.values()):
                return
            for event in sorted(events, key=lambda e: int(e.get("time_ms") or 0)):
                self.history.apply(event)


# ---- what is drawn -----------------------------------------------------------------------

def _table(rows: list[list[str]]) -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def _ms(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value} ms" if value < 10_000 else f"{value / 1000:.1f} s"


def _clock(ms: int | None) -> str:
    return "-" if not ms else time.strftime("%H:%M:%S", time.localtime(ms / 1000))


def _parts(parts: list[tuple[str, int]] | None) -> str:
    if parts is None:
        return "<not ConsumerProtocol>"
    return ",".join(f"{t}-{p}" for t, p in parts) or "-"


def _rebalances(timeline: GroupTimeline | None, events: bool | None, kind: GroupType) -> list[str]:
    unit = _unit(kind)
    if events is False:
        return ["LAST REBALANCES: not available (the broker has no __kgroup_events topic)"]
    if timeline is None or not (timeline.rebalances or timeline.open):
        return ["LAST REBALANCES: none seen in __kgroup_events"]
    rows = [["WHEN", unit, "CAUSE", "DURATION", "MEMBERS", "MOVED"]]
    if timeline.open is not None:
        rows.append([_clock(timeline.open.started_ms), "...", humane(timeline.open.cause) or "-", "in progress",
                     "-", "-"])
    for r in reversed(list(timeline.rebalances)[-REBALANCES_SHOWN:]):
        rows.append([_clock(r.started_ms), str(r.generation), humane(r.cause) or "-", _ms(r.duration_ms),
                     str(r.members), str(len(r.moved))])
    return ["LAST REBALANCES (from __kgroup_events)", *_table(rows)]


def render_group(snap: GroupSnapshot | None, group: str, timeline: GroupTimeline | None,
                 events: bool | None, pushed: dict[str, dict[str, float]] | None = None) -> list[str]:
    """The lines of the one-group view (without the title line); with `pushed` (--telemetry:
    member id -> its client's key metrics, KIP-714) each member's own metrics too."""
    if snap is None:
        return [f"Group {group!r} does not exist (yet): waiting for it to appear."]
    protocol = f"{snap.protocol_type}/{snap.protocol}" if snap.protocol else (snap.protocol_type or "-")
    kind = snap.kind or (group_type(timeline.protocol) if timeline is not None else None) or CLASSIC
    if snap.epoch is not None and not kind.by_epoch:
        kind = CONSUMER                 # described with a group epoch: a kind that moves by them
    generation = snap.epoch if snap.epoch is not None else (timeline.generation if timeline is not None else None)
    unit = _unit(kind)
    out = [f"STATE {snap.state}   PROTOCOL {protocol}   {unit} {_n(generation)}   "
           f"MEMBERS {len(snap.members)}   LAG {_n(snap.lag)}", ""]
    if snap.state == UNKNOWN:
        out[1:1] = ["(this broker does not describe groups: members and state are unknown)"]
    if snap.members:
        rows = [["MEMBER-ID", "CLIENT-ID", "HOST", "INSTANCE-ID", "JOINED", "PARTITIONS"]]
        rows[0] += [c for c, _ in member_telemetry.COLUMNS] if pushed is not None else []
        for m in snap.members:
            info = timeline.members.get(m.member_id) if timeline is not None else None
            rows.append([m.member_id, m.client_id or "-", m.host or "-", m.instance_id or "-",
                         _clock(info.joined_ms) if info is not None else "-", _parts(m.partitions)])
            rows[-1] += member_telemetry.cells(pushed.get(m.member_id)) if pushed is not None else []
        out += _table(rows)
    else:
        out.append("(no members)")
    out.append("")
    if snap.partitions:
        rows = [["TOPIC", "PARTITION", "OWNER", "COMMITTED", "LOG-END", "LAG"]]
        for p in snap.partitions:
            rows.append([p.topic, str(p.partition), p.owner or "-", _n(p.committed), _n(p.end), _n(p.lag)])
        out += _table(rows)
    else:
        out.append("(no partitions assigned or committed)")
    out.append("")
    out += _rebalances(timeline, events, kind)
    return out


def _unit(kind: GroupType) -> str:
    """The column a kind's generation number is shown under."""
    return "EPOCH" if kind.by_epoch else "GENERATION"


def render_groups(rows: list[GroupRow], total: int, history: GroupHistory | None, events: bool | None) -> list[str]:
    """The lines of the all-groups view (without the title line)."""
    if not rows:
        return ["No groups yet."]
    table = [["GROUP", "TYPE", "STATE", "MEMBERS", "LAG", "REBALANCES", "LAST REBALANCE"]]
    for r in rows:
        t = history.groups.get(r.group) if history is not None else None
        last = t.last_rebalance if t is not None else None
        if t is not None and t.open is not None:
            when = "in progress"
        elif last is not None:
            when = f"{_clock(last.completed_ms)} ({_ms(last.duration_ms)}, {humane(last.cause) or '-'})"
        else:
            when = "-"
        table.append([r.group, r.group_type, r.state, _n(r.members), _n(r.lag),
                      _n(t.rebalance_count) if t is not None else ("-" if not events else "0"), when])
    out = _table(table)
    if total > len(rows):
        out.append(f"... and {total - len(rows)} more (make the terminal taller, or name a GROUP)")
    if events is False:
        out += ["", "Rebalance history: not available (the broker has no __kgroup_events topic)."]
    return out


# ---- the terminal ------------------------------------------------------------------------

class Screen:
    """The alternate screen, no cursor, keys without Enter; all put back on exit."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.fd = sys.stdin.fileno() if sys.stdin.isatty() else None
        self.saved: Any = None

    def __enter__(self) -> Screen:
        if self.fd is not None:
            import termios
            import tty

            self.saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
        self.out.write("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
        self.out.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        self.out.write("\x1b[?25h\x1b[?1049l")
        self.out.flush()
        if self.saved is not None:
            import termios

            termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)

    def draw(self, lines: list[str]) -> None:
        size = shutil.get_terminal_size()
        shown = [line[:size.columns] for line in lines[:size.lines]]
        self.out.write("\x1b[H" + "\x1b[K\r\n".join(shown) + "\x1b[K\x1b[J")
        self.out.flush()


async def groups_watch(args: Any, admin: AdminClient, out: TextIO) -> int:
    if not out.isatty():
        raise CliError("kgroup groups watch draws on a terminal, and stdout is not one",
                       "run it in a terminal, or use `kgroup groups describe GROUP` for a one-off view")
    loop = asyncio.get_running_loop()
    quit_ = asyncio.Event()
    wake = asyncio.Event()
    follower = EventFollower(admin, args.group)
    frame: list[str] = []

    def on_key() -> None:
        keys = os.read(sys.stdin.fileno(), 64)
        if b"q" in keys or b"Q" in keys or b"\x03" in keys:
            quit_.set()
        elif b"r" in keys or b"R" in keys:
            wake.set()

    with Screen(out) as screen:
        if screen.fd is not None:
            loop.add_reader(screen.fd, on_key)
        loop.add_signal_handler(signal.SIGINT, quit_.set)
        loop.add_signal_handler(signal.SIGWINCH, lambda: screen.draw(frame))
        try:
            while not quit_.is_set():
                size = shutil.get_terminal_size()
                error = None
                try:
                    try:
                        await follower.poll()
                    except (BrokerError, OSError) as exc:       # history is a bonus: go on without
                        follower.available = follower.available or None
                        error = f"events: {exc}"
                    if args.group is not None:
                        snap = await fetch_group(admin, args.group)
                        pushed = (await member_telemetry.by_member(args.telemetry, args.group)
                                  if getattr(args, "telemetry", None) else None)
                        body = render_group(snap, args.group, follower.history.groups.get(args.group),
                                            follower.available, pushed)
                    else:
                        rows, total = await fetch_groups(admin, max(1, size.lines - 6))
                        body = render_groups(rows, total, follower.history, follower.available)
                except (BrokerError, OSError, asyncio.TimeoutError, CliError) as exc:
                    error = str(exc)
                    body = frame[2:] if frame else []
                what = f"group {args.group}" if args.group is not None else "all groups"
                title = (f"kgroup groups watch: {what} @ {args.bootstrap_server}   "
                         f"{time.strftime('%H:%M:%S')}   (q quits, r refreshes)")
                status = f"! {error}" if error else ""
                frame = [title, status, *body]
                screen.draw(frame)
                wake.clear()
                waits = [asyncio.ensure_future(quit_.wait()), asyncio.ensure_future(wake.wait())]
                await asyncio.wait(waits, timeout=args.interval_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    w.cancel()
        finally:
            if screen.fd is not None:
                loop.remove_reader(screen.fd)
            loop.remove_signal_handler(signal.SIGINT)
            loop.remove_signal_handler(signal.SIGWINCH)
    return 0
