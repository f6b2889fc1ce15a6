"""Membership of a group of any protocol type: the elected leader assigns, every member is told.

The group protocol is not only for consumers: Kafka Connect spreads tasks over workers with
it, Schema Registry elects a leader. The coordinator sees a protocol type, each member's
opaque metadata and the opaque assignments the leader hands back. ``Membership`` is that
for Python: join with a ``protocol_type`` and (protocol name, metadata bytes) pairs; when
this member is the group's leader, ``assign(members)`` decides what every member gets; each
member's ``on_assigned(assignment, generation)`` runs with its bytes, ``on_revoked()`` when
it must give them up (a rebalance starts, or it leaves) and ``on_lost()`` when they may
already be someone else's (it was fenced, or could not reach the coordinator for nearly a
session). ``LeaderElection`` and ``TaskAssignment`` are built on it.

How this works: a ``ClassicGroupDriver`` task drives the pure ``ClassicMemberMachine`` (the
same one our consumer uses) with ``protocol_type`` set; its actions come back here:
``RunAssign`` runs ``assign`` and answers ``AssignmentsComputed``; ``RunOpaqueAssigned``,
``RunOpaqueRevoked`` and ``RunOpaqueLost`` run the callbacks, in order, in that task (the
member heartbeats only between them: keep them short). A callback may be a function or a
coroutine function; one that raises is logged and the
member carries on (``assign`` raising is fatal: the member leaves and ``wait_assigned``
raises). ``rebalance="eager"`` (the default) calls ``on_revoked`` at the start of every
rebalance, before the member rejoins; ``"cooperative"`` keeps the assignment through it and
hands over the next one, for the application to compare. The member gives up what it
holds, as lost, once the coordinator has not answered it for the session timeout less a
heartbeat interval, so before the coordinator could hand it to another member.

Settings use Kafka's names (``settings.MEMBERSHIP_DEFAULTS``): ``bootstrap.servers``,
``group.id``, ``group.instance.id`` (static membership: a restart within the session
timeout gets its assignment back without a rebalance; a static member does not leave on
close, as in Kafka), ``session.timeout.ms``, ``heartbeat.interval.ms``,
``rebalance.timeout.ms``, ``retry.backoff.ms``, ``request.timeout.ms``, ``client.id``::

    async with Membership({"group.id": "workers"}, protocol_type="jobs",
                          protocols=[("v1", b"")], assign=assign,
                          on_assigned=started, on_revoked=stopped) as member:
        await member.wait_assigned()
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kgroup.assignors import COOPERATIVE, EAGER
from kgroup.member import (
    AssignmentsComputed,
    Failed,
    Fatal,
    MemberConfig,
    Rejoin,
    RunAssign,
    RunOpaqueAssigned,
    RunOpaqueLost,
    RunOpaqueRevoked,
    SetProtocols,
)
from kgroup.member.config import MetadataFor

from .classic_driver import ClassicGroupDriver
from .cluster import Backoff, ClusterClient
from .errors import BrokerError, KafkaClientError
from .group_driver import now_ms
from .lifecycle import AsyncClient
from .settings import MEMBERSHIP_DEFAULTS, resolve

__all__ = ["GroupMember", "Membership"]

log = logging.getLogger("kgroup.client.membership")

_MAX_BACKOFF_MS = 1_000


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A member of the group as the leader's ``assign`` sees it: ``metadata`` is what it
    sent for the protocol the group chose (``Membership.protocol``)."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


Assign = Callable[[list[GroupMember]], "Mapping[str, bytes] | Awaitable[Mapping[str, bytes]]"]


class Membership(AsyncClient):
    """One member of a group of any protocol type; see the module comment."""

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        /,
        *,
        protocol_type: str,
        protocols: Iterable[tuple[str, bytes]] = (("default", b""),),
        assign: Assign | None = None,
        on_assigned: Callable[[bytes, int], Any] | None = None,
        on_revoked: Callable[[], Any] | None = None,
        on_lost: Callable[[], Any] | None = None,
        rebalance: str = EAGER,
        metadata_for: MetadataFor | None = None,
        **settings: Any,
    ) -> None:
        self.settings = resolve(MEMBERSHIP_DEFAULTS, config, settings)
        s = self.settings
        if not s["group.id"]:
            raise ValueError("a Membership needs group.id")
        if not protocol_type:
            raise ValueError("protocol_type must not be empty")
        if rebalance not in (EAGER, COOPERATIVE):
            raise ValueError("rebalance must be 'eager' or 'cooperative'")
        self.protocol_type = protocol_type
        self._protocols = _checked_protocols(protocols)
        self._assign = assign
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._on_lost = on_lost
        self.config = MemberConfig(
            group_id=str(s["group.id"]), group_instance_id=s["group.instance.id"],
            session_timeout_ms=int(s["session.timeout.ms"]),
            heartbeat_interval_ms=int(s["heartbeat.interval.ms"]),
            max_poll_interval_ms=int(s["rebalance.timeout.ms"]),
            assignors=(), auto_commit=False, retry_backoff_ms=int(s["retry.backoff.ms"]),
            protocol_type=protocol_type, rebalance=rebalance, lose_before_expiry=True,
            metadata_for=metadata_for)
        self.cluster = ClusterClient(s["bootstrap.servers"], client_id=s["client.id"],
                               timeout=s["request.timeout.ms"] / 1000,
                               backoff=Backoff(int(s["retry.backoff.ms"]), _MAX_BACKOFF_MS))
        self.driver: ClassicGroupDriver | None = None
        self.assignment: bytes | None = None
        self.generation = -1
        self.fatal: Fatal | None = None
        self.failed: Failed | None = None
        self._changed: asyncio.Condition | None = None
        self._started = False
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and join the group (in the background: see ``wait_assigned``)."""
        if self._started:
            return
        self._started = True
        self._changed = asyncio.Condition()
        await self.cluster.connect()
        s = self.settings
        self.driver = ClassicGroupDriver(self.cluster, self.config, on_action=self._on_action,
                                         retry_backoff_ms=int(s["retry.backoff.ms"]),
                                         request_timeout_ms=int(s["request.timeout.ms"]))
        self.driver.start()
        self.driver.post(SetProtocols(self._protocols, now_ms()))

    async def close(self) -> None:
        """Give up the assignment (``on_revoked``), leave the group (unless static), disconnect."""
        if self._closed:
            return
        self._closed = True
        if self.driver is not None:
            await self.driver.stop()
            try:
                await self.driver.close_member(now_ms())
            except KafkaClientError:
                pass
        await self.cluster.close()
        await self._notify()

    # -- what the member knows ----------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.driver.member.member_id if self.driver is not None else ""

    @property
    def leader(self) -> str:
        """The member id of the group's leader (the member that assigns) this generation."""
        return self.driver.member.leader if self.driver is not None else ""

    @property
    def is_leader(self) -> bool:
        """Whether this member is the group's leader (it runs ``assign``)."""
        return self.driver is not None and self.driver.member.is_leader

    @property
    def protocol(self) -> str | None:
        """The protocol the group chose this generation (each member's first one that all
        support, by vote)."""
        return self.driver.member.protocol if self.driver is not None else None

    # -- changing what the member offers ------------------------------------------------------

    def set_metadata(self, protocols: Iterable[tuple[str, bytes]], *, rejoin: bool = True) -> None:
        """Offer these protocols from the next JoinGroup on; ``rejoin`` starts a rebalance so
        the leader sees them now."""
        self._protocols = _checked_protocols(protocols)
        self._post(SetProtocols(self._protocols, now_ms()))
        if rejoin:
            self.rejoin("the member's metadata changed")

    def rejoin(self, reason: str = "the application asked for a rebalance") -> None:
        """Start a rebalance (after the one under way, if there is one)."""
        self._post(Rejoin(reason, now_ms()))

    def _post(self, event: Any) -> None:
        if self.driver is None:
            raise KafkaClientError("the membership is not started", "await membership.start()")
        self.driver.post(event)

    async def wait_assigned(self, timeout: float | None = None) -> bytes:
        """The assignment, once the member holds one (waits up to ``timeout`` seconds)."""
        got = await self.wait_for(lambda: self.assignment is not None, timeout)
        assert got is not None
        return got

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> Any:
        """Wait until ``predicate()`` holds, re-checked after every callback; returns
        ``self.assignment``. Raises the member's fatal error, or TimeoutError."""
        if self._changed is None:
            raise KafkaClientError("the membership is not started", "await membership.start()")
        async with asyncio.timeout(timeout):
            async with self._changed:
                while True:
                    self._check()
                    if predicate():
                        return self.assignment
                    await self._changed.wait()

    def _check(self) -> None:
        if self.fatal is not None:
            raise BrokerError(self.fatal.error, f"group {self.config.group_id!r}",
                              self.fatal.message)
        if self.failed is not None:
            failed, self.failed = self.failed, None
            raise BrokerError(failed.error, f"group {self.config.group_id!r}", failed.message)
        if self._closed:
            raise KafkaClientError("the membership is closed")

    async def _notify(self) -> None:
        if self._changed is not None:
            async with self._changed:
                self._changed.notify_all()

    # -- the member's actions -----------------------------------------------------------------

    async def _on_action(self, action: Any) -> None:
        if isinstance(action, RunAssign):
            await self._run_assign(action)
        elif isinstance(action, RunOpaqueAssigned):
            self.assignment = action.assignment
            self.generation = action.generation
            await run_callback("on_assigned", self._on_assigned, action.assignment,
                               action.generation)
        elif isinstance(action, RunOpaqueRevoked):
            self.assignment = None
            await run_callback("on_revoked", self._on_revoked)
        elif isinstance(action, RunOpaqueLost):
            self.assignment = None
            await run_callback("on_lost", self._on_lost or self._on_revoked)
        elif isinstance(action, Failed):
            self.failed = action            # raised from the next wait only; the member rejoins
            log.warning("group %r: %s (%s)", self.config.group_id, action.message, action.error.name)
        elif isinstance(action, Fatal):
            self.fatal = action
            log.error("group %r: %s (%s)", self.config.group_id, action.message, action.error.name)
        await self._notify()

    async def _run_assign(self, action: RunAssign) -> None:
        members = [GroupMember(m.member_id, m.group_instance_id, m.metadata)
                   for m in action.members]
        known = {m.member_id for m in members}
        error = None
        assignments: tuple[tuple[str, bytes], ...] = ()
        try:
            if self._assign is None:
                result: Any = {m: b"" for m in sorted(known)}
            else:
                result = self._assign(members)
                if inspect.isawaitable(result):
                    result = await result
            assignments = tuple((str(m), bytes(result[m])) for m in sorted(result)
                                if m in known)
        except Exception as exc:
            log.exception("group %r: assign failed", self.config.group_id)
            error = f"{type(exc).__name__}: {exc}"
        assert self.driver is not None
        self.driver.post(AssignmentsComputed(action.request_id, assignments, now_ms(), error))


class MembershipHelper(AsyncClient):
    """What ``LeaderElection`` and ``TaskAssignment`` share: a ``membership`` to start and
    close (``async with`` too)."""

    membership: Membership

    async def start(self) -> None:
        await self.membership.start()

    async def close(self) -> None:
        """Give up what this member holds (its callbacks run) and leave the group."""
        await self.membership.close()

    @property
    def generation(self) -> int:
        return self.membership.generation


def _checked_protocols(protocols: Iterable[tuple[str, bytes]]) -> tuple[tuple[str, bytes], ...]:
    out = tuple((str(name), bytes(meta)) for name, meta in protocols)
    if not out:
        raise ValueError("offer at least one (protocol name, metadata bytes) pair")
    return out


async def run_callback(name: str, callback: Callable[..., Any] | None, *args: Any) -> None:
    """Run a user callback (function or coroutine); log what it raises and carry on."""
    if callback is None:
        return
    try:
        result = callback(*args)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("%s raised", name)

