"""What the interop tests share: records to produce, a timeline of partition ownership that
checks no partition ever has two owners, and waiting."""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from tests.integration.waits import until

T = TypeVar("T")


def values(count: int, prefix: str = "v") -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def spread(topic: str, count: int, partitions: int, prefix: str = "v", timestamp: int | None = None) -> list[dict]:
    """`count` records round-robin over the partitions, value `{prefix}{i}`, key `k{i}`."""
    return [{"topic": topic, "partition": i % partitions, "key": f"k{i}", "value": f"{prefix}{i}",
             **({"timestamp": timestamp + i} if timestamp is not None else {})} for i in range(count)]


def abort_transaction(java, bootstrap: str, transactional_id: str, records: list[dict]) -> None:
    """A Java producer named "aborter" sends `records` in one transaction and aborts it (what
    read_committed readers must never see), then closes."""
    java.call("producer.new", name="aborter", config={"bootstrap.servers": bootstrap,
                                                      "transactional.id": transactional_id})
    try:
        java.call("producer.initTransactions", name="aborter")
        java.call("producer.beginTransaction", name="aborter")
        java.call("producer.send", name="aborter", records=records)
        java.call("producer.abortTransaction", name="aborter")
    finally:
        java.call("producer.close", name="aborter")


def eventually(check: Callable[[], T], timeout: float = 60.0, interval: float = 0.2, what: str = "") -> T:
    """Call `check` until it returns a truthy value, taking an AssertionError it raises as
    "not yet" (tests/integration/waits.py's `until`, which waits on states, not on time)."""
    def probe():
        try:
            return check()
        except AssertionError:
            return None
    return until(probe, timeout, interval, what or getattr(check, "__name__", "condition"))


def past_start(offsets: dict[str, list]) -> dict[str, list]:
    """A share group's offsets ("topic:partition" -> [start offset, lag, leader epoch...]) with the
    start offset left out: what is finished shows in the lag at once, while the start offset
    DescribeShareGroupOffsets reads trails one change (Kafka 4.4's share partition writes its
    state, then moves its start; core/share_partition.py)."""
    return {k: v[1:] for k, v in offsets.items()}


def no_partition_owned_twice(events: Iterable[dict]) -> dict[str, set]:
    """Replay assigned / revoked / lost / closed events in the order the clients emitted them;
    assert that no partition is ever owned by two consumers at once. Answer the final owners."""
    owned: dict[str, set] = {}
    for e in events:
        kind, name = e.get("event"), e.get("name")
        if kind == "assigned":
            mine = owned.setdefault(name, set())
            for p in map(tuple, e["partitions"]):
                others = [n for n, parts in owned.items() if n != name and p in parts]
                assert not others, f"{p} assigned to {name} while {others} still owned it"
                mine.add(p)
        elif kind in ("revoked", "lost"):
            owned.setdefault(name, set()).difference_update(map(tuple, e["partitions"]))
        elif kind in ("closed", "failed"):
            owned.pop(name, None)
    return owned
