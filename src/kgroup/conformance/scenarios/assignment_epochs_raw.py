"""KIP-1251 assignment epochs: consumer-group commits racing an epoch bump, exact sequences."""

from __future__ import annotations

from kgroup.conformance import observe
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.consumer_raw import b_joins, classic_member, hb, joined, member_id, take
from kgroup.conformance.scenarios.consumer_raw import set_up as consumer_set_up
from kgroup.conformance.scenarios.offsets_raw import commit, fetch
from kgroup.conformance.scenarios.transactions_raw import TxnProducer
from kgroup.conformance.target import Target


@scenario("offsets", "KIP-1251: a commit racing an epoch bump",
          rule="each partition a consumer-protocol member holds keeps the epoch it was assigned at; OffsetCommit "
               "and TxnOffsetCommit pass when assignment epoch <= sent epoch <= member epoch: a commit sent with "
               "the epoch before a bump lands for the partitions the member kept, and fails as a whole "
               "(STALE_MEMBER_EPOCH; ILLEGAL_GENERATION for TxnOffsetCommit before v6) for a partition assigned "
               "after the epoch it names or held by another member")
async def offsets_kip1251_assignment_epochs(t: Target) -> None:
    raw, group, topic = await consumer_set_up(t, 4)
    a, b = member_id(t, "kip1251-a"), member_id(t, "kip1251-b")
    old, rb, ra, kept = await b_joins(t, raw, group, topic, a, b, "B joins: the group epoch moves on")
    ra = await t.ask(raw, "A heartbeat having revoked: its epoch bumps", hb(group, a, int(ra.member_epoch),
                                                                             owned=kept))
    new = int(ra.member_epoch)
    t.add("A's epoch moved on", new > old)
    _, given = await take(t, raw, group, b, "B heartbeat: gets what A released",
                          hb(group, b, int(rb.member_epoch), owned=[]), "B owns its partitions")
    mine = {(topic, p): 10 + p for _, ps in kept for p in ps}
    theirs = {(topic, p): 20 + p for _, ps in given for p in ps}
    t.add("who holds what", {"A": sorted(p for _, p in mine), "B": sorted(p for _, p in theirs)})
    # A's commit left before it heard of the new epoch: the partitions it kept were its own then.
    await t.ask(raw, "A commits its kept partitions with the old epoch", commit(9, group, mine, generation=old,
                                                                                member=a))
    # B holds its partitions since the new epoch: a commit naming the old one is a zombie's.
    await t.ask(raw, "B commits with the old epoch", commit(9, group, theirs, generation=old, member=b))
    await t.ask(raw, "A commits B's partitions with the old epoch", commit(9, group, theirs, generation=old,
                                                                           member=a))
    first_mine, first_theirs = min(mine), min(theirs)
    await t.ask(raw, "A commits one of each with the old epoch", commit(
        9, group, {first_mine: 30, first_theirs: 31}, generation=old, member=a))
    await t.ask(raw, "A commits with an epoch below any of its partitions", commit(
        9, group, mine, generation=old - 1, member=a))
    await t.ask(raw, "A commits with an epoch ahead of its own", commit(9, group, mine, generation=new + 1,
                                                                        member=a))
    await t.ask(raw, "B commits with its epoch", commit(9, group, theirs, generation=new, member=b))
    # TxnOffsetCommit follows the same rule (v3: ILLEGAL_GENERATION for the stale one).
    txn_id = t.names.group("kip1251-txn")
    await observe.coordinator(raw, txn_id, key_type=1)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_offsets(group, "add the group's offsets")
    await p.commit_offsets(group, {first_mine: 40}, "TxnOffsetCommit as A with the old epoch", generation=old,
                           member=a)
    await p.commit_offsets(group, {first_theirs: 41}, "TxnOffsetCommit as B with the old epoch", generation=old,
                           member=b)
    await p.end(False, "abort")
    await t.ask(raw, "fetch", fetch(8, group))


@scenario("offsets", "KIP-1251: a static member's partitions across a restart",
          rule="a static member leaving with epoch -2 keeps its partitions with their assignment epochs reset "
               "to 0: the instance, back under a new member id, may commit for them with any epoch up to its "
               "own, and not with a newer one")
async def offsets_kip1251_static_member(t: Target) -> None:
    raw, group, topic = await consumer_set_up(t, 2)
    a, a2 = member_id(t, "kip1251-static"), member_id(t, "kip1251-static-back")
    epoch, _ = await joined(t, raw, group, a, topic, label="join with an instance id", instance="i-k")
    await t.ask(raw, "commits with its epoch", commit(9, group, {(topic, 0): 1, (topic, 1): 1}, generation=epoch,
                                                      member=a))
    await t.ask(raw, "commits with an older epoch", commit(9, group, {(topic, 0): 2}, generation=epoch - 1, member=a))
    await t.ask(raw, "leaves temporarily", hb(group, a, -2, instance="i-k"))
    back, _ = await joined(t, raw, group, a2, topic, label="comes back under a new member id",
                           owns="owns its partitions again", instance="i-k")
    await t.ask(raw, "commits with epoch 0", commit(9, group, {(topic, 0): 3, (topic, 1): 3}, generation=0,
                                                    member=a2))
    await t.ask(raw, "commits with an older epoch", commit(9, group, {(topic, 0): 4}, generation=back - 1,
                                                           member=a2))
    await t.ask(raw, "commits with a newer epoch", commit(9, group, {(topic, 0): 5}, generation=back + 1,
                                                          member=a2))
    await t.ask(raw, "fetch", fetch(8, group))


@scenario("offsets", "KIP-1251: a classic member inside a consumer group",
          rule="a classic member brought into a consumer group by online migration holds its partitions at "
               "epoch = generation; it commits below OffsetCommit v9, and a generation ahead of its epoch, or "
               "older than a partition's assignment epoch, is ILLEGAL_GENERATION (the classic code)")
async def offsets_kip1251_classic_member(t: Target) -> None:
    raw, group, topic = await consumer_set_up(t, 2)
    classic, c, gen, _ = await classic_member(t, group, topic)
    b = member_id(t, "kip1251-upgrade")
    await t.ask(raw, "a consumer-protocol member joins", hb(group, b, 0, topics=[topic], owned=[]))
    await t.ask(classic, "the classic member commits (v8) with its generation", commit(
        8, group, {(topic, 0): 1}, generation=gen, member=c))
    await t.ask(classic, "the classic member commits with a newer generation", commit(
        8, group, {(topic, 0): 2}, generation=gen + 1, member=c))
    await t.ask(classic, "the classic member commits with an older generation", commit(
        8, group, {(topic, 0): 3}, generation=gen - 1, member=c))
    await t.ask(raw, "the consumer-protocol member leaves", hb(group, b, -1))
    await t.ask(raw, "fetch", fetch(8, group))
