"""Groups of other protocol types with real `kgroup serve` and worker processes: leader
election across five processes (kill -9 and clean close), task assignment of 40 tasks
(a fifth worker, a killed worker), a kafka-python BaseCoordinator in the same task group,
and the co-partitioning consumer assignor example.

Ownership is judged from the workers' own callbacks: each prints ``time.monotonic()`` read
first thing in the callback (one clock for every process on Linux). An interval runs from
the callback that gives something (``elected``, ``assigned``) to the one that takes it
(``lost``, ``revoked``), or to the moment the test saw the process dead after kill -9.
Two intervals of one thing may touch but must not overlap by more than ``CLOCK_SLACK``,
which allows only for how the clock is read, not for any protocol delay.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.test_group_events import read_events
from tests.integration.waits import until

pytestmark = pytest.mark.integration

# Reads of time.monotonic() are nanosecond-resolution; a millisecond covers the gap between
# reading the clock and the action the read stands for.
CLOCK_SLACK = 0.001


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("membership") / "data",
                         group={"initial_rebalance_delay_ms": 300}).start()
    yield proc
    proc.finish()


LIVE: list[Worker] = []


@pytest.fixture(autouse=True)
def _kill_workers():
    yield
    while LIVE:
        LIVE.pop().kill9()


class Worker:
    """One member process; its JSON lines arrive in ``events`` (and ``lines``)."""

    def __init__(self, *argv: str, module: str = "tests.integration.membership_process") -> None:
        LIVE.append(self)
        self.proc = subprocess.Popen([sys.executable, "-m", module, *argv],
                                     stdout=subprocess.PIPE, text=True)
        self.lines: list[dict] = []
        self.events: queue.Queue = queue.Queue()
        self.member: str | None = None
        self.ended_at: float | None = None          # when seen dead after kill -9
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = json.loads(line)
            self.member = event.get("member") or self.member
            self.lines.append(event)
            self.events.put(event)

    def kill9(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.ended_at = time.monotonic()

    def terminate(self) -> None:
        """SIGTERM: the member closes cleanly (callbacks, LeaveGroup) and exits."""
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(30) == 0
        assert self.lines[-1]["event"] == "closed"


def wait_until(check, timeout: float = 60.0, what: str = "condition"):
    return until(check, timeout, 0.05, what)


def intervals(workers, start: str, ends: tuple[str, ...], keys=lambda e: [None]):
    """(key, worker, from, to) for every interval in which a worker held a key (the
    leadership, a task): from a ``start`` event to one of ``ends``, or to its kill -9."""
    out = []
    for w in workers:
        held: dict = {}
        for e in w.lines:
            if e["event"] == start:
                for k in keys(e):
                    held[k] = e["t"]
            elif e["event"] in ends:
                for k in keys(e):
                    if k in held:
                        out.append((k, w, held.pop(k), e["t"]))
        end = w.ended_at if w.ended_at is not None else float("inf")
        out += [(k, w, t0, end) for k, t0 in held.items()]
    return out


def assert_never_two_at_once(spans) -> None:
    by_key: dict = {}
    for k, w, t0, t1 in spans:
        by_key.setdefault(k, []).append((t0, t1, w.proc.pid))
    for k, spans_ in by_key.items():
        spans_.sort()
        for (a0, a1, pa), (b0, b1, pb) in zip(spans_, spans_[1:]):
            assert b0 >= a1 - CLOCK_SLACK, (
                f"{k!r}: process {pb} from {b0:.4f} while {pa} until {a1:.4f}")


def group_events(broker, group: str) -> list[dict]:
    return [v for k, v in read_events(broker.bootstrap) if k == group.encode()]


# -- leader election ---------------------------------------------------------------------


def test_five_workers_have_one_leader_at_a_time_through_kill9_and_clean_close(broker):
    group = f"election-{uuid.uuid4().hex[:8]}"
    workers = [Worker("leader", broker.bootstrap, group) for _ in range(5)]

    def settled(live, after_generation=-1):
        """The leader of a generation every live worker has been told about."""
        told = {}
        for w in live:
            latest = [e for e in w.lines if e["event"] == "leader"]
            if not latest or latest[-1]["leader"] is None:
                return None
            told[w] = (latest[-1]["generation"], latest[-1]["leader"])
        if len(set(told.values())) == 1:
            generation, leader = next(iter(told.values()))
            if generation > after_generation:
                return generation, next(w for w in live if w.member == leader)
        return None

    generation, leader = wait_until(lambda: settled(workers), what="a first leader")

    # kill -9 the leader: the coordinator expires it after its session, and the generation
    # it forms then (the very next one) elects one of the others.
    leader.kill9()
    live = [w for w in workers if w is not leader]
    next_generation, second = wait_until(lambda: settled(live, generation),
                                         what="a leader after kill -9")
    assert next_generation == generation + 1
    events = group_events(broker, group)
    expired = [e for e in events if e["kind"] == "member_expired" and e["member"] == leader.member]
    assert expired and expired[0]["generation"] == generation

    # A clean close hands over at once: the leave starts the next generation, nobody expires.
    second.terminate()
    assert [e["event"] for e in second.lines][-3:] == ["lost", "leader", "closed"]
    live.remove(second)
    last_generation, third = wait_until(lambda: settled(live, next_generation),
                                        what="a leader after a clean close")
    assert last_generation == next_generation + 1 and third is not second
    events = group_events(broker, group)
    assert any(e["kind"] == "member_left" and e["member"] == second.member for e in events)
    assert not any(e["kind"] == "member_expired" and e["member"] == second.member for e in events)

    for w in live:              # each close hands over to one of those left
        w.terminate()
    # Exactly one leader per generation: one elected callback each, and every member that
    # heard of a generation heard the same leader.
    elected = [e["generation"] for w in workers for e in w.lines if e["event"] == "elected"]
    assert len(elected) == len(set(elected))
    assert {generation, next_generation, last_generation} <= set(elected)
    told: dict[int, set] = {}
    for w in workers:
        for e in w.lines:
            if e["event"] == "leader" and e["leader"] is not None:
                told.setdefault(e["generation"], set()).add(e["leader"])
    assert all(len(leaders) == 1 for leaders in told.values()), told
    # And at most one leader at any time, from the callbacks' own clock readings.
    spans = intervals(workers, "elected", ("lost",))
    assert len(spans) == len(elected)
    assert_never_two_at_once(spans)


# -- task assignment ---------------------------------------------------------------------


def current_tasks(w: Worker) -> set[str]:
    tasks: set[str] = set()
    for e in w.lines:
        if e["event"] == "assigned":
            tasks |= set(e["tasks"])
        elif e["event"] in ("revoked", "lost"):
            tasks -= set(e["tasks"])
    return tasks


def owners(workers) -> dict[str, Worker] | None:
    """task -> worker once every task runs on exactly one worker, else None."""
    out: dict[str, Worker] = {}
    for w in workers:
        for t in current_tasks(w):
            if t in out:
                return None
            out[t] = w
    return out


def balanced(workers, n_tasks: int):
    def check():
        got = owners(workers)
        if got is None or len(got) != n_tasks:
            return None
        counts = [len(current_tasks(w)) for w in workers]
        return got if max(counts) - min(counts) <= 1 else None
    return check


def task_spans(workers):
    return intervals(workers, "assigned", ("revoked", "lost"), keys=lambda e: e["tasks"])


def test_forty_tasks_over_four_workers_then_a_fifth_joins_and_one_is_killed(broker):
    group = f"tasks-{uuid.uuid4().hex[:8]}"
    workers = [Worker("tasks", broker.bootstrap, group, "40") for _ in range(4)]
    before = wait_until(balanced(workers, 40), what="40 tasks over 4 workers")
    assert sorted(len(current_tasks(w)) for w in workers) == [10] * 4

    # A fifth worker: exactly the 8 tasks it must take move, each revoked once where it was.
    marks = {w: len(w.lines) for w in workers}
    fifth = Worker("tasks", broker.bootstrap, group, "40")
    workers.append(fifth)
    after = wait_until(balanced(workers, 40), what="40 tasks over 5 workers")
    moved = {t for t in after if after[t] is not before[t]}
    assert len(moved) == 8 and all(after[t] is fifth for t in moved)
    revoked = [t for w in workers[:4] for e in w.lines[marks[w]:] if e["event"] == "revoked"
               for t in e["tasks"]]
    assert sorted(revoked) == sorted(moved)

    # kill -9 one: only its tasks move, nobody else stops anything.
    victim = workers[1]
    theirs = {t for t, w in after.items() if w is victim}
    survivors = [w for w in workers if w is not victim]
    marks = {w: len(w.lines) for w in survivors}
    victim.kill9()
    final = wait_until(balanced(survivors, 40), what="40 tasks over 4 workers again")
    assert {t for t in final if final[t] is not after[t]} == theirs
    assert not [e for w in survivors for e in w.lines[marks[w]:] if e["event"] != "assigned"]

    for w in survivors:
        w.terminate()
    assert_never_two_at_once(task_spans(workers))


# -- interop: a kafka-python BaseCoordinator in the same group ---------------------------


def test_kafka_python_base_coordinator_shares_a_task_group_either_leader_is_honoured(broker):
    group = f"interop-{uuid.uuid4().hex[:8]}"
    n = 12
    # kafka-python first: it leads, with its own rule; our members run what it planned.
    kp = Worker(broker.bootstrap, group, str(n),
                module="tests.integration.kafka_python_tasks_process")
    wait_until(lambda: current_tasks(kp) == {f"task-{i:02d}" for i in range(n)},
               what="kafka-python alone runs every task")
    ours = [Worker("tasks", broker.bootstrap, group, str(n)) for _ in range(2)]
    everyone = [kp, *ours]

    def honoured(members):
        def check():
            plans = [e for e in kp.lines if e["event"] == "plan"]
            got = owners(members)
            if not plans or got is None or len(got) != n:
                return None
            plan = plans[-1]["plan"]
            if set(plan) != {w.member for w in members}:
                return None
            runs = {w.member: sorted(current_tasks(w)) for w in members}
            return plan if runs == plan else None
        return check

    plan = wait_until(honoured(everyone), what="kafka-python's plan run by all three")
    assert all(plan[w.member] for w in everyone)        # it did spread them

    # kafka-python leaves; ours lead; a new kafka-python member joins and runs what ours
    # planned (its tasks come from our assignor, and it keeps to them).
    kp.terminate()
    wait_until(balanced(ours, n), what="our two members run every task")
    kp2 = Worker(broker.bootstrap, group, str(n), module="tests.integration.kafka_python_tasks_process")
    everyone = [kp, *ours, kp2]
    final = wait_until(balanced([*ours, kp2], n), what="our leader's tasks over three members")
    assert not [e for e in kp2.lines if e["event"] == "plan"]   # it did not lead
    assert sorted(len(current_tasks(w)) for w in [*ours, kp2]) == [4, 4, 4]
    assert len(final) == n
    for w in [*ours, kp2]:
        w.terminate()
    assert_never_two_at_once(task_spans(everyone))


# -- the co-partitioning consumer assignor example ----------------------------------------


def test_copartition_example_keeps_partition_i_of_both_topics_together(broker):
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples", "assignors"))
    from copartition import CoPartitionAssignor

    from kgroup.client import AdminClient, Consumer

    group = f"copartition-{uuid.uuid4().hex[:8]}"
    topics = (f"orders-{group}", f"payments-{group}")

    async def main() -> None:
        async with AdminClient(broker.bootstrap) as admin:
            await admin.create_topics({topics[0]: 6, topics[1]: 6})
        consumers: list[Consumer] = []
        assignors: dict[Consumer, CoPartitionAssignor] = {}

        async def join() -> None:
            assignor = CoPartitionAssignor()
            c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                          "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                          "partition.assignment.strategy": [assignor]})
            await c.start()
            c.subscribe(topics)
            consumers.append(c)
            assignors[c] = assignor

        async def settled() -> None:
            async with asyncio.timeout(60):
                while True:
                    for c in consumers:
                        await c.getmany(timeout_ms=50)
                    owned = [tp for c in consumers for tp in c.assignment()]
                    numbers = {c: {tp.partition for tp in c.assignment()} for c in consumers}
                    if (len(owned) == 12 == len(set(owned)) and all(numbers.values())
                            and max(map(len, numbers.values())) - min(map(len, numbers.values())) <= 1):
                        return

        def check() -> None:
            owners_ = {}
            for c in consumers:
                mine = c.assignment()
                by_topic = {t: {tp.partition for tp in mine if tp.topic == t} for t in topics}
                assert by_topic[topics[0]] == by_topic[topics[1]]        # co-partitioned
                for p in by_topic[topics[0]]:
                    owners_[p] = c.group.member.member_id
                # the user data the leader sent, delivered through on_assignment
                assert set(assignors[c].numbers) == by_topic[topics[0]]
            assert sorted(owners_) == list(range(6))
            for c in consumers:
                assert assignors[c].owners == owners_

        try:
            for _ in range(3):
                await join()
                await settled()
                check()
            before = {tp: c for c in consumers for tp in c.assignment()}
            leaving = consumers.pop(0)
            await leaving.close()
            await settled()
            check()
            # sticky through the user data: the others kept their partition numbers
            after = {tp: c for c in consumers for tp in c.assignment()}
            assert all(after[tp] is c for tp, c in before.items() if c is not leaving)
            await join()
            await settled()
            check()
        finally:
            for c in consumers:
                await c.close()

    asyncio.run(main())


# -- seen from outside: groups describe and the group events -----------------------------


def test_describe_and_group_events_show_groups_of_any_protocol_type(broker, capsys):
    from kgroup.cli.main import main
    from kgroup.client.blocking import (
        BlockingLeaderElection,
        BlockingMembership,
        BlockingTaskAssignment,
        LoopThread,
    )

    suffix = uuid.uuid4().hex[:8]
    groups = {"tasks": f"describe-tasks-{suffix}", "leader": f"describe-leader-{suffix}",
              "jobs": f"describe-jobs-{suffix}"}
    cfg = {"bootstrap.servers": broker.bootstrap, "session.timeout.ms": 6000,
           "heartbeat.interval.ms": 1000}
    loop = LoopThread()
    helpers = []
    try:
        tasks = [BlockingTaskAssignment(groups["tasks"], ["a", "b", "c"], cfg, loop=loop)
                 for _ in range(2)]
        leaders = [BlockingLeaderElection(groups["leader"], cfg, loop=loop) for _ in range(2)]
        jobs = BlockingMembership({**cfg, "group.id": groups["jobs"]}, protocol_type="jobs",
                                  protocols=[("v1", b"12345")], loop=loop,
                                  assign=lambda members: {m.member_id: b"xyz" for m in members})
        helpers = [*tasks, *leaders, jobs]
        wait_until(lambda: sorted(t for h in tasks for t in h.tasks) == ["a", "b", "c"],
                   what="three tasks over two members")
        wait_until(lambda: sum(h.is_leader for h in leaders) == 1, what="a leader")
        assert jobs.wait_assigned(30) == b"xyz"

        def describe(group: str) -> tuple[dict, dict[str, list[str]]]:
            """The group's JSON description, and its --members --verbose rows by member id."""
            assert main(["groups", "describe", group, "--format", "json", "--bootstrap-server",
                         broker.bootstrap]) == 0
            (doc,) = json.loads(capsys.readouterr().out)["groups"]
            assert main(["groups", "describe", group, "--members", "--verbose", "--bootstrap-server",
                         broker.bootstrap]) == 0
            lines = capsys.readouterr().out.splitlines()
            assert lines[0].split()[-4:] == ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
                                             "TARGET-ASSIGNMENT"]
            return doc, {r[1]: r for r in (line.split() for line in lines[1:])}

        doc, rows = describe(groups["tasks"])
        assert (doc["protocol_type"], doc["assignment_strategy"], len(doc["members"])) == (
            "kgroup-tasks", "sticky", 2)
        shown = {mid: r[-3] for mid, r in rows.items()}
        assert {mid: sorted(set(v.split(","))) for mid, v in shown.items()} == {
            h.target.membership.member_id: sorted(h.tasks) for h in tasks}
        assert all(r[-5:-3] == ["-", "-"] and r[-2:] == ["-", "-"] for r in rows.values())
        assert all(m["metadata_bytes"] > 0 and m["assignment_bytes"] > 0 for m in doc["members"])

        doc, rows = describe(groups["leader"])
        assert (doc["protocol_type"], doc["assignment_strategy"], len(doc["members"])) == (
            "kgroup-leader", "v1", 2)
        assert {r[-3] for r in rows.values()} == {"leader", "follower"}
        leader = next(h for h in leaders if h.is_leader)
        assert rows[leader.target.membership.member_id][-3] == "leader"

        doc, rows = describe(groups["jobs"])
        assert (doc["protocol_type"], doc["assignment_strategy"], len(doc["members"])) == ("jobs", "v1", 1)
        (row,) = rows.values()
        assert row[-3] == "opaque"
        assert (doc["members"][0]["metadata_bytes"], doc["members"][0]["assignment_bytes"]) == (5, 3)
        assert doc["members"][0]["assignment"] == "opaque" and doc["members"][0]["partitions"] is None
    finally:
        for h in helpers:
            h.close()
        loop.close()

    # The group events show them like any classic group: joins, a completed rebalance, each
    # member's assignment changing (its partitions unknown: the bytes are not ConsumerProtocol).
    for group, members in ((groups["tasks"], 2), (groups["leader"], 2), (groups["jobs"], 1)):
        events = group_events(broker, group)
        kinds = [e["kind"] for e in events]
        assert kinds.count("member_joined") == members and "rebalance_completed" in kinds
        assert all(e["protocol"] == "classic" for e in events)
        changed = [e for e in events if e["kind"] == "assignment_changed"]
        assert len({e["member"] for e in changed}) == members
        assert all(e["partitions"] is None for e in changed)
        assert kinds.count("member_left") == members


# -- static membership ---------------------------------------------------------------------


def test_static_leader_restarted_within_its_session_leads_again_without_a_rebalance(broker):
    from kgroup.client import LeaderElection

    group = f"static-{uuid.uuid4().hex[:8]}"
    timeline: list[tuple[str, str, int]] = []

    def election(instance: str, name: str) -> LeaderElection:
        return LeaderElection(
            group, {"bootstrap.servers": broker.bootstrap, "group.instance.id": instance,
                    "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000},
            on_elected=lambda: timeline.append((name, "elected", e[name].generation)),
            on_lost=lambda: timeline.append((name, "lost", e[name].generation)),
            on_leader=lambda el, g: timeline.append((name, "told", g)))

    e: dict[str, LeaderElection] = {}

    async def main() -> None:
        e["a"] = election("a", "a")
        await e["a"].start()
        await e["a"].elected(timeout=60)
        e["b"] = election("b", "b")
        await e["b"].start()
        await e["b"].wait_leader(timeout=60)
        generation = e["b"].generation
        # b learns who leads from its own SyncGroup; a's may still be on its way, so wait for a
        # to lead (a state, not an instant) and check it leads b's generation.
        await e["a"].elected(timeout=30)
        assert e["a"].generation == generation and not e["b"].is_leader
        # A static member does not leave on close: it gives up leading, and its place
        # waits for it for a session timeout.
        await e["a"].close()
        e["a2"] = election("a", "a2")
        await e["a2"].start()
        await e["a2"].elected(timeout=30)
        assert e["a2"].generation == generation          # no rebalance
        assert e["a2"].membership.member_id != e["a"].membership.member_id
        await asyncio.sleep(2)                             # b heard of no rebalance
        assert [t for t in timeline if t[0] == "b"] == [("b", "told", generation)]
        for name in ("a2", "b"):
            await e[name].close()

    asyncio.run(main())
    steps = [(name, what) for name, what, _ in timeline]
    assert steps.index(("a", "lost")) < steps.index(("a2", "elected"))
