"""Guards of the streams group APIs, KIP-1071 (see acl_rules.py for the table), as Kafka
4.4's KafkaApis checks them:

- StreamsGroupHeartbeat: READ on the group (else GROUP_AUTHORIZATION_FAILED); a topology
  sent on join needs DESCRIBE on every topic it names (else TOPIC_AUTHORIZATION_FAILED);
  the internal topics the coordinator finds missing are created only where the principal
  may CREATE on the cluster or on the topic (the handler names the others in the status,
  streams_group_api.py), so the guard hands the handler that predicate.
- StreamsGroupDescribe: DESCRIBE on the group; a group whose topology names topics the
  principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED, not shown in part.
- StreamsGroupTopologyDescriptionUpdate: READ on the group.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorized_operations import NOT_REQUESTED
from kgroup.broker.security.authorization import GROUP, TOPIC, Access, Admission, Refused, plain_refusal
from kgroup.broker.streams.streams_group_api import MAY_CREATE, refused_lag
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
_HEARTBEAT_REFUSAL = dict(error_message=None, member_id="", member_epoch=0, heartbeat_interval=0,
                          task_offset_interval=0, status=(),
                          endpoint_information_epoch=0)


def _topology_topics(topology: Any) -> set[str]:
    names: set[str] = set()
    for s in topology.subtopologies:
        names.update(s.source_topics)
        names.update(s.repartition_sink_topics)
        names.update(t.name for t in s.repartition_source_topics)
        names.update(t.name for t in s.state_changelog_topics)
    return names


def streams_group_heartbeat(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return plain_refusal(header, E.GROUP_AUTHORIZATION_FAILED, **_HEARTBEAT_REFUSAL,
                             acceptable_recovery_lag=refused_lag(header.api_version))
    if request.topology is not None:
        if not all(access.allowed(Op.DESCRIBE, TOPIC, t) for t in sorted(_topology_topics(request.topology))):
            return plain_refusal(header, E.TOPIC_AUTHORIZATION_FAILED, **_HEARTBEAT_REFUSAL,
                                 acceptable_recovery_lag=refused_lag(header.api_version))
    may_create_any = access.cluster(Op.CREATE)

    def may_create(topic: str) -> bool:
        return may_create_any or access.allowed(Op.CREATE, TOPIC, topic)

    MAY_CREATE.set(may_create)
    return Admission(request)


def streams_group_describe(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    allowed = [g for g in request.group_ids if access.allowed(Op.DESCRIBE, GROUP, g)]
    refused = [g for g in request.group_ids if g not in allowed]

    def finish(response: Any) -> Any:
        out = []
        for g in response.groups:
            topology = g.topology
            names = _topology_topics(topology) if topology is not None and topology.subtopologies else set()
            if g.error_code == E.NONE and not all(access.allowed(Op.DESCRIBE, TOPIC, n) for n in names):
                g = replaced(g, error_code=E.TOPIC_AUTHORIZATION_FAILED,
                             error_message="The described group uses topics that the client is not authorized "
                                           "to describe.", members=(), topology=None,
                             authorized_operations=NOT_REQUESTED)
            elif g.error_code == E.NONE and get(request, "include_authorized_operations", False):
                g = replaced(g, authorized_operations=access.operations(GROUP, g.group_id))
            out.append(g)
        # Groups the principal may not describe, in the order asked (Kafka answers them too).
        group_cls = type(response.groups[0]) if response.groups else None
        for name in refused:
            if group_cls is None:
                break
            out.append(replaced(response.groups[0], group_id=name, error_code=E.GROUP_AUTHORIZATION_FAILED,
                                error_message=None, group_state="", group_epoch=0, assignment_epoch=0,
                                topology=None, members=(), authorized_operations=NOT_REQUESTED))
        return replaced(response, groups=tuple(out))

    if not allowed:
        return plain_refusal_groups(header, refused)
    return Admission(replaced(request, group_ids=tuple(allowed)), finish)


def plain_refusal_groups(header: RequestHeader, refused: list[str]) -> Refused:
    cls = response_class(header.api_key, header.api_version)
    group_cls = item(cls, "groups")
    return Refused(build(cls, throttle_time=0, groups=tuple(build(
        group_cls, error_code=E.GROUP_AUTHORIZATION_FAILED, error_message=None, group_id=g, group_state="",
        group_epoch=0, assignment_epoch=0, topology=None, members=(), authorized_operations=NOT_REQUESTED)
        for g in refused)))


def streams_group_topology_description_update(access: Access, header: RequestHeader,
                                              request: Any) -> Refused | Admission:
    if not access.allowed(Op.READ, GROUP, request.group_id):
        return plain_refusal(header, E.GROUP_AUTHORIZATION_FAILED, error_message=None)
    return Admission(request)
