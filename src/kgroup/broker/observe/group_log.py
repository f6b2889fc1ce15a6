"""Group changes as log lines: what an operator wants to read about the coordinator.

How this works: the group observer (group_observer.py) hands each group event here with
what it knows of the member (client id, host) and, for `rebalance_completed`, the rebalance
it closed (group_history.py). One INFO line per change that matters: a member joined, left,
expired or was fenced; a rebalance started (and why) or completed (generation or epoch, how
long, how many members, how many partitions moved); a group emptied or deleted; offsets
expired. Intermediate states and assignments go to DEBUG. A steady group (heartbeats,
commits) has no events, so it logs nothing.

Two WARNINGs watch for trouble over a sliding window (`[log] rebalance_warn_window_ms`):
a group that rebalanced more than `rebalance_warn_count` times, and a member (by instance
id, else client id and host) fenced more than `fenced_warn_count` times. Each warns at most
once per window per group or member, so a flapping group does not flood the log.

Each record carries its fields under `record.kgroup` (group, event, member, ...), which
`--log-format json` writes as keys (log_format.py).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Mapping

from kgroup.broker.config import LoggingConfig
from kgroup.broker.observe.group_history import MemberInfo, Rebalance, humane
from kgroup.group_types import CLASSIC, group_type

log = logging.getLogger("kgroup.broker.groups")

INFO, DEBUG, WARNING = logging.INFO, logging.DEBUG, logging.WARNING
GONE = {"member_left": "left", "member_expired": "expired", "member_fenced": "fenced"}


class GroupLog:
    def __init__(self, config: LoggingConfig | None = None, logger: logging.Logger = log) -> None:
        self.config = config or LoggingConfig()
        self.logger = logger
        self._rebalanced: dict[str, deque[int]] = {}      # group -> completion times in the window
        self._fenced: dict[tuple[str, str], deque[int]] = {}
        self._warned: dict[tuple[str, ...], int] = {}       # what -> when it last warned

    # ---- events ---------------------------------------------------------------------------

    def event(self, e: Mapping[str, Any], member: MemberInfo | None = None, done: Rebalance | None = None) -> None:
        """Log one group event (README "Group events" layout)."""
        kind = e.get("kind")
        group = e.get("group")
        t = int(e.get("time_ms") or 0)
        generation = e.get("generation")
        kind_of = group_type(e.get("protocol"))
        unit = kind_of.generation_name if kind_of is not None else CLASSIC.generation_name
        if kind == "member_joined":
            extra = f", replacing {e['replaced']}" if e.get("replaced") else ""
            self._say(INFO, e, "member %s joined (%s%s)", e.get("member"), _who(member, e), extra,
                      **_client(member))
        elif kind in GONE:
            why = e.get("reason") or "no reason given"
            if e.get("temporary"):
                self._say(INFO, e, "member %s left temporarily (%s; static member, keeps its partitions until "
                          "its session times out; %s)", e.get("member"), why, _who(member, e), **_client(member))
            else:
                self._say(INFO, e, "member %s %s (%s; %s)", e.get("member"), GONE[kind], why, _who(member, e),
                          **_client(member))
            if kind == "member_fenced":
                self._fence(e, member, t)
        elif kind == "rebalance_started" and e.get("state") == "Empty":
            # A consumer group's epoch moves when its last member leaves: that is no rebalance.
            self._say(INFO, e, "now Empty (no members)")
        elif kind == "rebalance_started":
            self._say(INFO, e, "rebalance started (cause: %s; %s %s)", humane(e.get("reason")) or "unknown",
                      "from generation" if unit == "generation" else unit, generation)
        elif kind == "rebalance_completed":
            if done is not None:
                self._say(INFO, e, "rebalance completed (%s %s, %s ms, %s, %s moved)", unit,
                          generation, done.duration_ms, _count(done.members, "member"),
                          _count(len(done.moved), "partition"),
                          duration_ms=done.duration_ms, members=done.members, moved=len(done.moved),
                          cause=done.cause)
            else:
                self._say(INFO, e, "rebalance completed (%s %s)", unit, generation)
            self._rebalance(e, t)
        elif kind == "group_state":
            state = e.get("state")
            if state == "Empty":
                self._say(INFO, e, "now Empty (no members)")
            elif state == "Dead":
                self._say(INFO, e, "deleted")
                self._forget(str(group))
            else:
                self._say(DEBUG, e, "state %s (%s %s)", state, unit, generation)
        elif kind == "assignment_changed":
            parts = e.get("partitions")
            self._say(DEBUG, e, "member %s assigned %s", e.get("member"),
                      "an undecodable assignment" if parts is None else f"{len(parts)} partitions")
        elif kind == "txn_offsets_committed":
            # One per committed transaction of an exactly-once application: DEBUG, not INFO.
            self._say(DEBUG, e, "a transaction committed offsets of %s (%s)",
                      _count(len(e.get("partitions") or ()), "partition"), e.get("reason"))

    def offsets_expired(self, group: str, count: int, now_ms: int) -> None:
        self._say(INFO, {"group": group, "kind": "offsets_expired", "time_ms": now_ms},
                  "%s expired (offsets retention)", _count(count, "committed offset"), count=count)

    # ---- warnings -------------------------------------------------------------------------

    def _window(self, times: deque[int], t: int) -> int:
        window = self.config.rebalance_warn_window_ms
        times.append(t)
        while times and times[0] <= t - window:
            times.popleft()
        return len(times)

    def _once_per_window(self, key: tuple[str, ...], t: int) -> bool:
        last = self._warned.get(key)
        if last is not None and t - last < self.config.rebalance_warn_window_ms:
            return False
        self._warned[key] = t
        return True

    def _rebalance(self, e: Mapping[str, Any], t: int) -> None:
        group = str(e.get("group"))
        count = self._window(self._rebalanced.setdefault(group, deque()), t)
        limit = self.config.rebalance_warn_count
        if count > limit and self._once_per_window(("rebalance", group), t):
            self._say(WARNING, e, "%d rebalances in the last %d s (more than %d): members keep joining, "
                      "leaving or timing out; check their logs, session.timeout.ms and max.poll.interval.ms",
                      count, self.config.rebalance_warn_window_ms // 1000, limit, rebalances=count)

    def _fence(self, e: Mapping[str, Any], member: MemberInfo | None, t: int) -> None:
        group = str(e.get("group"))
        who = e.get("instance") or (f"{member.client_id}@{member.client_host}"
                                    if member is not None and member.client_id is not None else e.get("member"))
        count = self._window(self._fenced.setdefault((group, str(who)), deque()), t)
        limit = self.config.fenced_warn_count
        if count > limit and self._once_per_window(("fenced", group, str(who)), t):
            self._say(WARNING, e, "member %s fenced %d times in the last %d s (more than %d): it keeps "
                      "falling behind the group (revocation or rebalance timeout) or another process uses "
                      "its group.instance.id", who, count, self.config.rebalance_warn_window_ms // 1000, limit,
                      fenced=count)

    def _forget(self, group: str) -> None:
        self._rebalanced.pop(group, None)
        for key in [k for k in self._fenced if k[0] == group]:
            del self._fenced[key]
        for key in [k for k in self._warned if k[1] == group]:
            del self._warned[key]

    # ---- output ---------------------------------------------------------------------------

    def _say(self, level: int, e: Mapping[str, Any], text: str, *args: Any, **fields: Any) -> None:
        if not self.logger.isEnabledFor(level):
            return
        data = {"group": e.get("group"), "event": e.get("kind")}
        for key in ("member", "instance", "generation", "member_epoch", "state", "reason"):
            if e.get(key) is not None:
                data[key] = e[key]
        data.update(fields)
        self.logger.log(level, "group %s: " + text, e.get("group"), *args, extra={"kgroup": data})


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _client(member: MemberInfo | None) -> dict[str, Any]:
    if member is None or member.client_id is None:
        return {}
    return {"client_id": member.client_id, "client_host": member.client_host}


def _who(member: MemberInfo | None, e: Mapping[str, Any]) -> str:
    parts = []
    if member is not None and member.client_id is not None:
        parts.append(f"client id {member.client_id or '-'}, host {member.client_host or '-'}")
    instance = e.get("instance") or (member.instance_id if member is not None else None)
    if instance:
        parts.append(f"instance {instance}")
    return ", ".join(parts) or "client unknown"
