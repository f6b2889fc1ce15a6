"""The rebalance listener never runs while the user holds records getmany returned.

The group driver performs callback actions on its own task; before the ListenerGate a
revocation ran at the user's next ``await`` (a commit of the batch, say), so the user held
records of a partition it had just given up and the member acknowledged the revocation
before the batch was processed. Kafka runs the listener inside poll() only. These drive the
Consumer's action handler and fetch buffer directly: no broker, no clock, no sleep.
"""

from __future__ import annotations

import asyncio

import pytest

from kgroup.client import Consumer, ConsumerRebalanceListener, TopicPartition
from kgroup.client.listener_gate import ListenerGate
from kgroup.client.records import ConsumerRecord
from kgroup.member import RunAssigned, RunLost, RunRevoked

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class Owner(ConsumerRebalanceListener):
    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.owned: set[TopicPartition] = set()
        self.events: list[tuple[str, set[TopicPartition], object]] = []

    def on_partitions_assigned(self, assigned):
        self.events.append(("assigned", set(assigned), None))
        self.owned |= assigned

    def on_partitions_revoked(self, revoked):
        # what a commit made here would use: the generation that owned them
        self.events.append(("revoked", set(revoked), self.consumer._revoking))
        self.owned -= revoked

    def on_partitions_lost(self, lost):
        self.events.append(("lost", set(lost), None))
        self.owned -= lost


def _consumer() -> tuple[Consumer, Owner]:
    c = Consumer({"group.id": "g", "group.protocol": "consumer", "enable.auto.commit": False})
    c._started = True   # no broker: the group driver and the fetch task are not started
    owner = Owner(c)
    c._listener = owner
    return c, owner


def _buffer(c: Consumer, tp: TopicPartition, offsets: range) -> None:
    """Records of ``tp`` as a Fetch response would leave them in the fetch buffer."""
    st = c.fetcher.states[tp]
    st.position = st.fetch_offset = offsets.start
    records = [ConsumerRecord(tp.topic, tp.partition, o, 0, 0, None, b"v") for o in offsets]
    st.buffered += 1
    st.fetch_offset = offsets.stop
    c.fetcher._buffer.append([tp, st.epoch, records, 0, offsets.stop])


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)   # let the driver's task run (no time passes)


@pytest.mark.parametrize("action", [RunRevoked(frozenset({("t", 1)}), 7, "m-1"), RunLost(frozenset({("t", 1)}))],
                         ids=["revoked", "lost"])
def test_a_partition_leaving_while_the_user_holds_its_records_waits_for_the_next_poll(action):
    async def main():
        c, owner = _consumer()
        await c._on_action(RunAssigned(frozenset({("t", 0), ("t", 1)})))
        _buffer(c, T0, range(0, 3))
        _buffer(c, T1, range(0, 3))
        got = await c.getmany(max_records=10)
        assert set(got) == {T0, T1}
        # The driver is told T1 leaves while the user processes the batch (at an await of
        # its own, e.g. committing T0's records first).
        driver = asyncio.create_task(c._on_action(action))
        await _turns()
        assert set(got) <= owner.owned, "the user holds records of a partition it gave up"
        assert not driver.done()   # the member's acknowledgement waits for the callback
        assert c.assignment() == {T0}   # nothing more of T1 is fetched or handed out
        _buffer(c, T0, range(3, 5))
        # The next poll runs the callback on the user's task, before handing anything out.
        got = await c.getmany(max_records=10)
        await _turns()
        assert driver.done() and driver.exception() is None
        kind = "revoked" if isinstance(action, RunRevoked) else "lost"
        context = (7, "m-1") if kind == "revoked" else None
        assert owner.events[-1] == (kind, {T1}, context)
        assert owner.owned == {T0} and set(got) == {T0}
        assert [r.offset for r in got[T0]] == [3, 4]

    asyncio.run(main())


def test_a_callback_runs_at_once_while_the_user_holds_nothing():
    async def main():
        c, owner = _consumer()
        await c._on_action(RunAssigned(frozenset({("t", 0), ("t", 1)})))
        assert owner.owned == {T0, T1}   # before any poll: at once
        assert await c.getmany() == {}   # an empty poll leaves the user holding nothing
        await asyncio.wait_for(c._on_action(RunRevoked(frozenset({("t", 1)}), 2, "m")), 1)
        assert owner.owned == {T0} and owner.events[-1] == ("revoked", {T1}, (2, "m"))

    asyncio.run(main())


def test_the_gate_hands_a_callback_failure_to_the_driver_and_skips_an_abandoned_one():
    async def main():
        gate = ListenerGate()
        gate.holding = True
        ran: list[str] = []

        async def fails() -> None:
            ran.append("fails")
            raise RuntimeError("listener failed")

        async def abandoned() -> None:
            ran.append("abandoned")

        failing = asyncio.create_task(gate.run(fails))
        gone = asyncio.create_task(gate.run(abandoned))
        await _turns()
        assert gate.waiting == 2 and not ran
        gone.cancel()   # the driver was stopped meanwhile
        await _turns()
        await gate.release()
        assert ran == ["fails"] and not gate.holding
        with pytest.raises(RuntimeError, match="listener failed"):
            await failing

    asyncio.run(main())


def test_a_callback_held_past_the_limit_runs_on_the_driver_after_all():
    # The driver sends no heartbeat while it waits; past half the session timeout it runs
    # the callback itself rather than let the member be fenced (limit 0: at once).
    async def main():
        gate = ListenerGate(limit_s=0)
        gate.holding = True
        ran: list[str] = []

        async def revoke() -> None:
            ran.append("revoke")

        await asyncio.wait_for(gate.run(revoke), 5)
        assert ran == ["revoke"] and gate.waiting == 0
        await gate.release()
        assert ran == ["revoke"]   # not run twice

    asyncio.run(main())


def test_the_consumer_bounds_the_wait_by_half_its_session_timeout():
    c = Consumer({"group.id": "g", "session.timeout.ms": 10_000})
    assert c._gate.limit_s == 5.0
