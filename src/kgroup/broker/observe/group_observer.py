"""Watches the group events the broker derives: logs them, keeps timelines, feeds the console.

How this works: the event stream (event_stream.py) hands every batch of `GroupEvent`s to
`GroupObserver.group_events` right after the change that made them, whether or not it writes
them to `__kgroup_events` (`--no-group-events` turns the topic off, not the observer). For
each event, in the contract's dict layout, the observer

1. looks up the member's client id and host in the coordinator when it joins (events do
   not carry them; a departed member's come from its timeline),
2. folds the event into the group's timeline (group_history.py), which says when a
   rebalance completes and what it moved,
3. hands event, member and rebalance to the group log (group_log.py), counts the
   rebalance's duration for /metrics, and
4. tells listeners (the web console) which groups changed.

It runs on the event loop between requests and costs nothing while groups are steady (no
events). A failure here is logged once and never reaches a group request.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from kgroup.broker.config import LoggingConfig
from kgroup.broker.observe.group_history import DEPARTED, GroupHistory, MemberInfo
from kgroup.broker.observe.group_log import GroupLog
from kgroup.broker.observe.group_view import GroupViews, client_of
from kgroup.broker.observe.request_stats import REBALANCE_BUCKETS, Buckets
from kgroup.core.records import OffsetCommitRecord

if TYPE_CHECKING:
    from kgroup.broker.groups.shard import Shard

log = logging.getLogger("kgroup.broker.groups")


class GroupObserver:
    def __init__(self, logging_config: LoggingConfig | None = None, keep_rebalances: int = 50) -> None:
        self.history = GroupHistory(keep_rebalances)
        self.log = GroupLog(logging_config)
        # protocol (a group kind's name) -> rebalance durations in seconds
        self.rebalance_seconds: dict[str, Buckets] = {}
        self.events_seen: dict[str, int] = {}            # event kind -> count
        self.listeners: list[Callable[[set[str]], None]] = []
        self.failures = 0

    # ---- what the event stream calls ------------------------------------------------------

    def loaded(self, shard: Shard) -> None:
        """A shard finished loading: its groups, as they are, start their timelines."""
        try:
            for view in GroupViews(lambda: (shard.coordinator,)).all_in(shard.coordinator):
                self.history.seed(view.group_id, view.kind, view.state, view.generation, [
                    MemberInfo(m.member_id, m.instance_id, m.client_id, m.client_host, m.member_epoch,
                               m.partitions) for m in view.members])
        except Exception:
            self._failed("reading loaded groups")

    def group_events(self, shard: Shard, events: Sequence[Any]) -> None:
        """Events just derived for groups of `shard` (GroupEvent objects, in order)."""
        try:
            changed: set[str] = set()
            history = self.history
            for event in events:
                e = event.as_dict()
                kind = e["kind"]
                group = e["group"]
                member_id = e.get("member")
                changed.add(group)
                self.events_seen[kind] = self.events_seen.get(kind, 0) + 1
                member: MemberInfo | None = None
                client = None
                if kind in DEPARTED and member_id:
                    timeline = history.groups.get(group)
                    member = timeline.members.get(member_id) if timeline is not None else None
                elif kind == "member_joined" and member_id:
                    client = client_of(shard.coordinator, group, member_id)
                done = history.apply(e, client)
                if kind == "member_joined" and member_id:
                    timeline = history.groups.get(group)
                    member = timeline.members.get(member_id) if timeline is not None else None
                if done is not None and done.duration_ms is not None:
                    buckets = self.rebalance_seconds.get(done.protocol)
                    if buckets is None:
                        buckets = self.rebalance_seconds[done.protocol] = Buckets(REBALANCE_BUCKETS)
                    buckets.observe(done.duration_ms / 1000)
                self.log.event(e, member, done)
            self._tell(changed)
        except Exception:
            self._failed("observing group events")

    def offsets_expired(self, records: Iterable[Any], now_ms: int) -> None:
        """The offsets-expiry timer wrote `records`: log the tombstones per group."""
        try:
            counts: dict[str, int] = {}
            for r in records:
                if type(r) is OffsetCommitRecord and r.value is None:
                    counts[r.group_id] = counts.get(r.group_id, 0) + 1
            for group, count in counts.items():
                self.log.offsets_expired(group, count, now_ms)
            self._tell(set(counts))
        except Exception:
            self._failed("logging expired offsets")

    # ---- helpers --------------------------------------------------------------------------

    def _tell(self, groups: set[str]) -> None:
        if groups:
            for listener in self.listeners:
                listener(groups)

    def _failed(self, what: str) -> None:
        self.failures += 1
        if self.failures == 1:
            log.exception("%s failed (group requests are not affected)", what)
