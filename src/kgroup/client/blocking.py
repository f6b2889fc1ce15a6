"""The asyncio client from blocking code: a private event loop in a daemon thread.

How this works: ``LoopThread`` starts an event loop in a thread of its own; ``run(coro)``
hands it a coroutine and blocks the calling thread until the result (or the exception)
comes back. Between calls the loop keeps running, so what the client does in the
background — a consumer's fetches ahead, a member's heartbeats, a producer's linger —
goes on while the caller does other work. Synchronous code (a Spark driver or task, a
script) drives ``Consumer``, ``Producer`` and ``AdminClient`` this way, all on one loop.

``BlockingAdmin`` is the ``AdminClient`` calls such code needs, each one blocking: cluster
metadata, the offsets of partitions, and a group's committed offsets, read and written as
a "simple" client (no membership, generation -1), which the coordinator accepts only while
the group has no members.

``BlockingMembership``, ``BlockingLeaderElection`` and ``BlockingTaskAssignment`` are the
group helpers for blocking code (a worker process that is not asyncio): each starts when
made, its waits block, and its callbacks run on the loop's thread (keep them short, or hand
the work to your own threads).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kgroup.error_codes import ErrorCode

from .admin import LATEST, AdminClient
from .cluster import ClusterMetadata
from .connection import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    # Loaded by the classes that wrap them: a user of BlockingAdmin alone (Spark's stream
    # reader process, on every query's start) does not load group membership.
    from .leader_election import LeaderElection
    from .membership import Membership
    from .task_assignment import TaskAssignment

__all__ = ["BlockingAdmin", "BlockingLeaderElection", "BlockingMembership",
           "BlockingTaskAssignment", "LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An asyncio event loop running in a daemon thread; see the module comment."""

    def __init__(self, name: str = "kgroup-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (TimeoutError after ``timeout``)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopThread.run called from its own loop; await the coroutine")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Schedule ``fn(*args)`` on the loop from any thread."""
        self.loop.call_soon_threadsafe(fn, *args)

    def close(self, timeout: float = 5.0) -> None:
        """Cancel what still runs on the loop, stop it and join the thread."""
        if self.loop.is_closed():
            return

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            try:
                self.run(cancel_all(), timeout)
            except TimeoutError:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self.loop.close()


class BlockingAdmin:
    """Blocking metadata, partition offsets and group offsets; see the module comment.

    Owns its ``LoopThread`` unless one is given (then several clients share it).
    """

    def __init__(self, bootstrap: str | Sequence[str], *, client_id: str = "kgroup-blocking",
                 timeout: float = DEFAULT_TIMEOUT, loop: LoopThread | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        self._own_loop = loop is None
        self.loop = loop or LoopThread(f"kgroup-{client_id}")
        self.admin = AdminClient(bootstrap, client_id=client_id, timeout=timeout, config=config)

    def __enter__(self) -> BlockingAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def metadata(self, topics: Iterable[str] | None = None) -> ClusterMetadata:
        """Brokers and topics (every topic when ``topics`` is None)."""
        return self.loop.run(self.admin.metadata(None if topics is None else list(topics)))

    def partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """topic -> number of partitions, for topics that exist (internal ones left out
        when ``topics`` is None)."""
        md = self.metadata(topics)
        return {name: len(info.partitions) for name, info in sorted(md.topics.items())
                if info.error is ErrorCode.NONE and info.partitions
                and (topics is not None or not info.is_internal)}

    def list_offsets(self, topic: str, partitions: Sequence[int] | None = None,
                     spec: int = LATEST) -> dict[int, int]:
        """partition -> offset for ``spec`` (EARLIEST, LATEST or a timestamp in ms)."""
        return self.loop.run(self.admin.list_offsets(topic, partitions, spec))

    def group_offsets(self, group: str, topics: Mapping[str, Sequence[int]] | None = None
                      ) -> dict[tuple[str, int], int]:
        """Committed offsets of ``group``: (topic, partition) -> offset."""
        return self.loop.run(self.admin.list_group_offsets(group, topics))

    def commit_group_offsets(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit ``offsets`` for ``group`` without membership; GroupNotEmpty when the group
        has members (the coordinator fences a commit without a generation then)."""
        if offsets:
            self.loop.run(self.admin.alter_group_offsets(group, offsets, require_empty=False))

    def close(self) -> None:
        if not self.loop.loop.is_closed():
            self.loop.run(self.admin.close())
            if self._own_loop:
                self.loop.close()


class _BlockingGroup:
    """A group helper started on a ``LoopThread`` (its own unless one is given)."""

    def __init__(self, target: Any, loop: LoopThread | None, name: str) -> None:
        self._own_loop = loop is None
        self.loop = loop or LoopThread(f"kgroup-{name}")
        self.target = target
        try:
            self.loop.run(target.start())
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Give up what the member holds (its callbacks run), leave the group, stop."""
        if not self.loop.loop.is_closed():
            self.loop.run(self.target.close())
            if self._own_loop:
                self.loop.close()


class BlockingMembership(_BlockingGroup):
    """``Membership`` for blocking code; takes the same arguments (and ``loop``)."""

    target: Membership

    def __init__(self, config: Mapping[str, Any] | None = None, /, *,
                 loop: LoopThread | None = None, **kwargs: Any) -> None:
        from .membership import Membership

        super().__init__(Membership(config, **kwargs), loop, "membership")

    @property
    def member_id(self) -> str:
        return self.target.member_id

    @property
    def assignment(self) -> bytes | None:
        return self.target.assignment

    @property
    def generation(self) -> int:
        return self.target.generation

    @property
    def is_leader(self) -> bool:
        return self.target.is_leader

    def wait_assigned(self, timeout: float | None = None) -> bytes:
        return self.loop.run(self.target.wait_assigned(timeout))

    def set_metadata(self, protocols: Sequence[tuple[str, bytes]], *, rejoin: bool = True) -> None:
        self.loop.call_soon(lambda: self.target.set_metadata(protocols, rejoin=rejoin))

    def rejoin(self, reason: str = "the application asked for a rebalance") -> None:
        self.loop.call_soon(self.target.rejoin, reason)


class BlockingLeaderElection(_BlockingGroup):
    """``LeaderElection`` for blocking code; takes the same arguments (and ``loop``)."""

    target: LeaderElection

    def __init__(self, group: str, config: Mapping[str, Any] | None = None, /, *,
                 loop: LoopThread | None = None, **kwargs: Any) -> None:
        from .leader_election import LeaderElection

        super().__init__(LeaderElection(group, config, **kwargs), loop, "leader-election")

    @property
    def is_leader(self) -> bool:
        return self.target.is_leader

    @property
    def leader(self) -> Any:
        return self.target.leader

    def elected(self, timeout: float | None = None) -> None:
        """Block until this member leads (TimeoutError after ``timeout`` seconds)."""
        self.loop.run(self.target.elected(timeout))


class BlockingTaskAssignment(_BlockingGroup):
    """``TaskAssignment`` for blocking code; takes the same arguments (and ``loop``)."""

    target: TaskAssignment

    def __init__(self, group: str, tasks: Iterable[str], config: Mapping[str, Any] | None = None,
                 /, *, loop: LoopThread | None = None, **kwargs: Any) -> None:
        from .task_assignment import TaskAssignment

        super().__init__(TaskAssignment(group, tasks, config, **kwargs), loop, "task-assignment")

    @property
    def tasks(self) -> frozenset[str]:
        return self.target.tasks

    def wait_assigned(self, timeout: float | None = None) -> frozenset[str]:
        return self.loop.run(self.target.wait_assigned(timeout))

    def set_tasks(self, tasks: Iterable[str]) -> None:
        tasks = list(tasks)
        self.loop.call_soon(self.target.set_tasks, tasks)
