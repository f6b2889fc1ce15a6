"""Random StreamsGroupHeartbeat sequences: the streams counterpart of the consumer protocol's
random sequences (`python -m kgroup.conformance.explore --kind streams`).

Four members of one streams group, on three processes (two members may share one, so the
rule that a process runs a task once is exercised), with one topology of two stateless
subtopologies (topics T, 4 partitions, and U, 3: seven active tasks, no internal topics to
create). Each step is a join (static or not), a heartbeat reporting what the member was
given, half of it, nothing, a task it was not given, or nothing said, a stale epoch, or a
leave. Every answer (epoch, tasks, error) goes into the transcript, and the group's
description at the end. A member whose heartbeat is refused as unknown or fenced, or that
left, joins again only by a later join step.

Stateful (`explore --kind streams --stateful`, scenario `streams_random_stateful_sequences`):
subtopology 0 keeps a store (its changelog created beforehand, so the group is ready at
once), the group runs one standby per stateful task, the members report their standbys, and a
step may report task offsets (the state a member has of some stateful tasks) and the
changelogs' ends: standby placement by reported offsets, demotions of active tasks to
standbys and the reverse, and what a lagging process is given (Kafka 4.4: the task, at once).
"""

from __future__ import annotations

import random
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.consumer_raw import ready
from kgroup.conformance.target import Target

_MEMBERS = 4
# Kafka's error codes that end a membership: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH.
_GONE = (25, 110)


# What a member may report of a stateful task's state, and the changelogs' end.
_OFFSETS = (0, 100, 20_000, 45_000, 50_000)
_END = 50_000


def random_streams_sequence(seed: int, length: int = 18, stateful: bool = False) -> list[tuple]:
    """The operations of sequence `seed`: (kind, member) and, for a join, whether the member
    is static; each member's process is drawn once per sequence. Stateful sequences also
    report task offsets: ("offsets", member, {(sub, partition): offset}, with the ends)."""
    rng = random.Random(seed)
    static = [rng.random() < 0.5 for _ in range(_MEMBERS)]
    kinds = ["join", "join", "beat", "beat", "beat", "stale", "leave", "lazy", "empty", "some", "extra"]
    if stateful:
        kinds += ["offsets", "offsets"]
    ops: list[tuple] = []
    for _ in range(length):
        kind, i = rng.choice(kinds), rng.randrange(_MEMBERS)
        if kind == "join":
            ops.append((kind, i, static[i]))
        elif kind == "offsets":
            tasks = rng.sample(range(4), rng.randrange(1, 5))
            ops.append((kind, i, {("0", p): rng.choice(_OFFSETS) for p in sorted(tasks)}, rng.random() < 0.5))
        else:
            ops.append((kind, i))
    return ops


def processes(seed: int) -> list[str]:
    """Each member's process id in sequence `seed` (three processes for four members)."""
    rng = random.Random(seed * 7919 + 1)
    return [f"p{rng.randrange(3)}" for _ in range(_MEMBERS)]


def _topology(t: str, u: str, changelog: str | None = None) -> dict:
    def sub(sid: str, topic: str, changelogs: list) -> dict:
        return {"subtopology_id": sid, "source_topics": [topic], "source_topic_regex": [],
                "state_changelog_topics": changelogs, "repartition_sink_topics": [],
                "repartition_source_topics": [], "copartition_groups": []}
    store = [] if changelog is None else [{"name": changelog, "partitions": 0, "replication_factor": -1,
                                           "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}]
    return {"epoch": 0, "subtopologies": [sub("0", t, store), sub("1", u, [])]}


def _heartbeat(group: str, member: str, epoch: int, *, topology: dict | None = None, process: str | None = None,
               instance: str | None = None, active: list | None = None, standby: list | None = None,
               offsets: dict | None = None, ends: bool = False) -> Any:
    """A StreamsGroupHeartbeat v0; `active` None says nothing of the tasks held; `offsets`
    reports task offsets (and, with `ends`, every stateful task's changelog end)."""
    joining = epoch == 0
    reported = None if offsets is None else [{"subtopology_id": s, "partition": p, "offset": o}
                                             for (s, p), o in sorted(offsets.items())]
    end_offsets = [{"subtopology_id": "0", "partition": p, "offset": _END} for p in range(4)] if ends else None
    return request("StreamsGroupHeartbeat", 0, group_id=group, member_id=member, member_epoch=epoch,
                   endpoint_information_epoch=-1, instance_id=instance, rack_id=None,
                   rebalance_timeout=30_000 if joining else -1, topology=topology if joining else None,
                   active_tasks=None if active is None else [{"subtopology_id": s, "partitions": ps}
                                                             for s, ps in active],
                   standby_tasks=None if active is None else [{"subtopology_id": s, "partitions": ps}
                                                              for s, ps in standby or []],
                   warmup_tasks=None if active is None else [],
                   process_id=process if joining else None, user_endpoint=None,
                   client_tags=[] if joining else None,
                   task_offsets=reported if reported is not None else ([] if joining else None),
                   task_end_offsets=end_offsets if end_offsets is not None else ([] if joining else None),
                   shutdown_application=False)


def _tasks(ids: Any) -> list | None:
    return None if ids is None else sorted((x.subtopology_id, sorted(int(p) for p in x.partitions)) for x in ids)


def _seen(r: Any) -> dict:
    return {"error_code": int(r.error_code), "member_epoch": int(r.member_epoch), "active_tasks": _tasks(r.active_tasks),
            "standby_tasks": _tasks(r.standby_tasks), "warmup_tasks": _tasks(r.warmup_tasks)}


def described(r: Any) -> dict:
    g = r.groups[0]
    return {"error_code": int(g.error_code), "state": g.group_state, "group_epoch": int(g.group_epoch),
            "assignment_epoch": int(g.assignment_epoch), "members": sorted(
                (m.member_id, int(m.member_epoch), m.process_id, m.instance_id,
                 _tasks(m.assignment.active_tasks), _tasks(m.target_assignment.active_tasks),
                 _tasks(m.assignment.standby_tasks), _tasks(m.target_assignment.standby_tasks),
                 sorted((o.subtopology_id, int(o.partition), int(o.offset)) for o in m.task_offsets))
                for m in g.members)}


async def streams_ready(t: Target, stateful: bool = False) -> tuple[Any, str, str]:
    """A raw connection with topics T (4 partitions) and U (3) known to the coordinators
    (and, stateful, the store's changelog "cl", 4 partitions)."""
    t_name, u_name = t.names.topic(), t.names.topic("u")
    more = {u_name: 3, t.names.topic("cl"): 4} if stateful else {u_name: 3}
    raw = await ready(t, t.names.group("s0"), 4, more=more)
    return raw, t_name, u_name


async def play_random_streams_sequence(t: Target, raw, seed: int, t_name: str, u_name: str,
                                       stateful: bool = False) -> None:
    """Play sequence `seed` on its own streams group; each answer into the transcript, the
    group described at the end."""
    group = t.names.group(f"st{seed}")
    topology = _topology(t_name, u_name, t.names.topic("cl") if stateful else None)
    if stateful:
        await t.ask(raw, f"sequence {seed}: one standby", request(
            "IncrementalAlterConfigs", 1, validate_only=False, resources=[{
                "resource_type": 32, "resource_name": group, "configs": [
                    {"name": "streams.num.standby.replicas", "config_operation": 0, "value": "1"}]}]))
        await observe.group_configs_visible(raw, group, streams_num_standby_replicas=1)
    procs = processes(seed)
    state: dict[int, dict] = {}         # member -> epoch, owned, standby, instance (absent: not in the group)
    for n, op in enumerate(random_streams_sequence(seed, 30 if stateful else 18, stateful)):
        kind, i = op[0], op[1]
        mid = f"sm{seed}-{i}"
        st = state.get(i)
        if kind == "join":
            st = state[i] = {"epoch": 0, "owned": [], "standby": [], "instance": f"si{seed}-{i}" if op[2] else None}
            req = _heartbeat(group, mid, 0, topology=topology, process=procs[i], instance=st["instance"], active=[])
        elif st is None:
            continue
        elif kind == "beat":
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"], active=st["owned"],
                             standby=st["standby"])
        elif kind == "offsets":
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"], active=st["owned"],
                             standby=st["standby"], offsets=op[2], ends=op[3])
        elif kind == "lazy":
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"])
        elif kind == "empty":
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"], active=[])
        elif kind == "some":
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"],
                             active=[(s, ps[:(len(ps) + 1) // 2]) for s, ps in st["owned"]], standby=st["standby"])
        elif kind == "extra":           # task 0_3 too, given or not
            req = _heartbeat(group, mid, st["epoch"], instance=st["instance"], active=st["owned"] + [("0", [3])],
                             standby=st["standby"])
        elif kind == "stale":
            epoch = st["epoch"] - 1 if st["epoch"] > 1 else st["epoch"] + 5
            req = _heartbeat(group, mid, epoch, instance=st["instance"], active=st["owned"], standby=st["standby"])
        else:                           # leave: -2 if static, else -1
            req = _heartbeat(group, mid, -2 if st["instance"] else -1, instance=st["instance"])
        r = await raw.call(req)
        t.add(f"sequence {seed} step {n} {kind} m{i}", _seen(r))
        if int(r.error_code) != 0 or kind == "leave":
            if kind in ("join", "leave") or int(r.error_code) in _GONE:
                state.pop(i, None)
            continue
        st["epoch"] = int(r.member_epoch)
        if r.active_tasks is not None:
            st["owned"] = _tasks(r.active_tasks)
            st["standby"] = _tasks(r.standby_tasks)
    t.add(f"sequence {seed}: describe", described(await raw.call(
        request("StreamsGroupDescribe", 0, group_ids=[group], include_authorized_operations=False))))


# Seeds the differential suite plays (`explore --kind streams --seeds 0:40` finds one other
# differing, seed 23: Kafka 4.4 answers UNKNOWN_SERVER_ERROR there; docs/protocol.md).
RANDOM_SEQUENCES = tuple(range(12))


@scenario("streams", "random heartbeat sequences of four members on three processes",
          rule="seeded random sequences of StreamsGroupHeartbeat joins (static or not), heartbeats reporting "
               "what the member was given, half, nothing, an extra task or nothing said, stale epochs and "
               "leaves get the same answer at every step and leave the same group", timeout=120.0)
async def streams_random_sequences(t: Target) -> None:
    raw, t_name, u_name = await streams_ready(t)
    for seed in RANDOM_SEQUENCES:
        await play_random_streams_sequence(t, raw, seed, t_name, u_name)


# Stateful seeds the differential suite plays (`explore --kind streams --stateful`).
RANDOM_STATEFUL_SEQUENCES = tuple(range(8))


@scenario("streams", "random heartbeat sequences with a store, a standby and task offsets",
          rule="seeded random sequences over a topology with a stateful subtopology and one standby per "
               "stateful task, members reporting standbys and task offsets, get the same answer at every step "
               "and leave the same group: standby placement by reported offsets, demotions and promotions, "
               "and a lagging process given its task at once (Kafka 4.4 has no warm-ups)", timeout=150.0)
async def streams_random_stateful_sequences(t: Target) -> None:
    raw, t_name, u_name = await streams_ready(t, stateful=True)
    for seed in RANDOM_STATEFUL_SEQUENCES:
        await play_random_streams_sequence(t, raw, seed, t_name, u_name, stateful=True)
