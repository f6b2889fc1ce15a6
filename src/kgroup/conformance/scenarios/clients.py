"""Real clients in the same scenario on both brokers: two consumers of one library join a
group one after the other, read everything, commit and leave; a share consumer accepts and
releases. The transcript holds what the proxy saw each client asked and was answered
(repeats collapsed), the group as described at each step, the offsets committed and the
records delivered."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.clients import GroupConsumer, ShareConsumerDriver
from kgroup.conformance.errors import summary
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import coordinated
from kgroup.conformance.scenarios.share_raw import set_group_configs
from kgroup.conformance.target import Target

PARTITIONS, PER_PARTITION = 4, 2
# How long a group is left steady before the next step, so every client has heartbeated in
# it (an outcome set would otherwise depend on whether a heartbeat fell in the window).
STEADY_S = 1.5
LEAVE_APIS = (13, 68)
FETCH = 1     # LeaveGroup, ConsumerGroupHeartbeat (epoch -1)


async def _group_view(raw, group: str, consumer_protocol: bool) -> Any:
    if consumer_protocol:
        return await observe.consumer_describe(raw, group)
    return await observe.describe(raw, group)


async def _settled(raw, group: str, consumer_protocol: bool, members: int, consumers: list[GroupConsumer]) -> Any:
    """Wait until the group is Stable with `members` members and the consumers between them
    hold every partition, each once."""
    async def check() -> Any:
        for c in consumers:
            if c.error is not None:
                raise c.error
        g = await _group_view(raw, group, consumer_protocol)
        held = [p for c in consumers for p in c.assigned]
        ok = (g.group_state == "Stable" and len(g.members) == members
              and sorted(held) == list(range(PARTITIONS)))
        return g if ok else None
    return await observe.until(check, f"{group} is Stable with {members} members holding every partition", 60)


async def two_consumers(t: Target, kind: str, **options: Any) -> None:
    group, topic = t.names.group(), t.names.topic()
    consumer_protocol = kind.endswith("consumer")
    raw = await coordinated(t, group)
    await observe.create_topic(raw, topic, PARTITIONS)
    if consumer_protocol:
        await observe.coordinator_sees(raw, group, {topic: PARTITIONS})
    for p in range(PARTITIONS):
        await observe.produce(raw, topic, p, [f"p{p}-{i}".encode() for i in range(PER_PARTITION)])
    a = GroupConsumer(kind, t.address, group, topic, t.client_id("a"), **options).start()
    b = None
    try:
        await _settled(raw, group, consumer_protocol, 1, [a])
        await _each_reads_its_own([a], "a has read its partitions", t)
        await asyncio.sleep(STEADY_S)
        b = GroupConsumer(kind, t.address, group, topic, t.client_id("b"), **options).start()
        await _settled(raw, group, consumer_protocol, 2, [a, b])
        try:
            await _each_reads_its_own([a, b], "each has read its partitions", t)
        except AssertionError as exc:
            # Where each would start: a partition committed past its records is not read again.
            raise AssertionError(f"{exc}; committed then: {await observe.committed(raw, group)}") from None
        read_at = time.monotonic()
        await asyncio.sleep(STEADY_S)
        # The commit carries what the last fetch answers said (kafka-python: their leader
        # epoch): each consumer has been answered a fetch sent after it read everything.
        await observe.until(lambda: _fetched_since(t, ("a", "b"), read_at), "each is answered a fetch after its reads", 30)
        for c in (a, b):
            c.stop_polling()
        t.add("described with two members", await _group_view(raw, group, consumer_protocol))
        await a.aorder("commit")
        await b.aorder("commit")
        t.add("committed", await observe.committed(raw, group))
        # What each was answered while in the group; then the leaves, apart (after a leaves,
        # whether b's next heartbeat falls in the rebalance is a matter of timing).
        t.add_outcomes("a")
        t.add_outcomes("b")
        mark = time.monotonic()
        # Both leave (b, no longer polling, would not rejoin after a's leave).
        await a.aorder("close")
        await b.aorder("close")
        t.add("described after both left", await _group_view(raw, group, consumer_protocol))
        for who in ("a", "b"):
            t.add_outcomes(who, apis=LEAVE_APIS, since=mark, label=f"how {who} left")
    finally:
        for c in (a, b):
            if c is not None and c._thread.is_alive():
                try:
                    await c.aorder("close", 30)
                except Exception:  # noqa: BLE001 (already failing)
                    pass
    t.add("records read", sorted({v for c in (a, b) for v in c.values()}))
    t.add("partitions each held at the end", sorted(len(c.assigned) for c in (a, b)))


async def _each_reads_its_own(consumers: list[GroupConsumer], what: str, t: Target | None = None) -> None:
    """Wait until each consumer has read every record of the partitions it holds; a timeout
    says what each held and read, and (given the target) what each was answered: how many
    times each (API, version, errors) outcome came, so a stall shows where it is."""
    try:
        await observe.until(lambda: _read_own(consumers), what, 60)
    except AssertionError as exc:
        state = "; ".join(f"{c.client_id}: holds {sorted(c.assigned)}, read {sorted({(p, o) for p, o, _ in c.records})}"
                          f"{_answered(t, c.client_id)}" for c in consumers)
        raise AssertionError(f"{exc} ({state})") from None


def _answered(t: Target | None, client_id: str) -> str:
    if t is None:
        return ""
    seen: dict[str, int] = {}
    for e in t.exchanges():
        if e.client_id.startswith(client_id):
            said = "CLOSED" if e.closed else "no answer" if e.answered_at is None else summary(e.errors, errors_only=True)
            key = f"api{e.api_key} v{e.version} {said}"
            seen[key] = seen.get(key, 0) + 1
    return f", answered {dict(sorted(seen.items()))}{_positions(t, client_id)}"


def _positions(t: Target, client_id: str) -> str:
    """Where a consumer was told to start (ListOffsets) and what its last Fetch answer said
    of each partition (high watermark, log start, bytes): a stall's cause is in them."""
    offsets, fetched = [], {}
    for e in t.exchanges():
        if not e.client_id.startswith(client_id) or e.response is None:
            continue
        if e.api_key == 2:
            offsets += [(p.partition_index, p.offset) for topic in e.response.topics for p in topic.partitions]
        elif e.api_key == FETCH:
            for topic in e.response.responses:
                for p in topic.partitions:
                    fetched[p.partition_index] = (p.high_watermark, p.log_start_offset, len(p.records or b""))
    return f", ListOffsets said {offsets}, last Fetch (hw, log start, bytes) {dict(sorted(fetched.items()))}"


async def _fetched_since(t: Target, who: tuple[str, ...], since: float) -> bool:
    return all(any(e.api_key == FETCH and e.sent_at >= since and e.answered_at is not None
                   for e in t.exchanges(suffix)) for suffix in who)


async def _read_own(consumers: list[GroupConsumer]) -> bool:
    """Each consumer has read every record of the partitions it holds."""
    for c in consumers:
        if c.error is not None:
            raise c.error
        read = {(p, o) for p, o, _ in c.records}
        if not c.assigned or any((p, o) not in read for p in c.assigned for o in range(PER_PARTITION)):
            return False
    return True


def _register(kind: str, area: str, title: str, rule: str, name: str, **options: Any) -> None:
    async def run(t: Target) -> None:
        await two_consumers(t, kind, **options)
    run.__name__ = name
    scenario(area, title, rule=rule, clients=(kind,), name=name)(run)


_CLASSIC_RULE = ("two consumers join one after the other: the second join rebalances the group, the partitions "
                 "end up split between them, each commits and leaves, the group ends Empty")
_register("kafka-python", "classic", "kafka-python: two consumers join, read, commit, leave", _CLASSIC_RULE,
          "clients_kafka_python")
_register("aiokafka", "classic", "aiokafka: two consumers join, read, commit, leave", _CLASSIC_RULE,
          "clients_aiokafka")
_register("confluent", "classic", "confluent-kafka (classic): two consumers join, read, commit, leave",
          _CLASSIC_RULE, "clients_confluent_classic")
_register("confluent", "classic", "confluent-kafka cooperative-sticky: incremental rebalance",
          "with cooperative-sticky the first consumer keeps the partitions it does not give up while the "
          "second joins (an incremental rebalance in two rounds)", "clients_confluent_cooperative",
          **{"partition.assignment.strategy": "cooperative-sticky"})
_register("kgroup", "classic", "kgroup's client (classic): two consumers join, read, commit, leave",
          _CLASSIC_RULE, "clients_kgroup_classic")
_register("confluent-consumer", "consumer", "confluent-kafka group.protocol=consumer: two members",
          "with the consumer protocol the second member's join moves the group epoch; the first revokes, the "
          "second is assigned; both commit with their member epochs and leave", "clients_confluent_consumer")
_register("kgroup-consumer", "consumer", "kgroup's client group.protocol=consumer: two members",
          "the same with kgroup's own KIP-848 client", "clients_kgroup_consumer")


@scenario("share", "confluent-kafka ShareConsumer: accept, release, redelivery",
          rule="a ShareConsumer that releases a record gets it again with delivery count 2 and accepts it; "
               "every record ends accepted once", clients=("confluent-share",))
async def clients_confluent_share(t: Target) -> None:
    group, topic = t.names.group(), t.names.topic()
    raw = await t.raw()
    await observe.group_topics(raw, group, {topic: 1})
    await t.ask(raw, "group configs", set_group_configs(group, share_auto_offset_reset="earliest"))
    await observe.group_configs_visible(raw, group, share_auto_offset_reset="earliest")
    await observe.produce(raw, topic, 0, [f"v{i}".encode() for i in range(6)])

    def policy(m: Any) -> str:
        return "release" if m.offset() % 2 and (m.delivery_count() or 1) == 1 else "accept"
    consumer = ShareConsumerDriver(t.address, group, topic, t.client_id("share"), policy).start()
    try:
        async def accepted_all() -> bool:
            if consumer.error is not None:
                raise consumer.error
            return len({o for _, o, _, action in consumer.deliveries if action == "accept"}) == 6
        await observe.until(accepted_all, "every record is accepted", 60)
    finally:
        await asyncio.to_thread(consumer.close)
    t.add("deliveries", sorted(consumer.deliveries))
    t.add_outcomes("share")
