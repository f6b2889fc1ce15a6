"""A recorded group event stream (the broker's ``__kgroup_events``) as a lab scenario.

"What if this group had used static membership?" The broker records every group change as
an event (see README, "Group events"); this module turns one group's events into a scenario
whose members start, stop and die when the recorded ones did, so the lab can replay that
history under another protocol, assignor or timeout and compare.

How members are recognised: a static member by its instance id. A dynamic member gets a new
member id on every restart, so a join is taken as the restart of the member that left or
expired longest ago within ``restart_window_s`` (a rolling restart looks like that); other
joins are new processes. Departures map to a clean ``stop`` (member_left) or a ``kill``
(member_expired, member_fenced: it vanished without leaving). A coordinator move (a
``coordinator_loaded`` event of a cluster node taking the group over, or of a restart) becomes
a ``coordinator_failover`` that loads for the recorded ``load_ms``. Topics and partition counts
come from the recorded assignments. Everything not in the stream (assignor, timeouts) is the
caller's choice, through ``overrides``.

A member that leaves and is never taken as restarted is *gone* from then on (the lab counts
no unowned partitions while every member is gone), and a recording that ends with nobody in
the group ends the replay a few seconds after its last event instead of ``tail_s`` later.
``Recording.story`` says, per replayed member, when it ran: what the replay is of.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Iterable

from kgroup.group_types import CLASSIC, group_type
from kgroup.lab.scenario import ScenarioError

JOINED = "member_joined"
GONE_CLEANLY = ("member_left",)
GONE_DEAD = ("member_expired", "member_fenced")


@dataclass
class Recording:
    """One group's history, ready to replay: the scenario data and how it was read."""

    scenario: dict[str, Any]
    protocol: str
    members: int
    restarts: int
    rebalances: int                   # rebalance_completed events the broker recorded
    notes: list[str] = field(default_factory=list)
    story: list[str] = field(default_factory=list)   # per member (m000...): when it ran


def group_ids(events: Iterable[dict[str, Any]]) -> list[str]:
    return sorted({str(e.get("group")) for e in events if e.get("group") is not None})


EMPTY_TAIL_S = 5.0                   # after the last event of a group that ended empty


def recording(events: Iterable[dict[str, Any]], group: str, *, overrides: dict[str, Any] | None = None,
              restart_window_s: float = 120.0, tail_s: float = 120.0) -> Recording:
    """The scenario that replays ``group``'s recorded events (sorted by time as given)."""
    mine = sorted((e for e in events if e.get("group") == group), key=lambda e: int(e.get("time_ms", 0)))
    if not mine:
        raise ScenarioError(f"no events of group {group!r} in the recording")
    t0 = int(mine[0]["time_ms"])
    protocol = str(mine[0].get("protocol") or CLASSIC.name)
    slots: dict[str, int] = {}                  # member id or instance id -> member index
    away: list[tuple[int, int]] = []            # (left at ms, index) of dynamic members gone
    alive: set[int] = set()
    runs: dict[int, list[list[Any]]] = {}      # index -> [from s, to s or None, how it ended]
    lifecycle: list[dict[str, Any]] = []
    partitions: dict[str, int] = {}
    restarts = rebalances = 0
    notes: list[str] = []

    def at(e: dict[str, Any]) -> float:
        # Start the replay a second in, so the first members are there before anything else.
        return round(1.0 + (int(e["time_ms"]) - t0) / 1000, 3)

    def slot_of(e: dict[str, Any], joining: bool) -> int:
        nonlocal restarts
        key = e.get("instance") or e.get("member")
        if key in slots:
            return slots[key]
        index = None
        if joining and not e.get("instance"):
            window = int(e["time_ms"]) - restart_window_s * 1000
            fits = [(t, i) for t, i in away if t >= window]
            if fits:
                index = min(fits)[1]
                away.remove(min(fits))
                restarts += 1
        if index is None:
            index = len({*slots.values()})
        if e.get("replaced") and e["replaced"] in slots:
            index = slots[e["replaced"]]
        slots[str(key)] = index
        return index

    for e in mine:
        kind = e.get("kind")
        if kind == "rebalance_completed":
            rebalances += 1
        for topic, p in e.get("partitions") or ():
            partitions[str(topic)] = max(partitions.get(str(topic), 0), int(p) + 1)
        if kind == "coordinator_loaded" and e.get("previous_node") is not None:
            # The group's coordinator moved (a takeover, a hand-back, a restart): it loaded
            # for load_ms before this event; how long nobody served it before is not known.
            load_s = int(e.get("load_ms") or 0) / 1000
            lifecycle.append({"coordinator_failover": {"at_s": max(0.0, round(at(e) - load_s, 3)),
                                                       "detect_s": 0.0, "load_s": load_s}})
            continue
        if e.get("member") is None:
            continue
        if kind == JOINED:
            index = slot_of(e, joining=True)
            if index not in alive:
                alive.add(index)
                lifecycle.append({"start": {"at_s": at(e), "member": index}})
                runs.setdefault(index, []).append([at(e), None, ""])
        elif kind in GONE_CLEANLY or kind in GONE_DEAD:
            if e.get("temporary"):
                continue                         # a static consumer member away for a while
            index = slot_of(e, joining=False)
            if index in alive:
                alive.discard(index)
                runs[index][-1][1:] = [at(e), "left" if kind in GONE_CLEANLY else kind.removeprefix("member_")]
                lifecycle.append({("stop" if kind in GONE_CLEANLY else "kill"): {"at_s": at(e), "member": index}})
                if not e.get("instance"):
                    away.append((int(e["time_ms"]), index))
            else:
                notes.append(f"{kind} of a member never seen joining at {at(e)} s: ignored")
    if not partitions:
        raise ScenarioError(f"group {group!r}: no assignment in the recording, so no topic to replay")
    members = len(set(slots.values()))
    duration = at(mine[-1]) + (tail_s if alive else min(tail_s, EMPTY_TAIL_S))
    scenario: dict[str, Any] = {
        "name": f"recorded {group}",
        "duration_s": duration,
        "topics": dict(sorted(partitions.items())),
        "members": {"count": 0, "protocol": protocol,
                    "assignor": "uniform" if (group_type(protocol) or CLASSIC).by_epoch else "range",
                    "static": any(e.get("instance") for e in mine)},
        "events": lifecycle,
    }
    for key, value in (overrides or {}).items():
        _override(scenario, key, value)
    return Recording(scenario, protocol, members, restarts, rebalances, notes, _story(runs))


def _story(runs: dict[int, list[list[Any]]]) -> list[str]:
    """``m001 ran 1.0-5.2 s (left), 6.0-20.3 s (left), then gone``: one line per member."""
    lines = []
    for index, spans in sorted(runs.items()):
        parts = [f"{_s(a)}-{_s(b)} s ({how})" if b is not None else f"from {_s(a)} s to the end" for a, b, how in spans]
        gone = spans[-1][1] is not None
        lines.append(f"m{index:03d} ran {', '.join(parts)}" + (", then gone" if gone else ""))
    return lines


def _override(scenario: dict[str, Any], path: str, value: Any) -> None:
    """``members.static=true``-style overrides; a bare key means ``members.<key>``."""
    parts = path.split(".") if "." in path else ["members", path]
    node = scenario
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = copy.deepcopy(value)


def _s(seconds: float) -> str:
    return f"{round(seconds, 1):g}"
