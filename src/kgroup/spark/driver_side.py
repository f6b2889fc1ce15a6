"""The driver-side state of a stream reader: made from the reader's options on first use,
closed by ``stop``, never pickled.

Spark pickles a ``DataSourceStreamReader`` into its tasks, which only call ``read``; what
the driver keeps for a query (a group member, a loop thread, connections) must not travel
with it, and a task's copy must not make its own. Both stream readers (format "kgroup" and
"kgroup-share") hold their driver-side state this way.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, TypeVar


class _Closable(Protocol):
    def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


class DriverSide(Generic[S]):
    """Mixin of a stream reader: ``opts`` travel with the reader, ``driver`` (made by
    ``_make_driver`` from them) stays on the driver."""

    def __init__(self, opts: Any) -> None:
        self.opts = opts
        self._driver: S | None = None

    def _make_driver(self) -> S:
        raise NotImplementedError

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.opts = state["opts"]
        self._driver = None

    @property
    def driver(self) -> S:
        if self._driver is None:
            self._driver = self._make_driver()
        return self._driver

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None
