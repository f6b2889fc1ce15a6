"""The streams group APIs on the wire (KIP-1071): StreamsGroupHeartbeat v0-v1,
StreamsGroupDescribe v0-v1 and StreamsGroupTopologyDescriptionUpdate v0.

Each reads its kio request, routes to the shard that coordinates the group, and builds the
response; a GroupError from the core becomes the API's error response here. After a
heartbeat the core may name internal topics the topology needs (repartition and changelog
topics): the broker creates them here, as Kafka's KafkaApis does through its auto topic
creation, with the partition counts the coordinator decided and the configs the
application gave (a changelog's cleanup.policy=compact). Topics the principal may not
CREATE (on the cluster or the topic) are named in the MISSING_INTERNAL_TOPICS status
instead ("; Unauthorized to CREATE on topics t."), failures likewise ("; Creation failed:
..."). The new topics change the broker's topics, which moves the group epoch: the members'
next heartbeats get their tasks.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any, Awaitable, Callable

from kgroup.broker.groups.group_api import NO_THROTTLE, GroupApi, field_class, group_operations
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.streams_messages import (
    DescribedStreamsGroup,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    TopologyDescriptionUpdate,
)
from kgroup.core.streams_topology import InternalTopic, TopologyStatus, topology_from
from kgroup.wire import RequestHeader, request_class, response_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, duration, get, item, kio_error, ms

log = logging.getLogger("kgroup.broker")

STREAMS_HEARTBEAT, STREAMS_DESCRIBE = ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE
STREAMS_TOPOLOGY_DESCRIPTION_UPDATE, CREATE_TOPICS = ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, ApiKey.CREATE_TOPICS


# Which internal topics the principal of the request being served may create: set by the
# ACL guard (streams/guards.py) right before the handler runs, read and cleared by the
# handler before its first await (the coordinator decides which topics are missing only
# later, and the guard must admit the request unchanged). Unset without an authorizer.
MAY_CREATE: ContextVar[Callable[[str], bool] | None] = ContextVar("kgroup_streams_may_create", default=None)


def refused_lag(version: int) -> int:
    """The acceptable recovery lag of an error answer: the field's default in Kafka's schema,
    0 for v0's int32 (no default given), -1 for v1's int64 ("not supported")."""
    return 0 if version == 0 else -1


def _tasks(ids: Any) -> tuple[tuple[str, int], ...] | None:
    if ids is None:
        return None
    return tuple(sorted((t.subtopology_id, int(p)) for t in ids for p in t.partitions))


def _offsets(entries: Any) -> tuple[tuple[str, int, int], ...] | None:
    if entries is None:
        return None
    return tuple((e.subtopology_id, int(e.partition), int(e.offset)) for e in entries)


def _by_subtopology(cls: type, tasks: tuple[tuple[str, int], ...] | None) -> tuple | None:
    if tasks is None:
        return None
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return tuple(build(cls, subtopology_id=s, partitions=tuple(sorted(ps))) for s, ps in sorted(out.items()))


def streams_heartbeat_answer(cls: type, version: int, error: int, message: str | None, member_id: str,
                             epoch: int, interval_ms: int, offsets_interval_ms: int, lag: int, status: tuple,
                             active: tuple | None, standby: tuple | None, warmup: tuple | None,
                             endpoint_epoch: int, endpoints: tuple | None) -> Any:
    """A StreamsGroupHeartbeat answer made directly (`build` by name was a sixth of a steady
    heartbeat's CPU). v0's recovery lag is an int32 (its AcceptableRecoveryLagLegacy); v1
    adds TopologyDescriptionRequired. tests/unit/broker/test_streams_heartbeat_answer.py
    checks it equals `build`'s."""
    fields = dict(throttle_time=NO_THROTTLE, error_code=kio_error(int(error)), error_message=message,
                  member_id=member_id, member_epoch=epoch, heartbeat_interval=duration(interval_ms),
                  task_offset_interval=duration(offsets_interval_ms),
                  acceptable_recovery_lag=lag if version >= 1 else min(lag, 2 ** 31 - 1), status=status,
                  active_tasks=active, standby_tasks=standby, warmup_tasks=warmup,
                  endpoint_information_epoch=endpoint_epoch, partitions_by_user_endpoint=endpoints)
    if version >= 1:
        fields["topology_description_required"] = False
    return cls(**fields)


class StreamsGroupApi:
    def __init__(self, groups: GroupApi,
                 create_topics: Callable[[RequestHeader, Any], Awaitable[Any]] | None = None) -> None:
        self.groups = groups
        self.create_topics = create_topics

    # ---- StreamsGroupHeartbeat -------------------------------------------------------------

    async def heartbeat(self, header: RequestHeader, req: Any, client_host: str = "") -> Any:
        may_create = MAY_CREATE.get() or _anyone
        MAY_CREATE.set(None)
        cls = response_class(STREAMS_HEARTBEAT, header.api_version)
        try:
            core_req = self._request(header, req, client_host)
            shard = self.groups.shard_of(core_req.group_id)
            resp: StreamsGroupHeartbeatResponse = await shard.call(shard.coordinator.streams_group_heartbeat,
                                                                   core_req)
        except GroupError as exc:
            return build(cls, throttle_time=0, error_code=exc.code, error_message=exc.message or None,
                         member_id="", member_epoch=0, heartbeat_interval=0, task_offset_interval=0,
                         acceptable_recovery_lag=refused_lag(header.api_version), status=(),
                         endpoint_information_epoch=0)
        status = list(resp.status)
        if resp.to_create:
            detail = await self._create_internal(header, resp.to_create, may_create)
            status = [(code, text + detail) if code == TopologyStatus.MISSING_INTERNAL_TOPICS else (code, text)
                      for code, text in status]
        return self._response(cls, header.api_version, resp, tuple(status))

    def _request(self, header: RequestHeader, req: Any, client_host: str) -> StreamsGroupHeartbeatRequest:
        endpoint = None if req.user_endpoint is None else (req.user_endpoint.host, int(req.user_endpoint.port))
        return StreamsGroupHeartbeatRequest(
            group_id=req.group_id, member_id=req.member_id, member_epoch=req.member_epoch,
            endpoint_information_epoch=req.endpoint_information_epoch, instance_id=req.instance_id,
            rack_id=req.rack_id, rebalance_timeout_ms=ms(req.rebalance_timeout),
            topology=None if req.topology is None else topology_from(req.topology),
            active_tasks=_tasks(req.active_tasks), standby_tasks=_tasks(req.standby_tasks),
            warmup_tasks=_tasks(req.warmup_tasks), process_id=req.process_id, user_endpoint=endpoint,
            client_tags=None if req.client_tags is None else tuple((kv.key, kv.value) for kv in req.client_tags),
            task_offsets=_offsets(req.task_offsets), task_end_offsets=_offsets(req.task_end_offsets),
            shutdown_application=bool(req.shutdown_application), client_id=header.client_id or "",
            client_host=client_host, api_version=header.api_version)

    def _response(self, cls: type, version: int, resp: StreamsGroupHeartbeatResponse,
                  status: tuple[tuple[int, str], ...]) -> Any:
        status_cls = item(cls, "status")
        tasks_cls = item(cls, "active_tasks")
        endpoints = None
        if resp.partitions_by_user_endpoint is not None:
            e_cls = item(cls, "partitions_by_user_endpoint")
            ep_cls = field_class(e_cls, "user_endpoint")
            tp_cls = item(e_cls, "active_partitions")
            endpoints = tuple(build(
                e_cls, user_endpoint=build(ep_cls, host=e.host, port=e.port),
                active_partitions=tuple(build(tp_cls, topic=t, partitions=ps) for t, ps in e.active),
                standby_partitions=tuple(build(tp_cls, topic=t, partitions=ps) for t, ps in e.standby))
                for e in resp.partitions_by_user_endpoint)
        return streams_heartbeat_answer(
            cls, version, resp.error_code, resp.error_message, resp.member_id, resp.member_epoch,
            resp.heartbeat_interval_ms, resp.task_offset_interval_ms, resp.acceptable_recovery_lag,
            tuple(build(status_cls, status_code=code, status_detail=text) for code, text in status),
            _by_subtopology(tasks_cls, resp.active_tasks), _by_subtopology(tasks_cls, resp.standby_tasks),
            _by_subtopology(tasks_cls, resp.warmup_tasks), resp.endpoint_information_epoch, endpoints)

    async def _create_internal(self, header: RequestHeader, topics: tuple[InternalTopic, ...],
                               may_create: Callable[[str], bool]) -> str:
        """Create the internal topics the principal may create; what to add to the status."""
        allowed = [t for t in topics if may_create(t.name)]
        refused = [t.name for t in topics if not may_create(t.name)]
        detail = f"; Unauthorized to CREATE on topics {','.join(refused)}." if refused else ""
        if not allowed or self.create_topics is None:
            return detail
        version = 7
        req_cls = request_class(CREATE_TOPICS, version)
        topic_cls = item(req_cls, "topics")
        config_cls = item(topic_cls, "configs")
        request = build(req_cls, timeout=30_000, validate_only=False, topics=tuple(build(
            topic_cls, name=t.name, num_partitions=t.partitions,
            replication_factor=t.replication_factor if t.replication_factor > 0 else -1, assignments=(),
            configs=tuple(build(config_cls, name=k, value=v) for k, v in t.configs)) for t in allowed))
        create_header = RequestHeader(api_key=CREATE_TOPICS, api_version=version, correlation_id=0,
                                      client_id=header.client_id, flexible=True)
        try:
            answer = await self.create_topics(create_header, request)
        except Exception as exc:  # noqa: BLE001 - reported in the status, never to the client as a crash
            log.warning("creating internal topics %s failed: %s", [t.name for t in allowed], exc)
            return detail + f"; Creation failed: {exc}."
        failed = [(r.name, r.error_message or ErrorCode(int(r.error_code)).name) for r in answer.topics
                  if int(r.error_code) not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS)]
        if failed:
            shown = ", ".join(f"{name} ({why})" for name, why in failed[:3])
            more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
            detail += f"; Creation failed: {shown}{more}."
        return detail

    # ---- StreamsGroupDescribe ---------------------------------------------------------------

    async def describe(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(STREAMS_DESCRIBE, header.api_version)
        group_cls = item(cls, "groups")
        described = await self.groups.describe_each(
            req.group_ids, "streams_group_describe",
            lambda group_id, exc: DescribedStreamsGroup(group_id, exc.code, exc.message or None))
        return build(cls, throttle_time=0, groups=tuple(self._described(group_cls, req, d) for _, d in described))

    def _described(self, group_cls: type, req: Any, d: DescribedStreamsGroup) -> Any:
        member_cls = item(group_cls, "members")
        asg_cls = field_class(member_cls, "assignment")
        tasks_cls = item(asg_cls, "active_tasks")
        ep_cls = field_class(member_cls, "user_endpoint")
        kv_cls = item(member_cls, "client_tags")
        off_cls = item(member_cls, "task_offsets")
        topology = None
        if d.subtopologies is not None:
            topo_cls = field_class(group_cls, "topology")
            sub_cls = item(topo_cls, "subtopologies")
            info_cls = item(sub_cls, "state_changelog_topics")
            tkv_cls = item(info_cls, "topic_configs")

            def info(t):
                return build(info_cls, name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                             topic_configs=tuple(build(tkv_cls, key=k, value=v) for k, v in t.configs))

            topology = build(topo_cls, epoch=d.topology_epoch, subtopologies=tuple(build(
                sub_cls, subtopology_id=s.subtopology_id, source_topics=s.source_topics,
                repartition_sink_topics=s.repartition_sink_topics,
                state_changelog_topics=tuple(info(t) for t in s.state_changelog_topics),
                repartition_source_topics=tuple(info(t) for t in s.repartition_source_topics))
                for s in d.subtopologies))

        def assignment(active, standby, warmup):
            return build(asg_cls, active_tasks=_by_subtopology(tasks_cls, active),
                         standby_tasks=_by_subtopology(tasks_cls, standby),
                         warmup_tasks=_by_subtopology(tasks_cls, warmup))

        members = tuple(build(
            member_cls, member_id=x.member_id, member_epoch=x.member_epoch, instance_id=x.instance_id,
            rack_id=x.rack_id, client_id=x.client_id, client_host=x.client_host, topology_epoch=x.topology_epoch,
            process_id=x.process_id,
            user_endpoint=None if x.user_endpoint is None else build(ep_cls, host=x.user_endpoint[0],
                                                                      port=x.user_endpoint[1]),
            client_tags=tuple(build(kv_cls, key=k, value=v) for k, v in x.client_tags),
            task_offsets=tuple(build(off_cls, subtopology_id=s, partition=p, offset=o) for s, p, o in x.task_offsets),
            task_end_offsets=tuple(build(off_cls, subtopology_id=s, partition=p, offset=o)
                                   for s, p, o in x.task_end_offsets),
            assignment=assignment(x.active, x.standby, x.warmup),
            target_assignment=assignment(x.target_active, x.target_standby, x.target_warmup),
            is_classic=False) for x in d.members)
        return build(group_cls, error_code=d.error_code, error_message=d.error_message, group_id=d.group_id,
                     group_state=d.state, group_epoch=d.epoch, assignment_epoch=d.target_epoch, topology=topology,
                     members=members, authorized_operations=group_operations(req, d.error_code),
                     topology_description=None,
                     topology_description_status=1 if get(req, "include_topology_description", False) else 0,
                     assignor_name=d.assignor_name)

    # ---- StreamsGroupTopologyDescriptionUpdate ---------------------------------------------------

    async def topology_description_update(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(STREAMS_TOPOLOGY_DESCRIPTION_UPDATE, header.api_version)
        core_req = TopologyDescriptionUpdate(req.group_id, req.member_id, req.topology_epoch)
        shard = self.groups.shard_of(core_req.group_id)
        try:
            await shard.call(shard.coordinator.streams_topology_description_update, core_req)
        except GroupError as exc:
            return build(cls, throttle_time=0, error_code=exc.code, error_message=exc.message or None)
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None)


def _anyone(topic: str) -> bool:
    return True
