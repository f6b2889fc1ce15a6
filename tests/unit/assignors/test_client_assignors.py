"""Client-side assignors: Kafka's rules pinned as scenarios, then cross-checked against
kafka-python 3.0.12 on the same inputs."""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kafka_python_side
from assignor_support import SETTINGS, check_balanced, check_valid, moved, sizes
from kgroup.assignors import ClientMember, Subscription, get_client_assignor
from kgroup.assignors.consumer_protocol import encode_sticky_user_data
from kgroup.assignors.spec import topic_partitions
from kgroup.assignors.sticky import cooperative_claim, resolve_claims


def member(mid, topics, owned=None, generation=-1, instance=None, rack=None, user_data=None):
    return ClientMember(mid, instance, Subscription(
        tuple(sorted(topics)), user_data, topic_partitions(owned or {}), generation, rack))


def run(name, members, counts, racks=None):
    out = get_client_assignor(name).assign({m.member_id: m for m in members}, counts, racks)
    return {m: a.as_dict() for m, a in out.items()}


# --- range ------------------------------------------------------------------------------

def test_range_first_p_mod_n_get_one_more_per_topic() -> None:
    ms = [member(m, ["t0", "t1"]) for m in ("c0", "c1")]
    assert run("range", ms, {"t0": 3, "t1": 3}) == {
        "c0": {"t0": (0, 1), "t1": (0, 1)}, "c1": {"t0": (2,), "t1": (2,)}}


def test_range_orders_static_members_first_by_instance_id() -> None:
    ms = [member("a", ["t"]), member("z", ["t"], instance="i1"), member("b", ["t"], instance="i0")]
    assert run("range", ms, {"t": 5}) == {
        "b": {"t": (0, 1)}, "z": {"t": (2, 3)}, "a": {"t": (4,)}}


def test_range_rack_aware_prefers_local_replicas() -> None:
    # KIP-881: c0 on rack r0, c1 on r1; partitions alternate racks.
    ms = [member("c0", ["t"], rack="r0"), member("c1", ["t"], rack="r1")]
    racks = {"t": tuple(frozenset({f"r{p % 2}"}) for p in range(4))}
    assert run("range", ms, {"t": 4}, racks) == {"c0": {"t": (0, 2)}, "c1": {"t": (1, 3)}}
    # Replicas everywhere: racks change nothing.
    everywhere = {"t": tuple(frozenset({"r0", "r1"}) for _ in range(4))}
    assert run("range", ms, {"t": 4}, everywhere) == {"c0": {"t": (0, 1)}, "c1": {"t": (2, 3)}}


def test_range_rack_aware_still_balanced_when_racks_are_lopsided() -> None:
    ms = [member("c0", ["t"], rack="r0"), member("c1", ["t"], rack="r1"), member("c2", ["t"])]
    racks = {"t": tuple(frozenset({"r0"}) for _ in range(7))}
    out = run("range", ms, {"t": 7}, racks)
    check_valid(out, {m.member_id: frozenset(["t"]) for m in ms}, {"t": 7})
    assert sorted(sizes(out).values()) == [2, 2, 3]
    assert out["c0"]["t"] == (0, 1, 2)


# --- roundrobin -------------------------------------------------------------------------

def test_roundrobin_deals_sorted_partitions_skipping_non_subscribers() -> None:
    # Kafka's javadoc example.
    ms = [member("c0", ["t0"]), member("c1", ["t0", "t1"]), member("c2", ["t0", "t1", "t2"])]
    assert run("roundrobin", ms, {"t0": 1, "t1": 2, "t2": 3}) == {
        "c0": {"t0": (0,)}, "c1": {"t1": (0,)}, "c2": {"t1": (1,), "t2": (0, 1, 2)}}


# --- sticky / cooperative-sticky ---------------------------------------------------------

def test_sticky_reads_ownership_from_user_data() -> None:
    ud = encode_sticky_user_data((("t", (3, 4, 5)),), 4)
    ms = [member("a", ["t"], user_data=ud), member("b", ["t"])]
    out = run("sticky", ms, {"t": 6})
    assert out["a"] == {"t": (3, 4, 5)}


@pytest.mark.parametrize("name", ["sticky", "cooperative-sticky"])
def test_sticky_subscriptions_naming_a_topic_twice_or_in_any_order_count_it_once(name) -> None:
    # The topic tuples go to placement as they are (no frozenset per member, for speed):
    # members listing the same topics differently are still one class, each topic once.
    ms = [ClientMember("a", None, Subscription(("t", "u", "t"))),
          ClientMember("b", None, Subscription(("u", "t"))),
          ClientMember("c", None, Subscription(["t", "u"]))]  # type: ignore[arg-type]
    out = run(name, ms, {"t": 3, "u": 3})
    assert sorted(p for a in out.values() for p in a.get("t", ())) == [0, 1, 2]
    assert sorted(p for a in out.values() for p in a.get("u", ())) == [0, 1, 2]
    assert sorted(sum(map(len, a.values())) for a in out.values()) == [2, 2, 2]


def test_older_generation_claim_loses_and_same_generation_tie_is_unowned() -> None:
    ms = [member("a", ["t"], {"t": (0, 1)}, generation=5),
          member("b", ["t"], {"t": (0, 2)}, generation=4),
          member("c", ["t"], {"t": (1, 3)}, generation=5)]
    out = run("sticky", ms, {"t": 6})
    check_valid(out, {m.member_id: frozenset(["t"]) for m in ms}, {"t": 6})
    assert 0 in out["a"]["t"]          # gen 5 beats gen 4
    assert 2 in out["b"]["t"]          # b's uncontested claim stands
    assert 3 in out["c"]["t"]
    coop = run("cooperative-sticky", ms, {"t": 6})
    # Partition 1 was claimed by a and c in generation 5: nobody gets it this round.
    assert all(1 not in a.get("t", ()) for a in coop.values())
    # Partition 0 is still claimed by b (stale) - withheld from a too, until b revokes it.
    assert all(0 not in a.get("t", ()) for a in coop.values())


def test_claims_newest_generation_wins_and_a_same_generation_tie_voids_the_partition() -> None:
    # Partition 1: claimed by two members in generation 5, so neither keeps it (Kafka
    # invalidates it). Partition 0: generation 5 beats generation 4.
    claims = [(5, {"t": (0, 1)}), (5, {"t": (1, 2)}), (4, {"t": (0,)})]
    assert resolve_claims(claims) == [{"t": (0,)}, {"t": (2,)}, {}]
    ms = [member("a", ["t"], {"t": (0, 1)}, generation=5),
          member("b", ["t"], {"t": (1, 2)}, generation=5), member("c", ["t"])]
    # Eager sticky: the voided partition is free, so it goes to c, the member short of one.
    assert run("sticky", ms, {"t": 3}) == {"a": {"t": (0,)}, "b": {"t": (2,)}, "c": {"t": (1,)}}


def test_cooperative_generation_from_user_data_before_v2() -> None:
    ms = [member("a", ["t"], {"t": (0,)}, user_data=struct.pack(">i", 9)),
          member("b", ["t"], {"t": (0,)}, user_data=struct.pack(">i", 3))]
    assert cooperative_claim(ms[0].subscription) == (9, {"t": (0,)})
    out = run("cooperative-sticky", ms, {"t": 2})
    # a (generation 9) wins partition 0, so b is not given it; a gets it only once b has
    # revoked it (b still claims it this round).
    assert 0 not in out["b"].get("t", ())
    assert out["a"] == {}


def test_cooperative_withholds_partitions_moving_between_owners() -> None:
    counts = {"t": 6}
    before = run("cooperative-sticky", [member("a", ["t"]), member("b", ["t"])], counts)
    ms = [member("a", ["t"], before["a"], 1), member("b", ["t"], before["b"], 1),
          member("c", ["t"])]
    round1 = run("cooperative-sticky", ms, counts)
    assert round1["c"] == {}                                   # would come from a and b
    assert sizes(round1) == {"a": 2, "b": 2, "c": 0}
    ms = [member("a", ["t"], round1["a"], 2), member("b", ["t"], round1["b"], 2),
          member("c", ["t"], {}, 2)]
    round2 = run("cooperative-sticky", ms, counts)
    assert sizes(round2) == {"a": 2, "b": 2, "c": 2}
    assert moved(round1, round2) == 0


# --- cross-check against kafka-python ------------------------------------------------------

def _random_group(rng: random.Random, identical: bool, static: bool = False):
    topics = [f"t{i}" for i in range(rng.randint(1, 5))]
    counts = {t: rng.randint(1, 10) for t in topics}
    n = rng.randint(1, 6)
    subs = {}
    for i in range(n):
        pick = topics if identical else rng.sample(topics, rng.randint(1, len(topics)))
        subs[f"m{rng.randint(0, 99):02d}-{i}"] = frozenset(pick)
    inst = {m: f"i{rng.randint(0, 99):02d}-{m}" for m in subs} if static else {}
    return subs, counts, inst


@SETTINGS
@given(st.randoms(use_true_random=False), st.booleans(), st.booleans())
def test_range_and_roundrobin_identical_to_kafka_python(rng, identical, static) -> None:
    subs, counts, inst = _random_group(rng, identical, static)
    # kafka-python groups static/dynamic members with itertools.groupby over an unsorted
    # list, so a group mixing them can come out in the wrong order or lose members; Kafka's
    # rule is static first. We compare all-static and all-dynamic groups, where the two
    # orders agree, and pin the mixed case in test_range_orders_static_members_first...
    # kafka-python 3.0.12's roundrobin crashes (KeyError on a (instance, member) tuple) as
    # soon as it has to skip a member not subscribed to a topic, so roundrobin is compared
    # on identical subscriptions only; the skipping rule is pinned by Kafka's javadoc example
    # in test_roundrobin_deals_sorted_partitions_skipping_non_subscribers.
    ms = [member(m, subs[m], instance=inst.get(m)) for m in subs]
    for name in ("range", "roundrobin") if identical else ("range",):
        ours = run(name, ms, counts)
        theirs = kafka_python_side.run(name, subs, counts, instance_ids=inst)
        assert ours == theirs, name


def _sticky_step(name, subs, counts, prev, gen):
    ms = [member(m, subs[m], prev.get(m, {}), gen if prev.get(m) else -1) for m in subs]
    return run(name, ms, counts)


@SETTINGS
@given(st.randoms(use_true_random=False), st.booleans())
def test_sticky_valid_and_at_least_as_balanced_and_sticky_as_kafka_python(rng, identical) -> None:
    subs, counts, _ = _random_group(rng, identical)
    prev = run("sticky", [member(m, subs[m]) for m in subs], counts)
    # One event: a member joins (same subscription as the others when identical).
    topics = sorted(counts)
    new_sub = frozenset(topics if identical else rng.sample(topics, rng.randint(1, len(topics))))
    subs2 = {**subs, "zz-new": new_sub}
    ours = _sticky_step("sticky", subs2, counts, prev, 1)
    theirs = kafka_python_side.run("sticky", subs2, counts, prev, 1)
    check_valid(ours, subs2, counts)
    check_balanced(ours, subs2)
    check_valid(theirs, subs2, counts)
    spread = lambda r: max(sizes(r).values()) - min(sizes(r).values())  # noqa: E731
    if identical:
        assert spread(ours) <= spread(theirs)
        assert moved(prev, ours) <= moved(prev, theirs)
    # Mixed subscriptions: both are locally balanced; neither is guaranteed minimal, so the
    # moved ratio is reported by the property suite and the benchmark, not asserted here.


@SETTINGS
@given(st.randoms(use_true_random=False), st.booleans())
def test_cooperative_sticky_matches_kafka_python_safety(rng, identical) -> None:
    subs, counts, _ = _random_group(rng, identical)
    prev = run("cooperative-sticky", [member(m, subs[m]) for m in subs], counts)
    victim = sorted(subs)[0]
    subs2 = {m: s for m, s in subs.items() if m != victim}
    subs2["zz-new"] = frozenset(sorted(counts))
    ours = _sticky_step("cooperative-sticky", subs2, counts, prev, 1)
    theirs = kafka_python_side.run("cooperative-sticky", subs2, counts, prev, 1)
    for result in (ours, theirs):
        check_valid(result, subs2, counts, complete=False)
        for m, asg in result.items():
            for t, parts in asg.items():
                for p in parts:
                    assert all(p not in prev.get(o, {}).get(t, ()) for o in subs2 if o != m)


@SETTINGS
@given(st.randoms(use_true_random=False), st.booleans())
def test_cooperative_sticky_after_the_follow_up_round_is_at_least_as_good_as_kafka_python(
        rng, identical) -> None:
    # One member leaves and one joins; both assignors withhold moving partitions, then the
    # follow-up rebalance hands them out. Compare the settled assignments.
    subs, counts, _ = _random_group(rng, identical)
    prev = run("cooperative-sticky", [member(m, subs[m]) for m in subs], counts)
    subs2 = {m: s for m, s in subs.items() if m != sorted(subs)[0]}
    subs2["zz-new"] = frozenset(sorted(counts))
    ours = _sticky_step("cooperative-sticky", subs2, counts,
                        _sticky_step("cooperative-sticky", subs2, counts, prev, 1), 2)
    theirs = kafka_python_side.run(
        "cooperative-sticky", subs2, counts,
        kafka_python_side.run("cooperative-sticky", subs2, counts, prev, 1), 2)
    check_valid(ours, subs2, counts)
    check_balanced(ours, subs2)
    check_valid(theirs, subs2, counts)
    if identical:
        spread = lambda r: max(sizes(r).values()) - min(sizes(r).values())  # noqa: E731
        assert spread(ours) <= spread(theirs)
        assert moved(prev, ours) <= moved(prev, theirs)
