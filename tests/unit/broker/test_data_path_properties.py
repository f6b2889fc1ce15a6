"""Hypothesis: whatever the size limits, a consumer that fetches from where it left off
reads back every produced record of every partition, in order, and always progresses."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.wire.record_batch import decode_records, split_batches

from .datactx import DataCtx, batch, run

produced = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 5), st.integers(0, 300)),
                    min_size=1, max_size=15)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(produced=produced, max_bytes=st.integers(1, 3000), part_max=st.integers(1, 2000),
       version=st.sampled_from([4, 11, 12, 13, 18]))
def test_fetch_loop_reads_everything_in_order(produced, max_bytes, part_max, version):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 3)
        expected: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        for i, (p, n, pad) in enumerate(produced):
            tag = b"%d-" % i + b"x" * pad + b"-"
            r = await ctx.produce(9, {"t": {p: batch(n, tag=tag)}})
            assert int(r.responses[0].partition_responses[0].error_code) == 0
            expected[p] += [tag + b"%d" % j for j in range(n)]
        got: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
        position = {0: 0, 1: 0, 2: 0}
        for _ in range(200):
            if all(position[p] == len(expected[p]) for p in position):
                break
            f = await ctx.fetch(version, {"t": [(p, position[p]) for p in (0, 1, 2)]},
                                max_bytes=max_bytes, partition_max_bytes=part_max)
            progressed = False
            for part in f.responses[0].partitions:
                assert int(part.error_code) == 0
                for b in split_batches(part.records or b""):
                    for rec in decode_records(b):
                        if rec.offset >= position[part.partition_index]:
                            got[part.partition_index].append(rec.value)
                            position[part.partition_index] = rec.offset + 1
                            progressed = True
            assert progressed, "a fetch with data left returned nothing"
        assert got == expected

    with tempfile.TemporaryDirectory() as tmp:
        run(Path(tmp), scenario)
