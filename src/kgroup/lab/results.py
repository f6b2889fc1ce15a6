"""One simulated group's results as flat rows: what Parquet, the report and tests read.

``simulate`` runs a scenario through the engine and returns a ``GroupResult``: a summary row
(one per group), one row per disruptive event window, and, when asked, the ownership
timeline (who held which partition when) that the report draws.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.lab.engine import CoordinatorFactory, Engine
from kgroup.group_types import STREAMS
from kgroup.lab.restore import from_timeline
from kgroup.lab.scenario import Scenario
from kgroup.lab.streams_lab import StreamsLab

# The summary columns, in order (Parquet schemas and the comparison table follow this).
SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group", "string"), ("variant", "string"), ("scenario", "string"), ("seed", "long"),
    ("protocol", "string"), ("assignor", "string"), ("static", "boolean"), ("members", "long"),
    ("partitions", "long"), ("duration_s", "double"), ("warmup_s", "double"),
    ("rebalances", "long"), ("moved", "long"), ("min_moved", "long"), ("state_bytes_moved", "long"),
    ("unowned_partition_s", "double"), ("stop_s_total", "double"), ("stop_s_max", "double"),
    ("members_stopped", "long"), ("duplicates", "double"), ("events", "long"),
    ("unconverged_events", "long"), ("converge_s_median", "double"), ("converge_s_max", "double"),
    ("double_ownership", "long"), ("offset_regressions", "long"), ("fatal_errors", "long"),
    ("member_events", "long"), ("requests", "long"), ("fast_forward_s", "double"),
    # A Kafka Streams app's scenario (a streams: section; empty otherwise): tasks whose
    # active moved to another process, the state restored for them (lab/restore.py), the
    # moves that cost nothing (a caught-up standby or warm-up promoted), and a process
    # holding a task as active and as standby or warm-up at once (a violation).
    ("tasks_moved", "long"), ("restore_s", "double"), ("restore_s_per_move", "double"),
    ("standby_promotions", "long"), ("standby_with_active", "long"),
)
WINDOW_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group", "string"), ("variant", "string"), ("event", "long"), ("kind", "string"),
    ("member", "long"), ("start_s", "double"), ("converge_s", "double"), ("rounds", "long"),
    ("moved", "long"), ("min_moved", "long"), ("unowned_partition_s", "double"),
    ("max_unowned_s", "double"), ("unowned_other", "long"), ("members_stopped", "long"),
)


@dataclass(slots=True)
class GroupResult:
    summary: dict[str, Any]
    windows: list[dict[str, Any]]
    stop_s: dict[str, float] = field(default_factory=dict)
    timeline: list[tuple[str, str, int, int, int]] | None = None   # (member, topic, p, from, to)
    generations: list[tuple[int, int]] = field(default_factory=list)
    gone: dict[str, float] = field(default_factory=dict)            # member -> s it left for good
    # A streams scenario: each task's active holders among the running members at the end.
    tasks: dict[tuple[str, int], list[str]] | None = None


def simulate(sc: Scenario, *, group: str = "group-0", variant: str = "",
             coordinator_factory: CoordinatorFactory = GroupCoordinatorShard,
             record_timeline: bool = False) -> GroupResult:
    """Run ``sc`` for one group and collect its rows."""
    if sc.members.kind is STREAMS:
        return _simulate_streams(sc, group, variant)
    engine = Engine(sc, coordinator_factory=coordinator_factory,
                    record_timeline=record_timeline or sc.streams is not None)
    m = engine.run()
    windows = [{"group": group, "variant": variant, **w.row()} for w in m.windows]
    converged = [w["converge_s"] for w in windows if w["converge_s"] is not None]
    # Every member that ran, stopped or not, so distributions include the zeros.
    stops = {name: m.stop_ms.get(name, 0.0) for name in sorted(p.name for p in engine.members.processes.values())}
    spec = sc.members
    summary = {
        "group": group, "variant": variant or sc.name, "scenario": sc.name, "seed": sc.seed,
        "protocol": spec.protocol, "assignor": ",".join(spec.assignor), "static": spec.static,
        "members": spec.count, "partitions": sum(engine.coordinator.topics.values()),
        "duration_s": sc.duration_s, "warmup_s": m.warm_at_ms / 1000 if m.warm else None,
        "rebalances": m.rebalances, "moved": m.moved,
        "min_moved": sum(w.min_moved for w in m.windows),
        "state_bytes_moved": m.moved * spec.state_bytes_per_partition,
        "unowned_partition_s": m.unowned_partition_ms / 1000,
        "stop_s_total": sum(stops.values()) / 1000,
        "stop_s_max": max(stops.values(), default=0.0) / 1000,
        "members_stopped": sum(1 for v in stops.values() if v > 0),
        "duplicates": m.duplicates, "events": len(windows),
        "unconverged_events": sum(1 for w in windows if w["converge_s"] is None),
        "converge_s_median": statistics.median(converged) if converged else None,
        "converge_s_max": max(converged) if converged else None,
        "double_ownership": m.double_ownership, "offset_regressions": m.offset_regressions,
        "fatal_errors": m.fatal, "member_events": engine.members.member_events, "requests": engine.coordinator.requests,
        "fast_forward_s": engine.fast_forward.jumped_ms / 1000,
    }
    tasks = None
    if sc.streams is not None:
        # The classic-protocol baseline of a streams app: each partition a task, each
        # holding an active task; no standbys (see examples/lab/README.md).
        ledger = from_timeline(sc.streams, stateful_topics(sc), m.timeline or [], sc.duration_ms)
        summary.update(ledger.row(), standby_with_active=0)
        tasks = {p: [engine.members.processes[i].name for i in holders] for p, holders in m.holders.items()}
    return GroupResult(summary, windows, {k: v / 1000 for k, v in stops.items()},
                       m.timeline if record_timeline else None,
                       list(m.generations), {k: v / 1000 for k, v in m.gone_at.items()}, tasks)


def stateful_topics(sc: Scenario) -> set[str]:
    return {t for t, _ in sc.topics if sc.streams is not None and t not in sc.streams.stateless_topics}


def _simulate_streams(sc: Scenario, group: str, variant: str) -> GroupResult:
    """A streams-protocol group (lab/streams_lab.py): the summary row, no windows yet."""
    lab = StreamsLab(sc)
    got = lab.run()
    spec = sc.members
    summary = {name: None for name, _ in SUMMARY_COLUMNS}
    summary.update({
        "group": group, "variant": variant or sc.name, "scenario": sc.name, "seed": sc.seed,
        "protocol": spec.protocol, "assignor": ",".join(spec.assignor), "static": spec.static,
        "members": spec.count, "partitions": sc.partition_count, "duration_s": sc.duration_s,
        "offset_regressions": 0, "fatal_errors": 0,
        "member_events": got["requests"], **got,
    })
    return GroupResult(summary, [], {}, None, [], {}, lab.final_active())
