"""Objects a unit test opened and drops without closing (often on purpose, to stand for
kill -9), closed after the test by an autouse fixture (tests/unit/conftest.py).

Storage objects hold raw file descriptors and have no finalizer: left open, they stay open
for the rest of the pytest worker's life (see docs/testing.md, "Descriptors stay few").
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")
_OPENED: list[Any] = []


def closed_after_test(obj: T) -> T:
    """`obj` (anything with an idempotent `close()`), to be closed when the test ends."""
    _OPENED.append(obj)
    return obj


def close_all() -> None:
    while _OPENED:
        _OPENED.pop().close()
