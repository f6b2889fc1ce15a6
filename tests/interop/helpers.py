"""What the interop tests share: records to produce, a timeline of partition ownership that
checks no partition ever has two owners, and waiting."""

from __future__ import annotations

import time
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


def values(count: int, prefix: str = "v") -> list[str]:
    return [f"{prefix}{i}" for i in range(count)]


def spread(topic: str, count: int, partitions: int, prefix: str = "v", timestamp: int | None = None) -> list[dict]:
    """`count` records round-robin over the partitions, value `{prefix}{i}`, key `k{i}`."""
    return [{"topic": topic, "partition": i % partitions, "key": f"k{i}", "value": f"{prefix}{i}",
             **({"timestamp": timestamp + i} if timestamp is not None else {})} for i in range(count)]


def eventually(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.2, what: str = "") -> T:
    """Call `check` until it returns a truthy value (or stops raising AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            result = check()
            if result:
                return result
            error = None
        except AssertionError as exc:
            error = exc
        if time.monotonic() > deadline:
            if error is not None:
                raise error
            raise AssertionError(f"not within {timeout} s: {what or check}")
        time.sleep(interval)


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
