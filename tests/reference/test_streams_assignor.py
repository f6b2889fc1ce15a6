"""kgroup's streams task assignor against Kafka 4.4's own (the group coordinator's
StickyTaskAssignor class, run by tests/java/StreamsAssignorOracle.java in one JVM).

Kafka iterates its members and processes in hash-map order, and so does kgroup
(kgroup/java_hash.py), so the two must agree task for task, with ids like "m0".."m9" and
"p0".."p<k-1>" and with random ones: active and standby placement, through joins, leaves and crashes,
threads sharing a process, restarted members reporting state, and standbys (0-2). The
previous assignment of each round is the one Kafka computed, so the rounds follow Kafka's
own history. Warm-ups stay out: Kafka 4.4 assigns none (its refiner is a no-op), and they
are kgroup's addition, compared with Kafka 4.4's outcome in the streams scenarios instead.
"""

from __future__ import annotations

import random
from typing import Iterator

import pytest

from kgroup.assignors.streams_spec import TaskAssignmentConfig, TaskMember, Tasks, TaskSubtopology
from kgroup.assignors.streams_sticky import assign_sticky
from tests.reference.java_oracle import JsonOracle

CASES = 300


class Oracle(JsonOracle):
    def __init__(self) -> None:
        super().__init__("StreamsAssignorOracle")

    def assign(self, subtopologies, group: dict[str, TaskMember], standbys: int) -> dict[str, Tasks]:
        case = {"subtopologies": [{"id": s.subtopology_id, "tasks": s.tasks, "stateful": s.stateful}
                                  for s in subtopologies],
                "standbys": standbys,
                "members": {m: {"process": t.process_id, "active": _by_sub(t.current.active),
                                "standby": _by_sub(t.current.standby),
                                "offsets": _offsets(t.task_offsets)} for m, t in group.items()}}
        answer = self.ask(case)
        return {m: Tasks(_tasks(v["active"]), _tasks(v["standby"])) for m, v in answer.items()}


def _by_sub(tasks) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for s, p in sorted(tasks):
        out.setdefault(s, []).append(p)
    return out


def _offsets(offsets) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (s, p), o in sorted(offsets.items()):
        out.setdefault(s, {})[str(p)] = o
    return out


def _tasks(by_sub) -> frozenset:
    return frozenset((s, p) for s, ps in by_sub.items() for p in ps)


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    with Oracle() as o:
        yield o


def _history(rng: random.Random, names: bool = False):
    """A random group's life: (subtopologies, standbys, [group of each round]); with `names`,
    member and process ids as clients make them (random), not "m0".."m9"."""
    subtopologies = tuple(TaskSubtopology(str(i), rng.randint(1, 8), rng.random() < 0.6)
                          for i in range(rng.randint(1, 3)))
    standbys = rng.choice([0, 0, 1, 1, 2])
    rounds = []
    present: dict[str, str] = {}          # member id -> process id
    free = [f"{rng.getrandbits(64):016x}" if names else f"m{i}" for i in range(10)]
    processes = [f"proc-{rng.getrandbits(32):08x}" if names else f"p{i}" for i in range(10)]
    for _ in range(rng.randint(2, 7)):
        action = rng.random()
        if action < 0.55 or not present:
            threads = 2 if rng.random() < 0.25 else 1
            process = rng.choice([p for p in processes if p not in present.values()] or processes)
            for _ in range(threads):
                if free:
                    present[free.pop(rng.randrange(len(free)))] = process
        else:
            gone = rng.choice(sorted(set(present.values())))
            for m in [m for m, p in present.items() if p == gone]:
                del present[m]
                free.append(m)
        if present:
            rounds.append(dict(present))
    return subtopologies, standbys, rounds


@pytest.mark.parametrize("names", [False, True], ids=["m0-m9", "random-ids"])
def test_kafka_and_kgroup_place_every_task_the_same(oracle, names):
    # With random ids Kafka's HashMaps walk members and processes in no sorted order:
    # kgroup walks them in the same order (kgroup/java_hash.py).
    rng = random.Random(31)
    compared = 0
    for case in range(CASES):
        subtopologies, standbys, rounds = _history(rng, names)
        config = TaskAssignmentConfig(num_standby_replicas=standbys)
        held: dict[str, Tasks] = {}
        for present in rounds:
            group = {}
            # p0.. in order: Kafka sizes its process map by the member count, and ids past it
            # would share buckets (then Kafka's order is no longer the sorted one).
            rank = {p: p if names else f"p{i}" for i, p in enumerate(sorted(set(present.values())))}
            for m, process in present.items():
                process = rank[process]
                # A member new to the group may bring state of tasks it ran before.
                offsets = {} if m in held else {(s.subtopology_id, p): rng.randint(0, 1000)
                                                for s in subtopologies if s.stateful and rng.random() < 0.3
                                                for p in range(s.tasks) if rng.random() < 0.3}
                group[m] = TaskMember(process, held.get(m, Tasks()), offsets)
            kafka = oracle.assign(subtopologies, group, standbys)
            ours = assign_sticky(subtopologies, group, config)
            assert ours == kafka, f"case {case}: {subtopologies}, standbys {standbys}, group {group}"
            compared += 1
            held = kafka
    assert compared > CASES
