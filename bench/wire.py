"""Wire codec throughput: decode + encode round trips per second.

For Heartbeat v4 and OffsetCommit v8 (one topic, 10 partitions) requests, one round trip
is: decode the request frame (header + body) with ``decode_request``, build the matching
response object, and encode it with ``encode_response``; plus, separately, the client side
(``encode_request`` + ``decode_response``). Prints the median of 3 runs. Then the cost of
the Kafka-rules reader (kafka_reader), which decode_request uses where kio's native reader
refuses the bytes: Heartbeat v4 and OffsetCommit v8 with an unknown tagged field, decoded.

``--decode``: decode alone (``decode_request``, header + body) of Produce v11 (one
partition, 1 KiB of records), Fetch v16 (one topic, 10 partitions), OffsetCommit v9 (one
topic, 10 partitions) and Heartbeat v4, in microseconds per request (median of ``--runs``
runs), and beside it, where the code has them, the parts: Kafka's rules alone
(``kafka_reader``), kio's native reader alone (unguarded) and the count guard alone
(``count_guard``). Runs on an older checkout too (``PYTHONPATH=OLD/src``): parts it lacks
print as "-".

Run: .venv/bin/python bench/wire.py [--decode [--runs 5]]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
import uuid

from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4 import HeartbeatRequest, HeartbeatResponse
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_commit.v8.response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from kio.static.primitive import i32, i32Timedelta, i64

from kgroup.broker.concerns import SERVED
from kgroup.wire.codec import decode_request, decode_response, encode_request, encode_response

ZERO = i32Timedelta.parse(datetime.timedelta(0))
DURATION_S = 1.0


def _heartbeat() -> tuple[int, int, object, object]:
    req = HeartbeatRequest(group_id="group-1", generation_id=i32(7), member_id="member-1-abc",
                           group_instance_id=None)
    return 12, 4, req, lambda r: HeartbeatResponse(throttle_time=ZERO, error_code=ErrorCode.none)


def _offset_commit() -> tuple[int, int, object, object]:
    req = OffsetCommitRequest(
        group_id="group-1",
        generation_id_or_member_epoch=i32(7),
        member_id="member-1-abc",
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name="orders",
                partitions=tuple(
                    OffsetCommitRequestPartition(partition_index=i32(i),
                                                 committed_offset=i64(1000 + i),
                                                 committed_leader_epoch=i32(-1),
                                                 committed_metadata="")
                    for i in range(10)
                ),
            ),
        ),
    )

    def respond(r: OffsetCommitRequest) -> OffsetCommitResponse:
        return OffsetCommitResponse(
            throttle_time=ZERO,
            topics=tuple(
                OffsetCommitResponseTopic(
                    name=t.name,
                    partitions=tuple(
                        OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                      error_code=ErrorCode.none)
                        for p in t.partitions
                    ),
                )
                for t in r.topics
            ),
        )

    return 8, 8, req, respond


def _run(fn) -> float:
    n = 0
    start = time.perf_counter()
    deadline = start + DURATION_S
    while True:
        for _ in range(200):
            fn()
        n += 200
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def _decode_samples() -> list[tuple[str, int, int, object]]:
    """(name, api key, version, request) of the requests whose decode alone is timed."""
    from kio.schema.fetch.v16 import request as fetch
    from kio.schema.offset_commit.v9 import request as commit
    from kio.schema.produce.v11 import request as produce
    from kio.static.primitive import Records, i16

    produce_v11 = produce.ProduceRequest(
        transactional_id=None, acks=i16(-1), timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(produce.TopicProduceData(name="orders", partition_data=(
            produce.PartitionProduceData(index=i32(0), records=Records(bytes(1024))),)),))
    fetch_v16 = fetch.FetchRequest(
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)), min_bytes=i32(1),
        topics=(fetch.FetchTopic(topic_id=uuid.UUID(int=7), partitions=tuple(
            fetch.FetchPartition(partition=i32(i), fetch_offset=i64(1000 * i), partition_max_bytes=i32(1 << 20))
            for i in range(10))),),
        forgotten_topics_data=())
    commit_v9 = commit.OffsetCommitRequest(
        group_id="group-1", generation_id_or_member_epoch=i32(7), member_id="member-1-abc",
        group_instance_id=None, topics=(commit.OffsetCommitRequestTopic(name="orders", partitions=tuple(
            commit.OffsetCommitRequestPartition(partition_index=i32(i), committed_offset=i64(1000 + i),
                                                committed_leader_epoch=i32(-1), committed_metadata="")
            for i in range(10))),))
    return [("Produce v11 (1 partition, 1 KiB)", 0, 11, produce_v11),
            ("Fetch v16 (10 partitions)", 1, 16, fetch_v16),
            ("OffsetCommit v9 (10 partitions)", 8, 9, commit_v9),
            ("Heartbeat v4", 12, 4, _heartbeat()[2])]


def decode_alone(runs: int) -> None:
    """Microseconds per decode, median of ``runs``; the parts where this checkout has them."""
    from kio.serial import entity_reader

    from kgroup.wire.codec import request_class
    from kgroup.wire.kafka_reader import read_entity
    try:
        from kgroup.wire.count_guard import guard
    except ImportError:     # a checkout before the count guard
        guard = None

    def us(fn) -> float:
        return statistics.median(1e6 / _run(fn) for _ in range(runs))

    print(f"decode alone, us per request (median of {runs} x {DURATION_S:.0f}s runs)")
    print(f"  {'request':34s} {'decode_request':>14s} {'kafka_reader':>13s} {'kio native':>11s} {'count guard':>12s}")
    for name, api_key, version, request in _decode_samples():
        frame = encode_request(api_key, version, 1, "bench", request)[4:]
        header, decoded = decode_request(frame, SERVED)
        assert decoded == request
        cls = request_class(api_key, version)
        offset = 8 + 2 + len("bench") + (1 if header.flexible else 0)    # the body's start
        assert read_entity(cls, frame, offset)[0] == request
        native = entity_reader(cls)
        walk = guard(cls) if guard is not None else None
        cells = [us(lambda: decode_request(frame, SERVED)), us(lambda: read_entity(cls, frame, offset)),
                 us(lambda: native(frame, offset)),
                 us(lambda: walk(frame, offset)) if walk is not None else None]
        print(f"  {name:34s}" + "".join(f" {'-' if c is None else f'{c:.2f}':>{w}s}"
                                        for c, w in zip(cells, (14, 13, 11, 12))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decode", action="store_true", help="decode alone of four requests, nothing else")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.decode:
        decode_alone(args.runs)
        return
    print(f"wire codec round trips/s (median of 3 x {DURATION_S:.0f}s runs)")
    for name, make in (("Heartbeat v4", _heartbeat), ("OffsetCommit v8 (10 partitions)", _offset_commit)):
        api_key, version, request, respond = make()
        frame = encode_request(api_key, version, 1, "bench", request)[4:]
        response = respond(request)
        response_frame = encode_response(decode_request(frame, SERVED)[0], response)[4:]

        def server() -> None:
            header, req = decode_request(frame, SERVED)
            encode_response(header, respond(req))

        def client() -> None:
            encode_request(api_key, version, 1, "bench", request)
            decode_response(api_key, version, response_frame)

        for side, fn in (("server decode+respond+encode", server), ("client encode+decode", client)):
            rates = [_run(fn) for _ in range(3)]
            print(f"  {name:34s} {side:30s} {statistics.median(rates):>10,.0f}/s")

        # The same request from a newer client: an unknown tagged field at the end.
        tagged = frame[:-1] + b"\x01\x63\x01z"
        assert decode_request(tagged, SERVED)[1] == request
        plain = statistics.median(_run(lambda: decode_request(frame, SERVED)) for _ in range(3))
        rate = statistics.median(_run(lambda: decode_request(tagged, SERVED)) for _ in range(3))
        print(f"  {name:34s} {'decode (kio)':30s} {plain:>10,.0f}/s")
        print(f"  {name:34s} {'decode, unknown tag (Kafka rules)':30s} {rate:>10,.0f}/s")


if __name__ == "__main__":
    main()
