"""Wire codec throughput: decode + encode round trips per second.

For Heartbeat v4 and OffsetCommit v8 (one topic, 10 partitions) requests, one round trip
is: decode the request frame (header + body) with ``decode_request``, build the matching
response object, and encode it with ``encode_response``; plus, separately, the client side
(``encode_request`` + ``decode_response``). Prints the median of 3 runs. Then the cost of
the Kafka-rules reader (kafka_reader), which decode_request uses where kio's native reader
refuses the bytes: Heartbeat v4 and OffsetCommit v8 with an unknown tagged field, decoded.

Run: .venv/bin/python bench/wire.py
"""

from __future__ import annotations

import datetime
import statistics
import time

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


def main() -> None:
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
