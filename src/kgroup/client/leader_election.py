"""Exactly one leader among the live members of a group ("one of my workers runs the scheduler").

How this works: a ``Membership`` of protocol type ``kgroup-leader`` (bytes in
``assignors.leader_protocol``). The group's leader elects itself and tells every member so
in its assignment; a member leads from ``on_elected`` until ``on_lost``. The membership is
eager: every member gives up what it was told at the start of every rebalance, before it
rejoins, and learns who leads the new generation only from that generation's SyncGroup, so
the coordinator cannot complete a generation while the old leader still thinks it leads:

- a leader that closes calls ``on_lost`` and leaves: the others elect a new one at once;
- a leader that dies is expired by the coordinator after its session timeout, then the
  others rebalance and one of them is elected;
- a leader that cannot reach the coordinator calls ``on_lost`` a heartbeat interval before
  its session could expire, so before anyone else can be elected.

``info`` (bytes) is what a member tells the others about itself should it lead (an address
to send work to): every member sees the leader's in ``leader``, and ``on_leader(election,
generation)`` runs in every member when it learns who leads (``None`` when a rebalance
starts and it no longer knows).

    async with LeaderElection("scheduler", {"bootstrap.servers": "127.0.0.1:9092"}) as election:
        await election.elected()
        ...                             # lead, until election.is_leader turns False
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from kgroup.assignors import EAGER
from kgroup.assignors.leader_protocol import (
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    Election,
    LeaderProtocolError,
    decode_election,
    elect,
    encode_candidate,
)

from .membership import GroupMember, Membership, MembershipHelper, run_callback

__all__ = ["LeaderElection"]

log = logging.getLogger("kgroup.client.leader_election")


class LeaderElection(MembershipHelper):
    """Leader election among the members of ``group``; see the module comment."""

    def __init__(self, group: str, config: Mapping[str, Any] | None = None, /, *,
                 info: bytes | None = None, on_elected: Callable[[], Any] | None = None,
                 on_lost: Callable[[], Any] | None = None,
                 on_leader: Callable[[Election | None, int], Any] | None = None,
                 **settings: Any) -> None:
        self._on_elected = on_elected
        self._on_lost = on_lost
        self._on_leader = on_leader
        self.is_leader = False
        self.leader: Election | None = None
        self.membership = Membership(
            {**(config or {}), "group.id": group}, protocol_type=PROTOCOL_TYPE,
            protocols=[(PROTOCOL_NAME, encode_candidate(info))], assign=self._assign,
            on_assigned=self._assigned, on_revoked=self._given_up, on_lost=self._given_up,
            rebalance=EAGER, **settings)

    async def elected(self, timeout: float | None = None) -> None:
        """Return once this member leads (TimeoutError after ``timeout`` seconds)."""
        await self.membership.wait_for(lambda: self.is_leader, timeout)

    async def wait_leader(self, timeout: float | None = None) -> Election:
        """Who leads the current generation, once known."""
        await self.membership.wait_for(lambda: self.leader is not None, timeout)
        assert self.leader is not None
        return self.leader

    # -- the membership's callbacks ------------------------------------------------------

    def _assign(self, members: list[GroupMember]) -> dict[str, bytes]:
        return elect(self.membership.member_id,
                     [(m.member_id, m.group_instance_id, m.metadata) for m in members])

    async def _assigned(self, assignment: bytes, generation: int) -> None:
        try:
            self.leader = decode_election(assignment)
        except LeaderProtocolError as exc:
            log.error("group %r: unreadable election in generation %d: %s",
                      self.membership.config.group_id, generation, exc)
            self.leader = None
        me = self.membership
        if self.leader is not None and self.leader.names(me.member_id,
                                                         me.config.group_instance_id):
            self.is_leader = True
            await run_callback("on_elected", self._on_elected)
        await run_callback("on_leader", self._on_leader, self.leader, generation)

    async def _given_up(self) -> None:
        known, self.leader = self.leader, None
        if self.is_leader:
            self.is_leader = False
            await run_callback("on_lost", self._on_lost)
        if known is not None:
            await run_callback("on_leader", self._on_leader, None, self.generation)
