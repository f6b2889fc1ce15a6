"""Drives the pure classic member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup).

How this works: the ``GroupDriver`` loop (group_driver.py) owns a ``ClassicMemberMachine``;
this module sends the classic protocol's requests the member asks for. JoinGroup, SyncGroup
and Heartbeat run as their own tasks and post the answer back as a ``...Answered`` event
(or ``RequestFailed`` when the coordinator could not be reached); a leader that is to
assign first reads the partition counts of every member's topics (in a consumer group).
LeaveGroup is sent inline, so ``close`` has left when it returns.
"""

from __future__ import annotations

from typing import Any

from kgroup.assignors import decode_subscription
from kgroup.error_codes import ErrorCode
from kgroup.member import (
    ClassicMemberMachine,
    HeartbeatAnswered,
    JoinedMember,
    JoinGroupAnswered,
    MemberConfig,
    MetadataUpdated,
    RequestFailed,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncGroupAnswered,
)
from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import KafkaClientError
from .group_driver import GroupDriver, now_ms

_LEAVE_TIMEOUT_S = 5.0


class ClassicGroupDriver(GroupDriver):
    """A member of one classic group (a consumer's, or a ``Membership`` of any protocol
    type); see the module comment."""

    member: ClassicMemberMachine

    def _new_member(self, config: MemberConfig) -> ClassicMemberMachine:
        return ClassicMemberMachine(config, now_ms())

    def can_leave(self) -> bool:
        """A LeaveGroup on close only over a live connection to the coordinator."""
        return self.cluster.coordinator_connection(self.config.group_id) is not None

    async def _perform(self, action: Any) -> None:
        if isinstance(action, SendJoinGroup):
            self._spawn(self._join(action))
        elif isinstance(action, SendSyncGroup):
            self._spawn(self._sync(action))
        elif isinstance(action, SendHeartbeat):
            self._spawn(self._heartbeat(action))
        elif isinstance(action, SendLeaveGroup):
            await self._leave(action)
        else:
            await super()._perform(action)

    async def _join(self, a: SendJoinGroup) -> None:
        body = request_fields(
            group_id=a.group_id, session_timeout=a.session_timeout_ms,
            rebalance_timeout=a.rebalance_timeout_ms, member_id=a.member_id,
            group_instance_id=a.group_instance_id, protocol_type=a.protocol_type,
            protocols=[{"name": n, "metadata": m} for n, m in a.protocols],
            reason=a.reason or None)
        try:
            resp = await self._request(ApiKey.JOIN_GROUP, body,
                                       a.rebalance_timeout_ms / 1000 + self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        code = ErrorCode(int(resp.error_code))
        members = tuple(JoinedMember(m.member_id, getattr(m, "group_instance_id", None),
                                     bytes(m.metadata)) for m in resp.members)
        if (code is ErrorCode.NONE and resp.leader == resp.member_id and members
                and not self.member.opaque):
            await self._read_partition_counts(members)
        self.post(JoinGroupAnswered(
            a.request_id, code, now_ms(),
            int(resp.generation_id), getattr(resp, "protocol_name", None), resp.leader,
            resp.member_id, members, bool(getattr(resp, "skip_assignment", False))))

    async def _read_partition_counts(self, members: tuple[JoinedMember, ...]) -> None:
        """The leader assigns: it needs partition counts of every member's topics."""
        topics: set[str] = set()
        for m in members:
            try:
                topics.update(decode_subscription(m.metadata).topics)
            except ValueError:
                pass
        try:
            md = await self.cluster.metadata(sorted(topics))
        except KafkaClientError:
            return
        counts = tuple((t, len(info.partitions)) for t, info in sorted(md.topics.items())
                       if info.error is ErrorCode.NONE)
        self.post(MetadataUpdated(counts, now_ms()))

    async def _sync(self, a: SendSyncGroup) -> None:
        body = request_fields(
            group_id=a.group_id, generation_id=a.generation, member_id=a.member_id,
            group_instance_id=a.group_instance_id, protocol_type=a.protocol_type,
            protocol_name=a.protocol,
            assignments=[{"member_id": m, "assignment": b} for m, b in a.assignments])
        try:
            resp = await self._request(ApiKey.SYNC_GROUP, body, self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        self.post(SyncGroupAnswered(a.request_id, ErrorCode(int(resp.error_code)), now_ms(),
                                    bytes(resp.assignment or b"")))

    async def _heartbeat(self, a: SendHeartbeat) -> None:
        body = request_fields(group_id=a.group_id, generation_id=a.generation,
                              member_id=a.member_id, group_instance_id=a.group_instance_id)
        try:
            resp = await self._request(ApiKey.HEARTBEAT, body, self.request_timeout_s)
        except KafkaClientError:
            self.post(RequestFailed(a.request_id, now_ms()))
            return
        self.post(HeartbeatAnswered(a.request_id, ErrorCode(int(resp.error_code)), now_ms()))

    async def _leave(self, a: SendLeaveGroup) -> None:
        body = request_fields(group_id=a.group_id, member_id=a.member_id,
                              members=[{"member_id": a.member_id,
                                        "group_instance_id": a.group_instance_id,
                                        "reason": a.reason or None}])
        try:
            await self._request(ApiKey.LEAVE_GROUP, body, min(_LEAVE_TIMEOUT_S, self.request_timeout_s))
        except KafkaClientError:
            pass
