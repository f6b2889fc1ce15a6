"""Fetch answers built for sendfile are the kio-built answers, byte for byte, and go out
through a real socket unchanged (and read in, where sendfile cannot be used)."""

from __future__ import annotations

import asyncio

from kgroup.broker.data.fetch_api import FetchAnswer, send_answer
from kgroup.error_codes import ErrorCode as E
from kgroup.storage.records_slice import RecordsSlice
from kgroup.wire import RequestHeader, encode_response
from kgroup.wire.record_batch import build_batch

from tests.unit.broker.datactx import FETCH, DataCtx, run

BIG = b"x" * 900


def batch(n: int, pid: int = -1, seq: int = -1, txn: bool = False, tag: bytes = b"v") -> bytes:
    return build_batch([(None, tag + b"%d" % i + BIG, [], 1_000 + i) for i in range(n)], producer_id=pid,
                       producer_epoch=0 if pid >= 0 else -1, base_sequence=seq, transactional=txn)


async def fill(ctx: DataCtx) -> None:
    """Partition 0: plain batches of ~90 KB, an aborted transaction in the middle, a
    committed one, then an open one (so the last stable offset is below the high watermark).
    Partition 1: small batches only (answered from memory)."""
    ctx.dp.ctx.verify_txn = lambda *a: E.NONE
    ctx.data.create_topic("t", 2)
    plog = ctx.data.partition_log("t", 0)
    producers = ctx.dp.ctx.producers
    await ctx.produce(9, {"t": {0: batch(100)}})
    await ctx.produce(9, {"t": {0: batch(100, pid=5, seq=0, txn=True, tag=b"aborted")}}, transactional_id="a")
    await ctx.produce(9, {"t": {0: batch(100)}})
    producers.append_marker(("t", 0), plog, 5, 0, False, 0, 2_000)
    await ctx.produce(9, {"t": {0: batch(100, pid=6, seq=0, txn=True, tag=b"committed")}}, transactional_id="c")
    producers.append_marker(("t", 0), plog, 6, 0, True, 0, 2_000)
    await ctx.produce(9, {"t": {0: batch(100)}})
    await ctx.produce(9, {"t": {0: batch(100, pid=7, seq=0, txn=True, tag=b"open")}}, transactional_id="o")
    for _ in range(3):
        await ctx.produce(9, {"t": {1: batch(3)}})


def test_sendfile_answers_are_byte_identical_to_kio_answers_for_every_version(tmp_path):
    async def scenario(ctx: DataCtx) -> int:
        await fill(ctx)
        sliced = 0
        for version in range(4, 19):
            for isolation in (0, 1):
                for offsets, limits in (
                    ({"t": [(0, 0), (1, 0)]}, {}),
                    ({"t": [(0, 150), (1, 4), (5, 0)]}, {}),                 # mid-batch; unknown partition
                    ({"t": [(0, 250), (1, 999)]}, {"partition_max_bytes": 200_000}),   # out of range
                    ({"t": [(1, 0), (0, 0)]}, {"max_bytes": 100}),           # KIP-74: first with data only
                    ({"t": [(0, 502)]}, {}),                                 # at the LSO
                ):
                    request = ctx.fetch_request(version, offsets, isolation=isolation, **limits)
                    header = RequestHeader(FETCH, version, 1000 + version, "test", version >= 12)
                    expected = encode_response(header, await ctx.dp.fetch(header, request))
                    answer = await ctx.dp.fetch_answer(header, request)
                    sliced += answer.zero_copy
                    assert answer.frame() == expected, (version, isolation, offsets)
        return sliced

    sliced = run(tmp_path, scenario)
    assert sliced >= 15 * 2 * 2   # the large answers did leave their records in the files


def test_aborted_transactions_come_with_a_sliced_read_committed_answer(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        await fill(ctx)
        header = RequestHeader(FETCH, 12, 1, "test", True)
        answer = await ctx.dp.fetch_answer(header, ctx.fetch_request(12, {"t": [(0, 0)]}, isolation=1))
        slices = [p for p in answer.parts if isinstance(p, RecordsSlice)]
        assert len(slices) == 1 and slices[0].end_offset == 502      # up to the open transaction
        frame = answer.frame()
        assert (5).to_bytes(8, "big") + (100).to_bytes(8, "big") in frame   # (producer 5, first offset 100)

    run(tmp_path, scenario)


def test_an_answer_goes_through_a_socket_with_sendfile_or_read_in(tmp_path):
    async def scenario(ctx: DataCtx) -> None:
        await fill(ctx)
        header = RequestHeader(FETCH, 13, 7, "test", True)
        request = ctx.fetch_request(13, {"t": [(0, 0), (1, 0)]})
        expected = (await ctx.dp.fetch_answer(header, request)).frame()
        for zero_copy in (True, False):
            received = bytearray()
            done = asyncio.Event()

            async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                answer = await ctx.dp.fetch_answer(header, request)
                assert isinstance(answer, FetchAnswer) and answer.zero_copy
                await send_answer(writer.transport, [b"before"], answer, zero_copy)
                writer.close()

            async def client(port: int) -> None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                received.extend(await reader.read())
                writer.close()
                done.set()

            server = await asyncio.start_server(serve, "127.0.0.1", 0)
            await client(server.sockets[0].getsockname()[1])
            await done.wait()
            server.close()
            assert bytes(received) == b"before" + expected, zero_copy

    run(tmp_path, scenario)

