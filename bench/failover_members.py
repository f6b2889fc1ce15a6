"""Members of one group for bench/failover.py: M kgroup asyncio consumers in this process.

    python bench/failover_members.py BOOTSTRAP GROUP TOPIC M NAME [PROTOCOL]

Every 100 ms it prints one JSON line per partition that moved: {"p": partition, "o": next
offset, "t": wall-clock time}, plus {"rebalance": "assigned" | "revoked", "member": ...} for
every rebalance callback (the first assignments of a member too). It runs until stdin
closes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time

from peers import ROOT  # noqa: F401  (puts src/ on sys.path)

from kgroup.client import Consumer, ConsumerRebalanceListener


async def member(bootstrap: str, group: str, topic: str, name: str, protocol: str,
                 positions: dict[int, int], stop: asyncio.Event) -> None:
    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            print(json.dumps({"rebalance": "revoked", "member": name, "t": time.time()}), flush=True)

        def on_partitions_assigned(self, assigned):
            print(json.dumps({"rebalance": "assigned", "member": name, "t": time.time()}), flush=True)

    config = {"bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
              "group.protocol": protocol, "auto.offset.reset": "latest", "enable.auto.commit": False}
    if protocol == "classic":
        config.update({"session.timeout.ms": 30000, "heartbeat.interval.ms": 1000})
    async with Consumer(config) as consumer:
        consumer.subscribe([topic], listener=Listener())
        while not stop.is_set():
            for tp, records in (await consumer.getmany(timeout_ms=100)).items():
                positions[tp.partition] = max(positions.get(tp.partition, 0), records[-1].offset + 1)


async def main() -> None:
    bootstrap, group, topic, count, name = sys.argv[1:6]
    protocol = sys.argv[6] if len(sys.argv) > 6 else "classic"
    positions: dict[int, int] = {}
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    threading.Thread(target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)), daemon=True).start()
    tasks = [asyncio.create_task(member(bootstrap, group, topic, f"{name}-{i}", protocol, positions, stop))
             for i in range(int(count))]
    reported: dict[int, int] = {}
    while not stop.is_set():
        await asyncio.sleep(0.1)
        now = time.time()
        for p, o in list(positions.items()):
            if reported.get(p) != o:
                reported[p] = o
                print(json.dumps({"p": p, "o": o, "t": now}), flush=True)
    await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
