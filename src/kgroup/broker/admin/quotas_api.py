"""DescribeClientQuotas and AlterClientQuotas (KIP-546), v0-v1: the quotas of users, client
ids and ips as `kafka-client-quotas`, `kafka-configs --entity-type users|clients|ips` and
Admin.describeClientQuotas/alterClientQuotas see and change them (admin/client_quotas.py
keeps them; core/quotas.py has Kafka's checks)."""

from __future__ import annotations

from typing import Any

from kgroup.broker.admin.client_quotas import ClientQuotas
from kgroup.core.quotas import QuotaRefused, describe_filter, kafka_answer_order, kafka_entity_order
from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.wire import RequestHeader
from kgroup.wire.codec import response_class
from kgroup.wire.kio_build import build, item


class QuotasApi:
    def __init__(self, quotas: ClientQuotas) -> None:
        self.quotas = quotas

    async def describe_client_quotas(self, header: RequestHeader, req: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        try:
            f = describe_filter(((c.entity_type, int(c.match_type), c.match) for c in req.components),
                                bool(req.strict))
        except QuotaRefused as refused:
            return build(cls, error_code=refused.code, error_message=str(refused), entries=None)
        entry_cls = item(cls, "entries")
        entity_cls, value_cls = item(entry_cls, "entity"), item(entry_cls, "values")
        # (Kafka answers a successful describe with an empty message, not a null one.)
        return build(cls, error_code=ErrorCode.NONE, error_message="", entries=tuple(
            build(entry_cls, entity=tuple(build(entity_cls, entity_type=entity[i][0], entity_name=entity[i][1])
                                          for i in kafka_entity_order(list(entity))),
                  values=tuple(build(value_cls, key=k, value=v) for k, v in sorted(values.items())))
            for entity, values in self.quotas.describe(f)))

    async def alter_client_quotas(self, header: RequestHeader, req: Any) -> Any:
        entries = [(tuple((e.entity_type, e.entity_name) for e in entry.entity),
                    tuple((op.key, float(op.value), bool(op.remove)) for op in entry.ops)) for entry in req.entries]
        try:
            outcomes = self.quotas.alter(entries, bool(req.validate_only))
        except StorageError as exc:
            outcomes = [QuotaRefused(ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))] * len(entries)
        return quota_answer(header, [(list(dict((e.entity_type, e.entity_name) for e in entry.entity).items()), refused)
                                     for entry, refused in zip(req.entries, outcomes)])


def quota_answer(header: RequestHeader, outcomes: list[tuple[list[tuple[str, str | None]], QuotaRefused | None]]) -> Any:
    """An AlterClientQuotas answer: one entry per entity (Kafka's is a HashMap by entity: an
    entity named twice is answered once, with its last entry's outcome), in that map's order."""
    answers: dict[tuple, tuple[list[tuple[str, str | None]], QuotaRefused | None]] = {}
    for entity, refused in outcomes:
        answers[tuple(sorted((k, n or "") for k, n in entity))] = (entity, refused)
    answered = list(answers.values())
    cls = response_class(header.api_key, header.api_version)
    entry_cls = item(cls, "entries")
    entity_cls = item(entry_cls, "entity")
    return build(cls, entries=tuple(
        build(entry_cls, error_code=ErrorCode.NONE if refused is None else refused.code,
              error_message=None if refused is None else str(refused),
              entity=tuple(build(entity_cls, entity_type=entity[i][0], entity_name=entity[i][1])
                           for i in kafka_entity_order(entity)))
        for entity, refused in (answered[i] for i in kafka_answer_order([e for e, _ in answered]))))
