"""Every version we serve of each data-path API answers, and the answer encodes.

`DataCtx.call` encodes each response with the wire layer and decodes it back; these tests
drive each API at every version in `kgroup.wire.versions`, with a success and an error in
the same request, so every response shape we build goes through the codec.
"""

from __future__ import annotations

import uuid

import pytest

from kgroup.broker.concerns import SERVED

from .datactx import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    FETCH,
    LIST_OFFSETS,
    METADATA,
    PRODUCE,
    DataCtx,
    batch,
    codes,
    run,
)


def versions(key: int) -> list[int]:
    r = SERVED[key]
    return list(range(r.min_version, r.max_version + 1))


@pytest.mark.parametrize("version", versions(METADATA))
def test_metadata_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        assert codes(await ctx.metadata(version, None), METADATA) == [0]
        r = await ctx.metadata(version, ["t", "new", "bad name"])
        assert codes(r, METADATA) == [0, 3, 17]           # "new" auto-created: found next time
        assert codes(await ctx.metadata(version, ["new"]), METADATA) == [0]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(PRODUCE))
def test_produce_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        bad = bytearray(batch(1))
        bad[30] ^= 1
        r = await ctx.produce(version, {"t": {0: batch(2), 1: batch(1)}, "u": {0: bytes(bad)}})
        # (v13, KIP-516: a topic by an id no topic has is UNKNOWN_TOPIC_ID.)
        assert codes(r, PRODUCE) == [0, 3, 100 if version >= 13 else 3]
        ctx.data.create_topic("u", 1)
        r = await ctx.produce(version, {"t": {0: batch(2)}, "u": {0: bytes(bad)}})
        assert codes(r, PRODUCE) == [0, 2]
        assert r.responses[0].partition_responses[0].base_offset == 2
        assert codes(await ctx.produce(version, {"t": {0: batch(1)}}, acks=5), PRODUCE) == [21]
        assert await ctx.produce(version, {"t": {0: batch(1)}}, acks=0) is None

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(FETCH))
def test_fetch_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        await ctx.produce(9, {"t": {0: batch(3)}})
        f = await ctx.fetch(version, {"t": [(0, 0), (1, 5), (9, 0)]})
        assert codes(f, FETCH) == [0, 1, 3]
        assert f.responses[0].partitions[0].high_watermark == 3
        assert f.responses[0].partitions[0].records
        ids = {"gone": uuid.uuid4()}
        f = await ctx.fetch(version, {"gone": [(0, 0)]}, by_id=ids)
        assert codes(f, FETCH) == [100 if version >= 13 else 3]
        if version >= 7:
            f = await ctx.fetch(version, {"t": [(0, 0)]}, session_id=5, session_epoch=1)
            assert int(f.error_code) == 70

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(LIST_OFFSETS))
def test_list_offsets_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        await ctx.produce(9, {"t": {0: batch(3, ts=100)}})
        parts = await ctx.list_offsets_each(version, "t", [(0, -2), (0, -1), (0, 101), (3, -1)])
        assert [int(p.error_code) for p in parts] == [0, 0, 0, 3]
        assert [p.offset for p in parts] == [0, 3, 1, -1]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(CREATE_TOPICS))
def test_create_topics_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        r = await ctx.create_topics(version, [{"name": "a", "partitions": 2, "configs": {"retention.ms": "5000"}},
                                              {"name": "a"}, {"name": "b", "replication": 2}])
        assert codes(r, CREATE_TOPICS) == [38, 42]        # "a" twice: refused once, last
        r = await ctx.create_topics(version, [{"name": "a", "partitions": 2, "configs": {"retention.ms": "5000"}}])
        assert codes(r, CREATE_TOPICS) == [0]
        assert codes(await ctx.create_topics(version, [{"name": "a"}]), CREATE_TOPICS) == [36]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(DELETE_TOPICS))
def test_delete_topics_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("a", 1)
        r = await ctx.delete_topics(version, ["a", "nope"])
        assert codes(r, DELETE_TOPICS) == [0, 3]
        if version >= 6:
            r = await ctx.delete_topics(version, ids=[uuid.uuid4()])
            assert codes(r, DELETE_TOPICS) == [100]

    run(tmp_path, scenario)


@pytest.mark.parametrize("version", versions(CREATE_PARTITIONS))
def test_create_partitions_every_version(tmp_path, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("a", 1)
        r = await ctx.create_partitions(version, {"a": 3, "b": 2})
        assert codes(r, CREATE_PARTITIONS) == [0, 3]
        assert codes(await ctx.create_partitions(version, {"a": 2}), CREATE_PARTITIONS) == [37]

    run(tmp_path, scenario)
