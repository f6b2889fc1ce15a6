"""Drives the pure consumer-protocol member (KIP-848) over real connections.

How this works: the ``GroupDriver`` loop (group_driver.py) owns a ``ConsumerMemberMachine``:
it waits for the next event or the member's next deadline (then a ``Tick``), hands the
event over and performs the returned actions in order. A ConsumerGroupHeartbeat runs as its
own task and posts its answer back as an event; a *leave* heartbeat (epoch -1 or -2) is
awaited inline, with a short timeout, so ``close`` has left the group when it returns.
Topic ids in assignments are named with Metadata v10+ (``RefreshTopicNames`` ->
``TopicNames``). Callbacks, auto-commits, coordinator discovery and version fallbacks are
the shared loop's.

The member id is generated here, once per consumer, as Kafka's clients do for
ConsumerGroupHeartbeat v1 (a random UUID in Kafka's url-safe base64 form); it is kept
across fencing and rejoins.
"""

from __future__ import annotations

import os
import uuid
from typing import Any

from kgroup.error_codes import ErrorCode
from kgroup.kafka_uuid import random_uuid_text
from kgroup.member import (
    ConsumerGroupHeartbeatAnswered,
    ConsumerMemberMachine,
    MemberConfig,
    RefreshTopicNames,
    RequestFailed,
    SendConsumerGroupHeartbeat,
    TopicNames,
)
from kgroup.wire.kio_build import ms
from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import KafkaClientError, UnsupportedApi
from .group_driver import GroupDriver, now_ms

_LEAVE_TIMEOUT_S = 5.0


def new_member_id() -> str:
    """A random member id as Kafka's clients make it (Uuid.randomUuid().toString())."""
    return random_uuid_text(os.urandom)


class ConsumerGroupDriver(GroupDriver):
    """The consumer's membership in one consumer-protocol group; see the module comment."""

    member: ConsumerMemberMachine

    def _new_member(self, config: MemberConfig) -> ConsumerMemberMachine:
        return ConsumerMemberMachine(config, new_member_id(), now_ms())

    async def _perform(self, action: Any) -> None:
        if isinstance(action, SendConsumerGroupHeartbeat):
            if action.is_leave:
                event = await self._send(action, min(_LEAVE_TIMEOUT_S, self.request_timeout_s))
                for follow in self.member.handle(event):
                    await self._perform(follow)
            else:
                self._spawn(self._heartbeat_task(action))
        elif isinstance(action, RefreshTopicNames):
            self._spawn(self._topic_names(action))
        else:
            await super()._perform(action)

    async def _heartbeat_task(self, a: SendConsumerGroupHeartbeat) -> None:
        self.post(await self._send(a, self.request_timeout_s))

    async def _send(self, a: SendConsumerGroupHeartbeat, timeout: float) -> Any:
        """Send one ConsumerGroupHeartbeat; its answer (or RequestFailed) as a member event."""
        owned = None if a.owned is None else [
            {"topic_id": uuid.UUID(t), "partitions": tuple(ps)} for t, ps in a.owned]

        body = request_fields(
            group_id=a.group_id, member_id=a.member_id, member_epoch=a.member_epoch,
            instance_id=a.instance_id, rack_id=None, rebalance_timeout=a.rebalance_timeout_ms,
            subscribed_topic_names=(None if a.subscribed_topic_names is None
                                    else list(a.subscribed_topic_names)),
            # v1: an empty regex ("no regex") goes with the topic names, as librdkafka sends
            # it (its mock cluster insists on it).
            subscribed_topic_regex=None if a.subscribed_topic_names is None else "",
            server_assignor=a.server_assignor,
            topic_partitions=owned)

        try:
            resp = await self._request(ApiKey.CONSUMER_GROUP_HEARTBEAT, body, timeout)
        except UnsupportedApi as exc:
            # A broker without KIP-848: nothing to retry (the member goes FATAL).
            return ConsumerGroupHeartbeatAnswered(a.request_id, ErrorCode.UNSUPPORTED_VERSION,
                                                  now_ms(), error_message=str(exc))
        except KafkaClientError:
            return RequestFailed(a.request_id, now_ms())
        assignment = None
        if resp.assignment is not None:
            assignment = tuple((str(tp.topic_id), tuple(int(p) for p in tp.partitions))
                               for tp in resp.assignment.topic_partitions)
        return ConsumerGroupHeartbeatAnswered(
            a.request_id, ErrorCode(int(resp.error_code)), now_ms(),
            resp.member_id or "", int(resp.member_epoch), ms(resp.heartbeat_interval),
            assignment, resp.error_message or "")

    async def _topic_names(self, a: RefreshTopicNames) -> None:
        try:
            md = await self.cluster.metadata(None)
        except KafkaClientError:
            return  # the member asks again
        names = tuple((str(info.topic_id), name) for name, info in sorted(md.topics.items())
                      if info.topic_id is not None)
        self.post(TopicNames(names, now_ms()))
