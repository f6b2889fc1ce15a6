"""Random ShareGroupHeartbeat sequences: the share counterpart of the consumer protocol's
random sequences (`python -m kgroup.conformance.explore --kind share`).

Four members of one share group over two one-partition topics T and U and a topic name that
does not exist (M). A subscription is [T], [U] or [T, M], never [T, U]: with every member on
two real topics, which member gets which partition follows the topics' ids, random on each
broker; with these, every placement is the same on both (one real topic a subscription, a
one-partition topic shared by all its subscribers). Each step is a join, a rejoin (epoch 0
of a known member), a heartbeat at its epoch, one that changes the subscription or empties
it, a stale or future epoch, or a leave. Every answer (error, epoch, assignment) goes into
the transcript, and the group's description at the end.

Epochs are written relative to the group's epoch when the sequence starts: before it, a probe
member subscribes to T and U and waits until the share partitions of both are initialized
(asynchronous on both brokers, and how many epoch bumps that takes is timing), then leaves.
"""

from __future__ import annotations

import random
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.consumer_raw import member_id, ready
from kgroup.conformance.scenarios.share_raw import share_hb
from kgroup.conformance.target import Target

_MEMBERS = 4
_SUBSCRIPTIONS = (("T",), ("U",), ("T", "M"))
# Kafka's error codes that end a membership: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH.
_GONE = (25, 110)


def random_share_sequence(seed: int, length: int = 24) -> list[tuple]:
    """The operations of sequence `seed`: (kind, member) and, for a join or a change of
    subscription, the subscription."""
    rng = random.Random(seed)
    kinds = ["join", "join", "beat", "beat", "resub", "stale", "future", "leave", "rejoin", "nosub"]
    ops: list[tuple] = []
    for _ in range(length):
        kind, i = rng.choice(kinds), rng.randrange(_MEMBERS)
        ops.append((kind, i, rng.choice(_SUBSCRIPTIONS)) if kind in ("join", "resub", "rejoin") else (kind, i))
    return ops


async def share_sequences_ready(t: Target) -> tuple[Any, dict[str, str]]:
    """A raw connection with T and U (one partition each) known to the coordinators; the
    topic names by letter (M never exists)."""
    names = {"T": t.names.topic(), "U": t.names.topic("u"), "M": t.names.topic("missing")}
    raw = await ready(t, t.names.group("s0"), 1, more={names["U"]: 1})
    return raw, names


def _assigned(r: Any, by_id: dict) -> list | None:
    if r.assignment is None:
        return None
    return sorted((by_id.get(tp.topic_id, "?"), sorted(int(p) for p in tp.partitions))
                  for tp in r.assignment.topic_partitions)


async def play_random_share_sequence(t: Target, raw, seed: int, names: dict[str, str]) -> None:
    """Play sequence `seed` on its own share group; each answer into the transcript, the
    group described at the end."""
    group = t.names.group(f"sh{seed}")
    by_id = {await observe.topic_id(raw, names[x]): x for x in ("T", "U")}
    probe = member_id(t, f"probe{seed}")
    joined = await raw.call(share_hb(group, probe, 0, [names["T"], names["U"]]))
    probe_epoch = [int(joined.member_epoch)]

    async def initialized() -> Any:
        answer = await raw.call(share_hb(group, probe, probe_epoch[0]))
        probe_epoch[0] = int(answer.member_epoch)
        return answer.assignment is not None and len(answer.assignment.topic_partitions) == 2
    if joined.assignment is None or len(joined.assignment.topic_partitions) != 2:
        await observe.until(initialized, f"the share partitions of sequence {seed}'s group are initialized")
    await raw.call(share_hb(group, probe, -1))
    base = int((await observe.share_describe(raw, group)).group_epoch)
    state: dict[int, int] = {}          # member -> epoch (absent: not in the group)

    def relative(epoch: int) -> int:
        return epoch - base if epoch > 0 else epoch

    for n, op in enumerate(random_share_sequence(seed)):
        kind, i = op[0], op[1]
        mid = member_id(t, f"sh{seed}-{i}")
        epoch = state.get(i)
        if kind == "join":
            req = share_hb(group, mid, 0, [names[x] for x in op[2]])
        elif epoch is None:
            continue
        elif kind == "rejoin":
            req = share_hb(group, mid, 0, [names[x] for x in op[2]])
        elif kind == "beat":
            req = share_hb(group, mid, epoch)
        elif kind == "resub":
            req = share_hb(group, mid, epoch, [names[x] for x in op[2]])
        elif kind == "nosub":
            req = share_hb(group, mid, epoch, [])
        elif kind == "stale":
            req = share_hb(group, mid, epoch - 1 if epoch > 1 else epoch + 5)
        elif kind == "future":
            req = share_hb(group, mid, epoch + 3)
        else:                           # leave
            req = share_hb(group, mid, -1)
        r = await raw.call(req)
        t.add(f"sequence {seed} step {n} {kind} m{i}", {
            "error_code": int(r.error_code), "member_epoch": relative(int(r.member_epoch)),
            "assignment": _assigned(r, by_id)})
        if int(r.error_code) != 0 or kind == "leave":
            if kind in ("join", "leave") or int(r.error_code) in _GONE:
                state.pop(i, None)
            continue
        state[i] = int(r.member_epoch)
    d = await observe.share_describe(raw, group)
    t.add(f"sequence {seed}: describe", {
        "error_code": int(d.error_code), "state": d.group_state, "group_epoch": relative(int(d.group_epoch)),
        "assignment_epoch": relative(int(d.assignment_epoch)),
        "members": sorted((m.member_id, relative(int(m.member_epoch)), sorted(m.subscribed_topic_names),
                           sorted((by_id.get(tp.topic_id, "?"), sorted(tp.partitions))
                                  for tp in m.assignment.topic_partitions)) for m in d.members)})


# Seeds the differential suite plays (`explore --kind share`).
RANDOM_SHARE_SEQUENCES = tuple(range(8))


@scenario("share", "random heartbeat sequences of four share members",
          rule="seeded random sequences of ShareGroupHeartbeat joins, rejoins, heartbeats, subscription changes "
               "(to another topic, to one that does not exist, to none), stale and future epochs and leaves get "
               "the same answer at every step and leave the same group (epochs relative to the group's when the "
               "sequence starts)", timeout=150.0)
async def share_random_sequences(t: Target) -> None:
    raw, names = await share_sequences_ready(t)
    for seed in RANDOM_SHARE_SEQUENCES:
        await play_random_share_sequence(t, raw, seed, names)
