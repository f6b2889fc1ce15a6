"""Exactly one of several workers runs the scheduler: leader election with kgroup.

    .venv/bin/python examples/membership/leader_election.py --workers 3 --seconds 25

Against a running broker (``make run``). With ``--workers N`` this starts N members of the
group in one process; every few seconds the leader closes (it stops leading first, then
leaves the group) and another is elected at once. Run it with ``--workers 1`` in several
shells instead, and stop (Ctrl-C) or ``kill -9`` the one that leads: the others take over,
at once after Ctrl-C, after its session timeout after a kill.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from kgroup.client import LeaderElection

STARTED = time.monotonic()


async def worker(name: str, args: argparse.Namespace, stop: asyncio.Event) -> None:

    def say(what: str) -> None:
        print(f"{time.monotonic() - STARTED:6.2f}s  {name}: {what}", flush=True)

    # A member hears of a rebalance at its next heartbeat: 1 s, so hand-overs are quick.
    config = {"bootstrap.servers": args.bootstrap, "client.id": name,
              "session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 1000}
    async with LeaderElection(args.group, config, info=name.encode(),
                              on_elected=lambda: say("elected: I run the scheduler"),
                              on_lost=lambda: say("stopped leading")) as election:
        while not stop.is_set():
            try:
                await election.elected(timeout=0.5)
            except TimeoutError:
                continue
            leader = await election.wait_leader()
            say(f"leading in generation {election.generation} ({leader.info.decode()})")
            # Lead for a while, then hand over (in a real worker: until shut down).
            await asyncio.sleep(args.lead_seconds)
            if args.workers > 1:
                break
    say("closed")


async def main(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    names = [f"worker-{os.getpid()}-{i}" for i in range(args.workers)]
    tasks = [asyncio.create_task(worker(n, args, stop)) for n in names]
    try:
        await asyncio.wait_for(asyncio.shield(asyncio.gather(*tasks)), args.seconds)
    except TimeoutError:
        pass
    stop.set()
    await asyncio.gather(*tasks)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KGROUP_BOOTSTRAP", "127.0.0.1:9092"),
                        help="the broker (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--group", default="scheduler")
    parser.add_argument("--workers", type=int, default=1, help="members in this process")
    parser.add_argument("--seconds", type=float, default=30.0, help="stop after this long")
    parser.add_argument("--lead-seconds", type=float, default=4.0,
                        help="with several workers: how long each leads before it closes")
    parser.add_argument("--session-timeout-ms", type=int, default=6_000,
                        help="how long after a kill -9 the others take over")
    return parser.parse_args(argv)


if __name__ == "__main__":
    try:
        asyncio.run(main(parse(sys.argv[1:])))
    except KeyboardInterrupt:
        pass
