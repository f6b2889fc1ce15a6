"""A kafka-python ``BaseCoordinator`` member of a ``kgroup-tasks`` group, in its own process.

    python -m tests.integration.kafka_python_tasks_process BOOTSTRAP GROUP TASKS

What another implementation of kgroup's documented task protocol looks like: the bytes are
written and read here with ``struct`` from the layout in ``kgroup.assignors.task_protocol``
(nothing of kgroup is imported), the member is eager (kafka-python's BaseCoordinator stops
everything before it rejoins, so it claims its last tasks as not running), and when it
leads it assigns with its own, different rule: tasks stay with the member that still runs
them (the protocol's one rule for leaders), every other task is dealt round-robin over the
members in *reverse* member-id order.

Prints JSON lines: ``assigned`` / ``revoked`` (its tasks, with the generation) and, when it
leads, ``plan`` (what it gave every member). SIGTERM: stop, leave, print ``closed``.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import time
from tests.integration.waits import pace

PROTOCOL_TYPE = "kgroup-tasks"
PROTOCOL = "sticky"


def say(**event) -> None:
    print(json.dumps(event), flush=True)


def strings(values) -> bytes:
    out = [struct.pack(">i", len(values))]
    for v in values:
        raw = v.encode()
        out.append(struct.pack(">h", len(raw)) + raw)
    return b"".join(out)


def read_strings(data: bytes, pos: int) -> tuple[list[str], int]:
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out = []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", data, pos)
        out.append(data[pos + 2:pos + 2 + n].decode())
        pos += 2 + n
    return out, pos


def encode_claim(tasks, generation: int, running: bool) -> bytes:
    return struct.pack(">hib", 1, generation, 1 if running else 0) + strings(sorted(tasks))


def decode_claim(data: bytes) -> tuple[list[str], int, bool]:
    _version, generation, running = struct.unpack_from(">hib", data, 0)
    tasks, _ = read_strings(data, 7)
    return tasks, generation, bool(running)


def encode_assignment(tasks) -> bytes:
    return struct.pack(">h", 1) + strings(sorted(tasks))


def decode_assignment(data: bytes) -> list[str]:
    return read_strings(data, 2)[0] if data else []


def main() -> None:
    from kafka.coordinator.base import BaseCoordinator
    from kafka.net.compat import KafkaNetClient

    bootstrap, group, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    all_tasks = [f"task-{i:02d}" for i in range(count)]

    class TaskCoordinator(BaseCoordinator):
        tasks: list[str] = []
        previous: tuple[list[str], int] = ([], -1)

        def protocol_type(self):
            return PROTOCOL_TYPE

        def group_protocols(self):
            # Eager: by the time this is sent it has stopped everything.
            return [(PROTOCOL, encode_claim(self.previous[0], self.previous[1], False))]

        async def _on_join_prepare_async(self, generation, member_id, timeout_ms=None):
            if self.tasks:
                say(event="revoked", t=time.monotonic(), member=member_id, generation=generation,
                    tasks=sorted(self.tasks))
            self.tasks = []

        def _perform_assignment(self, leader_id, protocol, members):
            runners: dict[str, str] = {}
            ids = sorted((m.member_id for m in members), reverse=True)
            plan: dict[str, list[str]] = {mid: [] for mid in ids}
            for m in members:
                tasks, _generation, running = decode_claim(bytes(m.metadata))
                if running:
                    for t in tasks:
                        if t in all_tasks:
                            runners.setdefault(t, m.member_id)
            for t, mid in runners.items():
                plan[mid].append(t)
            free = [t for t in all_tasks if t not in runners]
            for i, t in enumerate(free):
                plan[ids[i % len(ids)]].append(t)
            say(event="plan", generation=self._generation.generation_id, leader=leader_id,
                plan={mid: sorted(ts) for mid, ts in plan.items()})
            return {mid: encode_assignment(ts) for mid, ts in plan.items()}

        async def _on_join_complete_async(self, generation, member_id, protocol, assignment):
            self.tasks = decode_assignment(bytes(assignment))
            self.previous = (self.tasks, generation)
            say(event="assigned", t=time.monotonic(), member=member_id, generation=generation,
                tasks=sorted(self.tasks))

    client = KafkaNetClient(bootstrap_servers=bootstrap, client_id=f"kafka-python-{os.getpid()}")
    client._net.start()
    client._manager.bootstrap(10_000)
    coordinator = TaskCoordinator(client, group_id=group, session_timeout_ms=6000,
                                  heartbeat_interval_ms=1000, max_poll_interval_ms=10000,
                                  api_version=client._manager.broker_version)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    say(event="started", t=time.monotonic(), pid=os.getpid())
    parent = os.getppid()
    deadline = time.monotonic() + 240  # never outlive a test run, even an aborted one
    while not stopping and os.getppid() == parent and time.monotonic() < deadline:
        coordinator.ensure_active_group(timeout_ms=200)
        coordinator.poll_heartbeat()
        pace(0.05)
    if coordinator.tasks:
        say(event="revoked", t=time.monotonic(), member=coordinator._generation.member_id,
            generation=coordinator._generation.generation_id, tasks=sorted(coordinator.tasks))
    coordinator.close(timeout_ms=5000)
    client.close()
    say(event="closed", t=time.monotonic())


if __name__ == "__main__":
    main()
