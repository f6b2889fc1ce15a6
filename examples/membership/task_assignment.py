"""Spread named jobs over whoever is alive, moving as few as possible when workers come and go.

    .venv/bin/python examples/membership/task_assignment.py --workers 3 --seconds 25

Against a running broker (``make run``). With ``--workers N`` this starts N workers of the
group one after another in one process, then closes the first: watch each worker start and
stop only the jobs that move. Run it with ``--workers 1`` in several shells instead, and
stop or ``kill -9`` some: the jobs of the one that went are the only ones that move.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from kgroup.client import TaskAssignment

STARTED = time.monotonic()


async def worker(name: str, args: argparse.Namespace, stop: asyncio.Event) -> None:
    jobs = [f"job-{i:02d}" for i in range(args.jobs)]

    def say(what: str, changed: frozenset[str]) -> None:
        print(f"{time.monotonic() - STARTED:6.2f}s  {name}: {what} {', '.join(sorted(changed))}",
              flush=True)

    config = {"bootstrap.servers": args.bootstrap, "client.id": name,
              "session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 1000}
    async with TaskAssignment(args.group, jobs, config,
                              on_assigned=lambda new: say("start", new),
                              on_revoked=lambda gone: say("stop", gone)) as tasks:
        await stop.wait()
        print(f"{name} runs {len(tasks.tasks)} jobs; closing", flush=True)


async def main(args: argparse.Namespace) -> None:
    stops = []
    running = []
    for i in range(args.workers):
        stop = asyncio.Event()
        stops.append(stop)
        running.append(asyncio.create_task(worker(f"worker-{os.getpid()}-{i}", args, stop)))
        await asyncio.sleep(args.seconds / (args.workers + 2))
    if args.workers > 1:
        stops[0].set()                 # the first leaves: only its jobs move
        await running[0]
    await asyncio.sleep(args.seconds / (args.workers + 2))
    for stop in stops:
        stop.set()
    await asyncio.gather(*running)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KGROUP_BOOTSTRAP", "127.0.0.1:9092"),
                        help="the broker (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)")
    parser.add_argument("--group", default="job-workers")
    parser.add_argument("--jobs", type=int, default=12)
    parser.add_argument("--workers", type=int, default=1, help="workers in this process")
    parser.add_argument("--seconds", type=float, default=30.0, help="stop after about this long")
    parser.add_argument("--session-timeout-ms", type=int, default=6_000,
                        help="how long after a kill -9 its jobs move")
    return parser.parse_args(argv)


if __name__ == "__main__":
    try:
        asyncio.run(main(parse(sys.argv[1:])))
    except KeyboardInterrupt:
        pass
