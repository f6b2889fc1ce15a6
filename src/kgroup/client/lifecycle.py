"""What every asyncio client shares: ``async with`` starts it and closes it, and a
background task is stopped the same way everywhere."""

from __future__ import annotations

import asyncio
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


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel a client's background task and wait until it has ended; how it ended (the
    cancellation, or an error it died of before) is not the closer's concern."""
    if task is None:
        return
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
