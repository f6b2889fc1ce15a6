"""Streams groups (KIP-1071) next to consumer groups of the same size: heartbeats/s and
assignment time, in the pure core (one coordinator shard in-process, no I/O).

    .venv/bin/python bench/streams_groups.py [--members 100] [--tasks 1000] [--standbys 1]
        [--runs 5] [--seconds 3]

A streams group of --members members (one process each) runs one stateful subtopology
(a source topic of --tasks partitions and its changelog): --tasks tasks, with
--standbys standby replicas each. Beside it, a consumer group of --members members on a
topic of --tasks partitions (the uniform assignor). Each group is built in a fresh shard:
every member joins (epoch 0), then all heartbeat with what they were told until nothing
changes. Measured, medians over --runs:

- join: one member more joins the settled group; the heartbeat that bumps the group epoch
  and computes the new target (the assignor run over all members), in ms;
- assignor: the task assignor alone (StickyTaskAssignor.assign over the settled group's
  members, incremental: one member more; full: nobody holds anything), in ms; for the
  consumer group the uniform assignor is timed through the join above only;
- heartbeats/s: steady state, each member heartbeating its current epoch with the unchanged
  fields null (Kafka Streams and librdkafka send task/partition lists only when they
  change), round robin for --seconds; the core calls and the replay of their records timed.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from kgroup.assignors.streams_spec import TaskAssignmentConfig, TaskSubtopology
from kgroup.assignors.streams_sticky import StickyTaskAssignor
from kgroup.core.config import GroupConfig
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.messages import ConsumerGroupHeartbeatRequest
from kgroup.core.streams_messages import StreamsGroupHeartbeatRequest
from kgroup.core.streams_topology import StreamsTopology, Subtopology, StreamsTopicInfo

REPLY = object()
LONG = 600_000


def _shard(standbys: int) -> GroupCoordinatorShard:
    cfg = GroupConfig(consumer_session_timeout_ms=LONG, consumer_max_session_timeout_ms=LONG,
                      streams_session_timeout_ms=LONG, streams_max_session_timeout_ms=LONG,
                      streams_initial_rebalance_delay_ms=0, streams_num_standby_replicas=standbys,
                      consumer_assignment_interval_ms=0)  # KIP-1263: a target at once (the clock stays)
    return GroupCoordinatorShard(cfg)


def _apply(coord: GroupCoordinatorShard, result):
    for rec in result.records:
        coord.replay(rec)
    for _to, resp in result.replies:
        return resp
    return None


def _steady(coord: GroupCoordinatorShard, heartbeat, reqs: list, seconds: float, error) -> float:
    """Heartbeats/s: `reqs` round robin for `seconds`, their records replayed."""
    count = 0
    gc.collect()
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        for req in reqs:
            result = heartbeat(req, REPLY, 0)
            for rec in result.records:
                coord.replay(rec)
            if error(result.replies[0][1]):
                raise RuntimeError(result.replies[0][1])
        count += len(reqs)
    return count / (time.perf_counter() - t0)


def _settle(heartbeat, state, settled) -> None:
    """Heartbeat every member with what it was told until a whole round changes nothing."""
    for _ in range(50):
        before = state()
        for m in list(before[0]):
            heartbeat(m)
        if state() == before:
            assert settled()
            return
    raise RuntimeError("the group did not settle")


# ---- streams -------------------------------------------------------------------------------


TOPOLOGY = StreamsTopology(0, (Subtopology(
    "0", source_topics=("in",),
    state_changelog_topics=(StreamsTopicInfo("app-store-changelog", 0, -1, (("cleanup.policy", "compact"),)),)),))


class StreamsBench:
    def __init__(self, members: int, tasks: int, standbys: int) -> None:
        self.coord = coord = _shard(standbys)
        _apply(coord, coord.load_complete(0))
        _apply(coord, coord.update_topics({"in": ("00000000-0000-0000-0000-000000000001", tasks),
                                           "app-store-changelog": ("00000000-0000-0000-0000-000000000002", tasks)},
                                          0))
        self.epoch: dict[str, int] = {}
        self.held: dict[str, tuple] = {}
        self.endpoints = -1              # the endpoint information epoch last received
        for i in range(members):
            self.heartbeat(f"m{i}")
        self.settle()

    def heartbeat(self, member: str, *, report: bool = True):
        joining = member not in self.epoch
        held = self.held.get(member, ((), (), ()))
        req = StreamsGroupHeartbeatRequest(
            "app", member, 0 if joining else self.epoch[member], rebalance_timeout_ms=30_000 if joining else -1,
            topology=TOPOLOGY if joining else None, active_tasks=held[0] if report else None,
            standby_tasks=held[1] if report else None, warmup_tasks=held[2] if report else None,
            process_id=f"p-{member}" if joining else None, client_id="bench",
            endpoint_information_epoch=self.endpoints)
        r = _apply(self.coord, self.coord.streams_group_heartbeat(req, REPLY, 0))
        assert r.error_code.value == 0, r
        self.endpoints = r.endpoint_information_epoch
        changed = joining or r.member_epoch != self.epoch[member] or r.active_tasks is not None
        self.epoch[member] = r.member_epoch
        if r.active_tasks is not None:
            self.held[member] = (r.active_tasks, r.standby_tasks, r.warmup_tasks)
        return changed

    def settle(self) -> None:
        _settle(self.heartbeat, lambda: (dict(self.epoch), dict(self.held)),
                lambda: self.coord.streams_groups["app"].state().value == "Stable")

    def join_ms(self) -> float:
        t0 = time.perf_counter()
        self.heartbeat(f"m{len(self.epoch)}")
        return (time.perf_counter() - t0) * 1000

    def assignor_ms(self, standbys: int, full: bool) -> float:
        group = self.coord.streams_groups["app"]
        members = self.coord.streams._task_members(
            group, {m.member_id: (m.meta, m.current) for m in group.members.values()})
        if full:
            members = {m: type(v)(v.process_id) for m, v in members.items()}
        (sub,) = group.configured.subtopologies
        subs = [TaskSubtopology(sub.subtopology_id, sub.tasks, sub.stateful)]
        config = TaskAssignmentConfig(num_standby_replicas=standbys)
        t0 = time.perf_counter()
        StickyTaskAssignor().assign(subs, members, config)
        return (time.perf_counter() - t0) * 1000

    def steady(self, seconds: float) -> float:
        # As Kafka Streams: the endpoint information epoch it was last sent (no endpoints again).
        reqs = [StreamsGroupHeartbeatRequest("app", m, e, endpoint_information_epoch=self.endpoints)
                for m, e in self.epoch.items()]
        return _steady(self.coord, self.coord.streams_group_heartbeat, reqs, seconds,
                       lambda r: r.error_code.value)


# ---- consumer ------------------------------------------------------------------------------


class ConsumerBench:
    def __init__(self, members: int, partitions: int) -> None:
        self.coord = coord = _shard(0)
        _apply(coord, coord.load_complete(0))
        _apply(coord, coord.update_topics({"in": ("00000000-0000-0000-0000-000000000001", partitions)}, 0))
        self.epoch: dict[str, int] = {}
        self.owned: dict[str, tuple] = {}
        for i in range(members):
            self.heartbeat(f"m{i:022d}")
        self.settle()

    def heartbeat(self, member: str) -> None:
        if member not in self.epoch:
            req = ConsumerGroupHeartbeatRequest(group_id="cg", member_id=member, member_epoch=0,
                                                rebalance_timeout_ms=60_000, subscribed_topic_names=("in",),
                                                owned=(), client_id="bench", client_host="/127.0.0.1")
        else:
            req = ConsumerGroupHeartbeatRequest(group_id="cg", member_id=member, member_epoch=self.epoch[member],
                                                owned=self.owned[member])
        r = _apply(self.coord, self.coord.consumer_group_heartbeat(req, REPLY, 0))
        assert not r.error, r
        self.epoch[member] = r.member_epoch
        if r.assignment is not None or member not in self.owned:
            self.owned[member] = r.assignment or ()

    def settle(self) -> None:
        _settle(self.heartbeat, lambda: (dict(self.epoch), dict(self.owned)),
                lambda: self.coord.consumer_groups["cg"].state().value.lower() == "stable")

    def join_ms(self) -> float:
        t0 = time.perf_counter()
        self.heartbeat(f"m{len(self.epoch):022d}")
        return (time.perf_counter() - t0) * 1000

    def steady(self, seconds: float) -> float:
        reqs = [ConsumerGroupHeartbeatRequest(group_id="cg", member_id=m, member_epoch=e)
                for m, e in self.epoch.items()]
        return _steady(self.coord, self.coord.consumer_group_heartbeat, reqs, seconds, lambda r: r.error)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--standbys", type=int, default=1)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    for run in range(args.runs):
        t0 = time.perf_counter()
        s = StreamsBench(args.members, args.tasks, args.standbys)
        add("streams: build + settle, s", time.perf_counter() - t0)
        add("streams: assignor, full, ms", s.assignor_ms(args.standbys, True))
        add("streams: assignor, incremental, ms", s.assignor_ms(args.standbys, False))
        add("streams: heartbeats/s", s.steady(args.seconds))
        add("streams: join (new target), ms", s.join_ms())
        t0 = time.perf_counter()
        c = ConsumerBench(args.members, args.tasks)
        add("consumer: build + settle, s", time.perf_counter() - t0)
        add("consumer: heartbeats/s", c.steady(args.seconds))
        add("consumer: join (new target), ms", c.join_ms())
        print(f"run {run + 1}/{args.runs} done", flush=True)
    print(f"\n{args.members} members, {args.tasks} tasks / partitions, {args.standbys} standby(s); "
          f"medians of {args.runs} runs")
    for name, values in rows.items():
        fmt = (lambda v: f"{v:,.0f}") if "/s" in name else (lambda v: f"{v:,.2f}")
        print(f"  {name:<38} {fmt(statistics.median(values)):>10}   ({', '.join(fmt(v) for v in values)})")


if __name__ == "__main__":
    main()
