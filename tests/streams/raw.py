"""Streams group members spoken by hand on the wire (StreamsGroupHeartbeat v1), so a scenario
controls every field (member and process ids, the topology, what each member reports) and
runs unchanged against kgroup and Apache Kafka 4.4 (tests/streams/test_streams_differential.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kgroup.wire.codec import request_class
from kgroup.wire.kio_build import build, item
from tests.streams.wire import STREAMS_HEARTBEAT, Wire

HB_VERSION = 1


def topology(*subtopologies: dict, epoch: int = 0) -> Any:
    """A StreamsGroupHeartbeat Topology from dicts: {"id", "sources", "sinks", "changelogs",
    "repartition" (name or (name, partitions)), "copartition": [[source indexes] or ([source indexes], [repartition source indexes])]}."""
    cls = request_class(STREAMS_HEARTBEAT, HB_VERSION)
    topo_cls = item(cls, "topology")               # an optional entity: `item` finds it too
    sub_cls = item(topo_cls, "subtopologies")
    info_cls = item(sub_cls, "state_changelog_topics")
    kv_cls = item(info_cls, "topic_configs")
    group_cls = item(sub_cls, "copartition_groups")

    def info(entry: Any, configs: dict) -> Any:
        name, partitions = (entry, 0) if isinstance(entry, str) else entry
        return build(info_cls, name=name, partitions=partitions, replication_factor=-1,
                     topic_configs=tuple(build(kv_cls, key=k, value=v) for k, v in configs.items()))

    subs = []
    for s in subtopologies:
        subs.append(build(
            sub_cls, subtopology_id=s["id"], source_topics=tuple(s.get("sources", ())), source_topic_regex=(),
            state_changelog_topics=tuple(info(c, {"cleanup.policy": "compact"}) for c in s.get("changelogs", ())),
            repartition_sink_topics=tuple(s.get("sinks", ())),
            repartition_source_topics=tuple(info(r, {"cleanup.policy": "delete", "retention.ms": "-1"})
                                            for r in s.get("repartition", ())),
            copartition_groups=tuple(build(group_cls, source_topics=tuple(g[0] if isinstance(g, tuple) else g),
                                           source_topic_regex=(),
                                           repartition_source_topics=tuple(g[1] if isinstance(g, tuple) else ()))
                                     for g in s.get("copartition", ()))))
    return build(topo_cls, epoch=epoch, subtopologies=tuple(subs))


def _task_ids(cls: type, tasks: set[tuple[str, int]]) -> tuple:
    out: dict[str, list[int]] = {}
    for s, p in sorted(tasks):
        out.setdefault(s, []).append(p)
    return tuple(build(cls, subtopology_id=s, partitions=tuple(ps)) for s, ps in sorted(out.items()))


def tasks_from(ids: Any) -> set[tuple[str, int]] | None:
    if ids is None:
        return None
    return {(t.subtopology_id, p) for t in ids for p in t.partitions}


@dataclass
class Member:
    """One streams member: what it holds (as the coordinator last said) and its epoch."""

    wire: Wire
    group: str
    member_id: str
    process_id: str
    topology: Any
    instance_id: str | None = None
    epoch: int = 0
    active: set = field(default_factory=set)
    standby: set = field(default_factory=set)
    warmup: set = field(default_factory=set)
    last: Any = None

    def heartbeat(self, *, epoch: int | None = None, topology: Any = None, report: bool = True, **extra) -> Any:
        """One heartbeat (a join at epoch 0 sends the topology); updates what it holds."""
        cls = request_class(STREAMS_HEARTBEAT, HB_VERSION)
        tasks_cls = item(cls, "active_tasks")
        epoch = self.epoch if epoch is None else epoch
        joining = epoch == 0
        fields = dict(
            group_id=self.group, member_id=self.member_id, member_epoch=epoch, endpoint_information_epoch=-1,
            instance_id=self.instance_id, rack_id=None, rebalance_timeout=30_000 if joining else -1,
            topology=(topology or self.topology) if joining else None,
            active_tasks=_task_ids(tasks_cls, set() if joining else self.active) if report or joining else None,
            standby_tasks=_task_ids(tasks_cls, set() if joining else self.standby) if report or joining else None,
            warmup_tasks=_task_ids(tasks_cls, set() if joining else self.warmup) if report or joining else None,
            process_id=self.process_id if joining else None, user_endpoint=None,
            client_tags=() if joining else None, task_offsets=() if joining else None,
            task_end_offsets=() if joining else None, shutdown_application=False)
        fields.update(extra)
        r = self.wire.coordinator_call(self.group, STREAMS_HEARTBEAT, HB_VERSION, **fields)
        self.last = r
        if int(r.error_code) == 0 and epoch >= 0:
            self.epoch = r.member_epoch
            for kind in ("active", "standby", "warmup"):
                got = tasks_from(getattr(r, f"{kind}_tasks"))
                if got is not None:
                    setattr(self, kind, got)
        return r

    def leave(self, epoch: int = -1) -> Any:
        r = self.heartbeat(epoch=epoch, report=False)
        self.active, self.standby, self.warmup = set(), set(), set()
        return r


def normalized_status(status: Any) -> list[tuple[int, str]]:
    """(code, detail), the names after "Internal topics are missing: " sorted (Kafka lists them
    in hash-map order)."""
    out = []
    for s in status or ():
        detail = s.status_detail
        prefix = "Internal topics are missing: "
        if detail.startswith(prefix):
            names, sep, rest = detail[len(prefix):].partition(";")
            detail = prefix + ", ".join(sorted(names.split(", "))) + sep + rest
        out.append((int(s.status_code), detail))
    return out
