"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs (topics, broker), DeleteRecords,
DescribeLogDirs and DescribeCluster on a real data dir, at every version served."""

from __future__ import annotations

import pytest

from kgroup.broker.admin.configs_api import ConfigsApi
from kgroup.broker.admin.records_api import RecordsApi
from kgroup.broker.concerns import SERVED
from kgroup.wire import RequestHeader, decode_response, encode_response, is_flexible, request_class
from kgroup.wire.kio_build import build, item
from tests.unit.broker.datactx import DataCtx, batch, run

TOPIC, BROKER, LOGGER = 2, 4, 8


def versions(key: int) -> list[int]:
    r = SERVED[key]
    return list(range(r.min_version, r.max_version + 1))


async def call(handler, key: int, version: int, **fields):
    """Build the request by name, run the handler, and prove the response encodes."""
    header = RequestHeader(key, version, 7, "test", is_flexible(key, version))
    response = await handler(header, _request(request_class(key, version), fields))
    _, decoded = decode_response(key, version, encode_response(header, response)[4:])
    return decoded


def _request(cls, fields):
    values = {}
    for name, value in fields.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = tuple(_request(item(cls, name), v) for v in value)
        values[name] = value
    return build(cls, **values)


@pytest.mark.parametrize("version", versions(32))
def test_describe_configs_of_topics_and_the_broker(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1, {"retention.ms": "1000"})
        api = ConfigsApi(ctx.dp.ctx, groups=None)
        r = await call(api.describe_configs, 32, version, include_synonyms=True, resources=[
            {"resource_type": TOPIC, "resource_name": "t", "configuration_keys": None},
            {"resource_type": TOPIC, "resource_name": "t", "configuration_keys": ("retention.ms",)},
            {"resource_type": TOPIC, "resource_name": "ghost", "configuration_keys": None},
            {"resource_type": BROKER, "resource_name": "1", "configuration_keys": None},
            {"resource_type": BROKER, "resource_name": "7", "configuration_keys": None},
            {"resource_type": LOGGER, "resource_name": "1", "configuration_keys": None}])
        assert [int(x.error_code) for x in r.results] == [0, 0, 3, 0, 42, 42]
        every, only, _, broker, *_ = r.results
        shown = {c.name: c for c in every.configs}
        assert shown["retention.ms"].value == "1000" and shown["retention.ms"].config_source == 1
        assert [s.name for s in shown["retention.ms"].synonyms] == ["retention.ms", "log.retention.ms"]
        assert shown["segment.bytes"].config_source == 5 and not shown["segment.bytes"].read_only
        assert [c.name for c in only.configs] == ["retention.ms"]
        brk = {c.name: c for c in broker.configs}
        assert brk["num.partitions"].read_only and brk["listeners"].value.startswith("PLAINTEXT://")

    run(tmp_path, scenario)


@pytest.mark.parametrize(("key", "version"), [(33, v) for v in versions(33)] + [(44, v) for v in versions(44)])
def test_alter_topic_configs(tmp_path, key, version):
    incremental = key == 44

    def cfg(name, value, op=0):
        return {"name": name, "value": value, "config_operation": op}

    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1, {"retention.bytes": "5000"})
        api = ConfigsApi(ctx.dp.ctx, groups=None)
        handler = api.incremental_alter_configs if incremental else api.alter_configs

        async def alter(name, configs, validate_only=False, rtype=TOPIC):
            r = await call(handler, key, version, validate_only=validate_only, resources=[
                {"resource_type": rtype, "resource_name": name, "configs": configs}])
            return int(r.responses[0].error_code), r.responses[0].error_message

        assert (await alter("t", [cfg("retention.ms", "60000")], validate_only=True))[0] == 0
        assert ctx.data.topic("t").configs == {"retention.bytes": "5000"}
        assert (await alter("t", [cfg("retention.ms", "60000")]))[0] == 0
        kept = {"retention.bytes": "5000"} if incremental else {}
        assert ctx.data.topic("t").configs == {**kept, "retention.ms": "60000"}
        assert ctx.data.partition_log("t", 0).config.retention_ms == 60000       # applied at once
        code, message = await alter("t", [cfg("retention.mss", "1")])
        assert code == 40 and "did you mean retention.ms?" in message
        assert (await alter("t", [cfg("segment.bytes", "-5")]))[0] == 40
        assert (await alter("t", [cfg("retention.ms", "1"), cfg("retention.ms", "2")]))[0] == 42
        assert (await alter("ghost", [cfg("retention.ms", "1")]))[0] == 3
        # The broker's read-only settings are refused as Kafka refuses them (test_dynamic_configs.py
        # has the dynamic ones).
        code, message = await alter("1", [cfg("num.partitions", "3")], rtype=BROKER)
        assert (code, message) == (42, "Cannot update these configs dynamically: [num.partitions]")
        if incremental:
            assert (await alter("t", [cfg("retention.ms", None, 1)]))[0] == 0       # DELETE
            assert "retention.ms" not in ctx.data.topic("t").configs
            assert (await alter("t", [cfg("cleanup.policy", "compact", 2)]))[0] == 0  # APPEND
            assert ctx.data.topic("t").configs["cleanup.policy"] == "delete,compact"
            assert (await alter("t", [cfg("cleanup.policy", "delete", 3)]))[0] == 0   # SUBTRACT
            assert ctx.data.topic("t").configs["cleanup.policy"] == "compact"
            assert (await alter("t", [cfg("retention.ms", "5", 2)]))[0] == 40        # not a list

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(21))
def test_delete_records(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(5), 1: batch(3)}})
        r = await call(RecordsApi(ctx.dp.ctx).delete_records, 21, version, timeout=1000, topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "offset": 3}, {"partition_index": 1, "offset": -1},
                                         {"partition_index": 2, "offset": 0}]},
            {"name": "__kgroup_events", "partitions": [{"partition_index": 0, "offset": 0}]}])
        got = [(int(p.error_code), p.low_watermark) for t in r.topics for p in t.partitions]
        assert got == [(0, 3), (0, 3), (3, -1), (17, -1)]
        # As Kafka keys the request by partition: a partition named twice is answered once
        # (its last offset), a topic named twice once with the partitions of both.
        r = await call(RecordsApi(ctx.dp.ctx).delete_records, 21, version, timeout=1000, topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "offset": 9}, {"partition_index": 0, "offset": 1}]}])
        assert [(int(p.error_code), p.low_watermark) for p in r.topics[0].partitions] == [(0, 3)]
        assert ctx.data.partition_log("t", 0).log_start_offset == 3
        r = await call(RecordsApi(ctx.dp.ctx).delete_records, 21, version, timeout=1000, topics=[
            {"name": "t", "partitions": [{"partition_index": 0, "offset": 4}]},
            {"name": "t", "partitions": [{"partition_index": 1, "offset": 2}]}])
        assert [(t.name, p.partition_index, int(p.error_code), p.low_watermark)
                for t in r.topics for p in t.partitions] == [("t", 0, 0, 4), ("t", 1, 0, 3)]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(35))
def test_describe_log_dirs(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        ctx.data.create_topic("u", 1)
        await ctx.produce(9, {"t": {0: batch(5)}})
        r = await call(RecordsApi(ctx.dp.ctx).describe_log_dirs, 35, version, topics=None)
        (result,) = r.results
        sizes = {(t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions}
        assert set(sizes) == {("t", 0), ("t", 1), ("u", 0)} and sizes[("t", 0)] > 0 == sizes[("t", 1)]
        r = await call(RecordsApi(ctx.dp.ctx).describe_log_dirs, 35, version, topics=[{"topic": "t", "partitions": (1,)}])
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.results[0].topics] == [("t", [1])]
        if version >= 4:
            assert result.total_bytes > 0 and result.usable_bytes >= 0

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(60))
def test_describe_cluster(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await call(ctx.dp.describe_cluster, 60, version, include_cluster_authorized_operations=False)
        assert int(r.error_code) == 0 and r.cluster_id == "kgroup" and r.controller_id == 1
        assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(1, "127.0.0.1", 9092)]
        if version >= 1:
            r = await call(ctx.dp.describe_cluster, 60, version, endpoint_type=2)
            assert int(r.error_code) == 114        # MISMATCHED_ENDPOINT_TYPE: a controller's
            for unknown in (0, 127):               # a type Kafka does not know
                r = await call(ctx.dp.describe_cluster, 60, version, endpoint_type=unknown)
                assert int(r.error_code) == 115    # UNSUPPORTED_ENDPOINT_TYPE

    run(tmp_path, scenario)
