"""Test data for the Spark tests: topics whose every record can be told from its offset.

Record ``i`` of a topic made here goes to partition ``i % partitions`` with key ``k<i>``,
value ``value-<i>-<i*7919 mod 10007>`` and, for every tenth record, a header ``n=<i>``.
"""

from __future__ import annotations

import asyncio

from kgroup.client import AdminClient, Producer


def record(i: int) -> tuple[bytes, bytes, tuple[tuple[str, bytes], ...]]:
    """(key, value, headers) of record ``i``."""
    headers = (("n", str(i).encode()),) if i % 10 == 0 else ()
    return f"k{i}".encode(), f"value-{i}-{i * 7919 % 10007}".encode(), headers


def create(bootstrap: str, topic: str, partitions: int) -> None:
    async def main() -> None:
        async with AdminClient(bootstrap) as admin:
            await admin.create_topics({topic: partitions})

    asyncio.run(main())


def produce(bootstrap: str, topic: str, partitions: int, start: int, count: int) -> None:
    """Records ``start`` .. ``start + count - 1`` (acks=all; returns when all are in)."""
    async def main() -> None:
        async with Producer({"bootstrap.servers": bootstrap, "batch.size": 262_144}) as p:
            futures = []
            for i in range(start, start + count):
                key, value, headers = record(i)
                futures.append(await p.send(topic, value, key, partition=i % partitions,
                                            headers=headers))
            await p.flush()
            for f in futures:
                f.result()

    asyncio.run(main())


def expected(partitions: int, count: int, start: int = 0) -> dict[tuple[int, int], tuple]:
    """(partition, offset) -> (key, value, headers) of records ``start`` .. ``start + count
    - 1`` of a topic made by ``produce`` from record 0 on."""
    return {(i % partitions, i // partitions): record(i) for i in range(start, start + count)}
