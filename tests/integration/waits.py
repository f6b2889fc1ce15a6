"""The one place where integration tests let time pass (tests/suite/test_sleep_lint.py
refuses `time.sleep` anywhere else under tests/integration).

A test waits for the state it needs — a group Stable, a record count, a log line — with
`wait_for` / `until`, under a generous bound: on a loaded 2-core machine a step that takes
0.1 s alone can take 10 s. Only three things are about time itself, and each says so:

- `hold(seconds, why)`: a window in which something must NOT happen (no rebalance, no
  redelivery, no log line), or a protocol timer that has to run out (a transaction
  timeout). The bound is the point of the check, so `why` names it.
- `pace(seconds)`: the rhythm of a workload or a client program (a record every 10 ms, a
  kill every second) — not a wait for anything.
- the polls inside `wait_for` / `until` themselves.
"""

from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def until(probe: Callable[[], T], timeout: float = 60.0, interval: float = 0.1, what: str = "condition") -> T:
    """Call `probe` until it returns something truthy, and return that; AssertionError
    after `timeout` seconds, naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {value!r})")
        time.sleep(interval)


def wait_for(condition: Callable[[], object], timeout: float = 60.0, interval: float = 0.1,
             what: str = "condition") -> None:
    """Wait until `condition()` is true; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def hold(seconds: float, why: str) -> None:
    """Let `seconds` pass on purpose: `why` says what must (not) happen meanwhile."""
    assert why, "say what the time is for"
    time.sleep(seconds)


def pace(seconds: float) -> None:
    """One beat of a workload's rhythm (a producer's interval, a chaos loop's step)."""
    time.sleep(seconds)
