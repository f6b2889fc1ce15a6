"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (admin/apis.py: the versions served).

Resources: TOPIC (2) — Kafka's topic config names (data/topic_configs.py), stored with the topic
in the data dir, falling back to the broker's settings; BROKER (4, name "" for the cluster
default or this broker's id) — the broker's settings, those Kafka lets change at run time
changed here (admin/dynamic_configs.py), the others described read-only; CLIENT_METRICS (16) — KIP-714
subscriptions (observe/client_metrics_configs.py, given by concerns.py); GROUP (32) — group-level configs
(core/group_configs.py), decided by the group's coordinator shard and kept in its
group-metadata log; a node that does not coordinate the group asks the one that does
(admin/group_forwarding.py), as any Kafka broker accepts them. Other resource types get
INVALID_REQUEST. Each resource is answered on its own: one bad resource never fails the
others.

AlterConfigs replaces the dynamic configs of a resource with the ones given;
IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT (APPEND and SUBTRACT only to
list configs). validate_only checks everything and changes nothing. Synonyms (v1+) list the
value in force first, then the broker setting it falls back to; documentation (v3+) is
given where the table has it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kgroup.broker.admin.dynamic_configs import ConfigRefused, DynamicBrokerConfigs
from kgroup.broker.admin.group_forwarding import Ask, GroupForwarding
from kgroup.broker.data import topic_configs
from kgroup.broker.data.context import DataContext, log
from kgroup.broker.data.topic_configs import TOPIC_CONFIGS, ConfigProblem, ConfigType
from kgroup.broker.groups.group_api import GroupApi
from kgroup.core.errors import GroupError
from kgroup.core.group_configs import AlterGroupConfigsRequest, ConfigOp
from kgroup.storage import StorageError
from kgroup.storage.errors import StorageConfigError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item
from kgroup.error_codes import ErrorCode

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
# Every resource type Kafka 4.4 knows (BROKER_LOGGER 8 is not served here: INVALID_REQUEST
# "Unsupported"); any other is one it cannot read.
KNOWN_TYPES = frozenset({TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP})
_INVALID_TEXT = ("This most likely occurs because of a request being malformed by the client library or the "
                 "message was sent to an incompatible broker. See the broker logs for more details.")
# DescribeConfigs config sources (Kafka's ConfigSource ids).
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


class ResourceError(Exception):
    """One resource of a request fails with this code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ConfigsApi:
    """The config APIs over the data dir (topics), the settings (broker) and the shards (groups)."""

    def __init__(self, ctx: DataContext, groups: GroupApi, dynamic: DynamicBrokerConfigs | None = None,
                 client_metrics: Any = None, ask_peer: Ask | None = None) -> None:
        self.ctx = ctx
        self.groups = groups
        # In a cluster: a GROUP resource another node coordinates is asked of that node.
        self.forwarding = GroupForwarding(groups, ask_peer, ResourceError)
        # KIP-714's subscriptions (observe/client_metrics_configs.py), given by concerns.py.
        self.client_metrics = client_metrics
        # The broker's dynamic configs; on its own (a test), applied to this context only.
        self.dynamic = dynamic if dynamic is not None else DynamicBrokerConfigs(
            ctx.config, ctx.data.path, on_change=self._applied)

    def _applied(self, dynamic: DynamicBrokerConfigs) -> None:
        self.ctx.config = dynamic.effective
        self.ctx.data.set_default_log_config(dynamic.log_config)

    # ---- DescribeConfigs --------------------------------------------------------------

    async def describe_configs(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        entry_cls = item(result_cls, "configs")
        synonym_cls = item(entry_cls, "synonyms")
        synonyms_on = bool(get(request, "include_synonyms", False))
        docs_on = bool(get(request, "include_documentation", False))

        def entry(name: str, value: str | None, source: int, read_only: bool, config_type: int,
                  chain: tuple[tuple[str, str | None, int], ...], doc: str | None, sensitive: bool = False) -> Any:
            return build(entry_cls, name=name, value=value, read_only=read_only, config_source=source,
                         is_sensitive=sensitive, config_type=config_type, documentation=doc if docs_on else None,
                         synonyms=tuple(build(synonym_cls, name=n, value=v, source=s) for n, v, s in chain)
                         if synonyms_on else ())

        results = []
        if any(int(r.resource_type) not in KNOWN_TYPES for r in request.resources):
            # Kafka cannot read a resource type it does not know: the whole request fails.
            return build(cls, throttle_time=0, results=tuple(
                build(result_cls, error_code=ErrorCode.INVALID_REQUEST, error_message=_INVALID_TEXT,
                      resource_type=int(r.resource_type), resource_name=r.resource_name, configs=())
                for r in request.resources))
        for resource in request.resources:
            rtype, name = int(resource.resource_type), resource.resource_name
            keys = set(resource.configuration_keys or ())
            try:
                if rtype == TOPIC:
                    entries = [entry(d.name, chain[0][1], chain[0][2], False, d.type, chain, d.doc)
                               for d in topic_configs.describe(self.dynamic.static, self._topic(name).configs)
                               for chain in (self._topic_chain(d),)]
                elif rtype == BROKER:
                    entries = [entry(d.name, d.value, d.source, d.read_only, d.type, d.synonyms, None, d.sensitive)
                               for d in self._broker_call(self.dynamic.describe, name)]
                elif rtype == GROUP and (forwarded := await self.forwarding.forwarded(
                        header, request, resource, "results")) is not None:
                    if int(forwarded.error_code):
                        raise ResourceError(int(forwarded.error_code), forwarded.error_message or "")
                    entries = list(forwarded.configs)
                elif rtype == GROUP:
                    entries = [entry(d.name, d.value, int(d.source), False, ConfigType[d.type_name],
                                     tuple((n, v, int(s)) for n, v, s in d.synonyms), d.doc)
                               for d in await self._group_call("describe_group_configs", name)]
                elif rtype == CLIENT_METRICS and self.client_metrics is not None:
                    entries = [entry(k, v, source, False, kind, ((k, v, source),) if source != DEFAULT_CONFIG else (), doc)
                               for k, v, source, kind, doc in self._metrics_call(self.client_metrics.describe, name)]
                else:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")
                if keys:
                    entries = [e for e in entries if e.name in keys]
                # Kafka leaves the message at its default, "" (not null).
                results.append(build(result_cls, error_code=ErrorCode.NONE, error_message="",
                                     resource_type=rtype, resource_name=name, configs=tuple(entries)))
            except ResourceError as exc:
                # An unknown topic is answered without a message too (ConfigHelper sets none).
                message = "" if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else exc.message
                results.append(build(result_cls, error_code=exc.code, error_message=message,
                                     resource_type=rtype, resource_name=name, configs=()))
        return build(cls, throttle_time=0, results=tuple(results))

    # ---- AlterConfigs / IncrementalAlterConfigs ---------------------------------------

    async def alter_configs(self, header: RequestHeader, request: Any) -> Any:
        return await self._alter(header, request, incremental=False)

    async def incremental_alter_configs(self, header: RequestHeader, request: Any) -> Any:
        return await self._alter(header, request, incremental=True)

    async def _alter(self, header: RequestHeader, request: Any, incremental: bool) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "responses")
        validate_only = bool(get(request, "validate_only", False))
        seen = Counter((int(r.resource_type), r.resource_name) for r in request.resources)
        results = []
        for resource in request.resources:
            rtype, name = int(resource.resource_type), resource.resource_name
            changes = tuple((c.name, int(get(c, "config_operation", ConfigOp.SET)), c.value)
                            for c in resource.configs)
            try:
                # 1. Checks that hold for every resource type.
                if seen[(rtype, name)] > 1:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"resource {name!r} appears more than once")
                dup = [n for n, k in Counter(c[0] for c in changes).items() if k > 1]
                if dup:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"Error due to duplicate config keys: {dup}")
                if rtype not in KNOWN_TYPES:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")
                # Kafka refuses an unknown operation and a value left null (a SET's, or any in
                # AlterConfigs) before it looks at the resource.
                bad_op = next((op for _, op, _ in changes if op not in tuple(ConfigOp)), None)
                if incremental and bad_op is not None:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"unknown config operation {bad_op}")
                nulls = [k for k, op, v in changes if v is None and (not incremental or op == ConfigOp.SET)]
                if nulls:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls))
                # 2. Per resource type.
                if rtype == TOPIC:
                    self._alter_topic(name, changes, incremental, validate_only)
                elif rtype == GROUP and (forwarded := await self.forwarding.forwarded(
                        header, request, resource, "responses")) is not None:
                    if int(forwarded.error_code):
                        raise ResourceError(int(forwarded.error_code), forwarded.error_message)
                elif rtype == GROUP:
                    await self._group_call("alter_group_configs", AlterGroupConfigsRequest(
                        name, changes, incremental, validate_only))
                elif rtype == BROKER:
                    self._broker_call(self.dynamic.alter, name, changes, incremental, validate_only)
                elif rtype == CLIENT_METRICS and self.client_metrics is not None:
                    self._metrics_call(self.client_metrics.alter, name, changes, incremental, validate_only)
                else:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {rtype}")
                code, message = ErrorCode.NONE, None
            except ResourceError as exc:
                code, message = exc.code, exc.message
            results.append(build(result_cls, error_code=code, error_message=message,
                                 resource_type=rtype, resource_name=name))
        return build(cls, throttle_time=0, responses=tuple(results))

    def _alter_topic(self, name: str, changes: tuple, incremental: bool, validate_only: bool) -> None:
        meta = self._topic(name)
        configs = dict(meta.configs) if incremental else {}
        try:
            for key, op, value in changes:
                d = TOPIC_CONFIGS.get(key)
                if d is None:
                    raise topic_configs.unknown_name(key)
                if op == ConfigOp.SET:
                    configs[key] = topic_configs.check_value(key, value)
                elif op == ConfigOp.DELETE:
                    configs.pop(key, None)
                elif op in (ConfigOp.APPEND, ConfigOp.SUBTRACT):
                    if d.type is not ConfigType.LIST:
                        raise ConfigProblem(f"Config value {ConfigOp(op).name.lower()} is not allowed for "
                                            f"config key: {key} (not a list)")
                    items = [i for i in configs.get(key, d.default(self.ctx.config)).split(",") if i]
                    given = [i for i in topic_configs.check_value(key, value).split(",") if i]
                    items = (items + [i for i in given if i not in items] if op == ConfigOp.APPEND
                             else [i for i in items if i not in given])
                    configs[key] = ",".join(items)
                else:
                    raise ResourceError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
        except ConfigProblem as exc:
            raise ResourceError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        if validate_only or configs == dict(meta.configs):
            return
        try:
            self.ctx.data.set_topic_configs(name, configs)
        except StorageConfigError as exc:
            raise ResourceError(ErrorCode.INVALID_CONFIG, str(exc)) from None
        except StorageError as exc:
            log.error("changing the configs of topic %r failed: %s", name, exc)
            raise ResourceError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None
        if "compact" in configs.get("cleanup.policy", ""):
            log.warning("topic %r: cleanup.policy=%s is kept but kgroup does not compact; "
                        "old records go by retention", name, configs["cleanup.policy"])
        log.info("topic %r configs now %s", name, configs)

    # ---- ListConfigResources (KIP-1142; v0 was ListClientMetricsResources) -----------

    async def list_config_resources(self, header: RequestHeader, request: Any) -> Any:
        """v0: the client-metrics subscriptions; v1: the resources of the types asked (none
        asked: every type Kafka lists), UNSUPPORTED_VERSION for a type it does not list."""
        cls = response_class(header.api_key, header.api_version)
        resource_cls = item(cls, "config_resources")
        listed = (TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP)
        asked = [int(t) for t in get(request, "resource_types", ())] if header.api_version >= 1 else [CLIENT_METRICS]
        if any(t not in listed for t in asked):
            return build(cls, throttle_time=0, error_code=ErrorCode.UNSUPPORTED_VERSION, config_resources=())
        wanted = set(asked or listed)
        found: list[tuple[str, int]] = []
        if CLIENT_METRICS in wanted and self.client_metrics is not None:
            found += [(name, CLIENT_METRICS) for name in self.client_metrics.names()]
        if BROKER_LOGGER in wanted:
            found.append((self.dynamic.node, BROKER_LOGGER))
        if BROKER in wanted:
            found += [(str(n), BROKER) for n in sorted(self.ctx.config.nodes)]
        if TOPIC in wanted:
            found += [(name, TOPIC) for name in sorted(self.ctx.data.topics())]
        if GROUP in wanted:
            here = [g for shard in self.groups.shards if shard is not None
                    for g in sorted(shard.coordinator.shard.stored.group_configs)]
            # In a cluster, the groups the other nodes coordinate too (each listed once).
            elsewhere = await self.forwarding.group_resources(header, GROUP)
            found += [(g, GROUP) for g in dict.fromkeys(here + elsewhere)]
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, config_resources=tuple(
            build(resource_cls, resource_name=name, resource_type=rtype) for name, rtype in found))

    def _metrics_call(self, method: Any, *args: Any) -> Any:
        try:
            return method(*args)
        except self.client_metrics.Error as exc:
            raise ResourceError(exc.code, exc.message) from None

    # ---- resources --------------------------------------------------------------------

    def _topic(self, name: str) -> Any:
        meta = self.ctx.data.topics().get(name)
        if meta is None:
            raise ResourceError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name!r} does not exist")
        return meta

    def _topic_chain(self, d: topic_configs.DescribedTopicConfig) -> tuple[tuple[str, str | None, int], ...]:
        """A topic config's synonyms: its own value, then the broker setting it falls back to
        with that setting's dynamic and static values (Kafka's order)."""
        chain: tuple[tuple[str, str | None, int], ...] = tuple(
            (n, v, DYNAMIC_TOPIC_CONFIG) for n, v, from_topic in d.synonyms if from_topic)
        for n, v, from_topic in d.synonyms:
            if not from_topic:
                chain += self.dynamic.chain_of(n, v)
        return chain or ((d.name, d.value, DEFAULT_CONFIG),)

    @staticmethod
    def _broker_call(method: Any, *args: Any) -> Any:
        try:
            return method(*args)
        except ConfigRefused as exc:
            raise ResourceError(exc.code, exc.message) from None
        except StorageError as exc:
            log.error("dynamic broker configs: %s", exc)
            raise ResourceError(ErrorCode.KAFKA_STORAGE_ERROR, str(exc)) from None

    async def _group_call(self, handler: str, request: Any) -> Any:
        group_id = request if isinstance(request, str) else request.group_id
        shard = self.groups.shard_of(group_id)
        try:
            return await shard.call(getattr(shard.coordinator, handler), request)
        except GroupError as exc:
            raise ResourceError(int(exc.code), exc.message or exc.code.name) from None
