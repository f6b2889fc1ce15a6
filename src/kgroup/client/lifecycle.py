"""What every asyncio client shares: ``async with`` starts it and closes it."""

from __future__ import annotations

from typing import Self


class AsyncClient:
    """A client with ``start`` (connect, and join or heartbeat where it has a group) and
    ``close``; ``async with client:`` calls the one on entry and the other on exit."""

    async def start(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
