"""Wake the control API's waits when a group they wait on may have changed.

How this works: a shard reports the groups each Result names as changed (`changed`), and
everything once it has loaded (`everything`); a wait (`until_changed`) parks a future under
its group id and returns when that group is reported or its time is up. A shard pays for
this only while the control API is on, and only for Results that change a group.
"""

from __future__ import annotations

import asyncio
from typing import Iterable

from kgroup.core.result import GroupChange


class GroupWatch:
    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Future]] = {}

    def changed(self, changes: Iterable[GroupChange]) -> None:
        if not self._waiting:
            return
        for change in changes:
            self._wake(self._waiting.pop(change.group_id, ()))

    def everything(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for futures in waiting.values():
            self._wake(futures)

    async def until_changed(self, group_id: str, timeout_s: float) -> None:
        """Return once `group_id` is reported changed, or after `timeout_s`."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(group_id, set()).add(future)
        try:
            async with asyncio.timeout(max(timeout_s, 0.0)):
                await future
        except TimeoutError:
            pass
        finally:
            waiting = self._waiting.get(group_id)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._waiting[group_id]

    @staticmethod
    def _wake(futures: Iterable[asyncio.Future]) -> None:
        for future in futures:
            if not future.done():
                future.set_result(None)
