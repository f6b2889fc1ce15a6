"""A LeaderElection or TaskAssignment member in its own process, so a test can kill -9 it.

    python -m tests.integration.membership_process leader BOOTSTRAP GROUP
    python -m tests.integration.membership_process tasks BOOTSTRAP GROUP TASKS

Prints one JSON line per callback, with ``t``: ``time.monotonic()`` read first thing in the
callback. On Linux that clock (CLOCK_MONOTONIC) is one system-wide clock, so the times of
different processes compare directly, and steps of the wall clock cannot reorder them.
SIGTERM closes the member cleanly (its callbacks run, it leaves the group), prints
``closed`` and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

SETTINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
            "rebalance.timeout.ms": 10000, "request.timeout.ms": 10000}


def say(**event) -> None:
    print(json.dumps(event), flush=True)


async def main() -> None:
    from kgroup.client import LeaderElection, TaskAssignment

    kind, bootstrap, group = sys.argv[1:4]
    config = {"bootstrap.servers": bootstrap, "client.id": f"{kind}-{os.getpid()}", **SETTINGS}
    if kind == "leader":
        def on_elected() -> None:
            t = time.monotonic()
            say(event="elected", t=t, member=helper.membership.member_id,
                generation=helper.generation)

        def on_lost() -> None:
            t = time.monotonic()
            say(event="lost", t=t, member=helper.membership.member_id)

        def on_leader(election, generation) -> None:
            say(event="leader", t=time.monotonic(), member=helper.membership.member_id,
                generation=generation, leader=None if election is None else election.leader,
                info=None if election is None else election.info.decode())

        helper = LeaderElection(group, config, info=str(os.getpid()).encode(),
                                on_elected=on_elected, on_lost=on_lost, on_leader=on_leader)
    else:
        tasks = [f"task-{i:02d}" for i in range(int(sys.argv[4]))]

        def callback(name):
            def run(changed) -> None:
                t = time.monotonic()
                say(event=name, t=t, member=helper.membership.member_id,
                    generation=helper.generation, tasks=sorted(changed))
            return run

        helper = TaskAssignment(group, tasks, config, on_assigned=callback("assigned"),
                                on_revoked=callback("revoked"), on_lost=callback("lost"))
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await helper.start()
    say(event="started", t=time.monotonic(), pid=os.getpid())
    parent = os.getppid()
    deadline = time.monotonic() + 240  # never outlive a test run, even an aborted one
    while not stop.is_set() and os.getppid() == parent and time.monotonic() < deadline:
        try:
            await asyncio.wait_for(stop.wait(), 0.2)
        except TimeoutError:
            pass
    await helper.close()
    say(event="closed", t=time.monotonic())


if __name__ == "__main__":
    asyncio.run(main())
