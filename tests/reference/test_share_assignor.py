"""kgroup's share-group assignor against Kafka 4.4's own (the group coordinator's
SimpleAssignor class, run by tests/java/ShareAssignorOracle.java in one JVM).

Kafka's assignor is sticky and walks its hash maps and sets in the order of the members' ids,
the topics' Uuids and the partitions; kgroup simulates those tables (kgroup/java_hash.py),
so the two must agree partition for partition for the same ids: random member ids (as
clients make them) and random topic Uuids, through joins, leaves and subscription changes,
with members subscribed alike (HOMOGENEOUS) and not, and in half the cases only some
partitions assignable at first (a share group's initialized ones: a topic that grew, offsets
altered for some partitions), more of them initialized as the rounds go. Each round starts from the targets Kafka computed the round before, so the
rounds follow Kafka's own history.

One named normalization: with members subscribed differently, Kafka 4.4 never visits a
topic no member subscribes to any more and leaves its partitions in the targets of the
members that held them (a defect kgroup does not copy); those topics are dropped from
Kafka's answer before comparing.
"""

from __future__ import annotations

import base64
import random
import uuid
from typing import Iterator

import pytest

from kgroup.assignors.share_simple import SimpleShareAssignor
from kgroup.assignors.spec import GroupSpec, MemberSpec
from tests.reference.java_oracle import JsonOracle

CASES = 300


class Oracle(JsonOracle):
    def __init__(self) -> None:
        super().__init__("ShareAssignorOracle")

    def assign(self, topics: dict[str, tuple[str, int]], members: dict[str, tuple[list[str], dict]],
               homogeneous: bool, assignable: dict[str, frozenset[int]] | None = None) -> dict:
        case = {"homogeneous": homogeneous,
                "assignable": None if assignable is None else {t: sorted(ps) for t, ps in assignable.items()},
                "topics": {tid: {"name": name, "partitions": n} for tid, (name, n) in topics.items()},
                # In id order, as kgroup puts a current target's topics (Kafka's follow the map
                # they came from: the two differ only where two topic ids share a bucket).
                "members": {m: {"subscribed": sorted(subs),
                                "assignment": {t: sorted(ps) for t, ps in sorted(held.items())}}
                            for m, (subs, held) in sorted(members.items())}}
        return self.ask(case)


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    with Oracle() as o:
        yield o


def _uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


def _history(rng: random.Random, large: bool = False):
    """A random share group's life: its topics (id -> (name, partitions)) and, per round, each
    member's subscribed topic names. `large`: up to 40 partitions a topic and 30 members, so
    tables grow and buckets hold several keys."""
    most = 40 if large else 9
    topics = {_uuid(rng): (f"topic-{i}", rng.randint(1, most)) for i in range(rng.randint(1, 3))}
    names = [name for name, _ in topics.values()]
    alike = rng.random() < 0.5              # everyone on one subscription (homogeneous) or not
    shared = rng.sample(names, rng.randint(1, len(names)))
    present: dict[str, list[str]] = {}
    rounds = []
    for _ in range(rng.randint(2, 8)):
        action = rng.random()
        if action < 0.5 or not present:
            for _ in range(rng.choice([1, 1, 2, 3] + ([6, 12] if large else []))):
                present[str(uuid.UUID(int=rng.getrandbits(128), version=4))] = (
                    list(shared) if alike else rng.sample(names, rng.randint(1, len(names))))
        elif action < 0.8:
            del present[rng.choice(sorted(present))]
        else:
            m = rng.choice(sorted(present))
            present[m] = rng.sample(names, rng.randint(1, len(names)))
            if alike:
                shared = present[m]
                for other in present:
                    present[other] = list(shared)
        if present:
            rounds.append({m: list(s) for m, s in present.items()})
    return topics, rounds


def _initialized(rng: random.Random, topics: dict[str, tuple[str, int]]) -> dict[str, frozenset[int]] | None:
    """The partitions a share group has initialized when a case starts: all (None) in half
    the cases; else, per topic, all of them, the first few (a topic that grew), a random few
    (offsets altered for some) or none (the topic left out of the map, as Kafka's)."""
    if rng.random() < 0.5:
        return None
    out = {}
    for tid, (_, n) in topics.items():
        shape = rng.random()
        if shape < 0.3:
            out[tid] = frozenset(range(n))
        elif shape < 0.6:
            out[tid] = frozenset(range(rng.randint(0, n)))
        elif shape < 0.85:
            out[tid] = frozenset(rng.sample(range(n), rng.randint(0, n)))
    return out


def _initialize_more(rng: random.Random, topics: dict[str, tuple[str, int]],
                     initialized: dict[str, frozenset[int]] | None) -> dict[str, frozenset[int]] | None:
    """Between rounds, sometimes the rest of a topic is initialized (it never goes back)."""
    if initialized is None or rng.random() < 0.5:
        return initialized
    tid = rng.choice(sorted(topics))
    return {**initialized, tid: frozenset(range(topics[tid][1]))}


@pytest.mark.parametrize("large", [False, True], ids=["small", "large"])
def test_kafka_and_kgroup_share_every_partition_the_same(oracle, large):
    rng = random.Random(932 + large)
    by_name = {}
    compared = homogeneous_rounds = partial_rounds = 0
    for case in range(CASES):
        topics, rounds = _history(rng, large)
        by_name = {name: tid for tid, (name, _) in topics.items()}
        held: dict[str, dict[str, list[int]]] = {}
        assignable = _initialized(rng, topics)
        for present in rounds:
            homogeneous = len({frozenset(s) for s in present.values()}) == 1
            members = {m: (subs, held.get(m, {})) for m, subs in present.items()}
            kafka = oracle.assign(topics, members, homogeneous, assignable)
            union = {by_name[n] for subs in present.values() for n in subs}
            expected = {m: {t: tuple(ps) for t, ps in sorted(a.items()) if ps and t in union}
                        for m, a in kafka.items()}
            spec = GroupSpec(
                members={m: MemberSpec(m, frozenset(by_name[n] for n in subs),
                                       assignment={t: tuple(ps) for t, ps in held.get(m, {}).items()})
                         for m, subs in present.items()},
                homogeneous=homogeneous, topic_names={tid: name for tid, (name, _) in topics.items()},
                assignable=assignable)
            ours = SimpleShareAssignor().assign(spec, {tid: n for tid, (_, n) in topics.items()})
            ours = {m: a for m, a in ours.items()}
            assert ours == {m: expected.get(m, {}) for m in present}, (
                f"case {case}: topics {topics}, homogeneous {homogeneous}, members {members}")
            compared += 1
            homogeneous_rounds += homogeneous
            partial_rounds += assignable is not None
            held = {m: {t: list(ps) for t, ps in a.items()} for m, a in kafka.items()}
            assignable = _initialize_more(rng, topics, assignable)
    assert compared > CASES and 0 < homogeneous_rounds < compared and 0 < partial_rounds < compared
