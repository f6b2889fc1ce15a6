"""Mutates valid request frames at random and checks the count guard on each (run in a child
process by test_count_guard.py, so that an abort inside kio's native reader fails the test
instead of killing pytest).

For every mutated frame: ``decode_request`` (count guard, then kio's native reader, else
Kafka's rules) answers what Kafka's rules alone (``kafka_reader``) answer — the same header
and request, or a refusal on both sides — and where the guard lets a body through,
Kafka's rules never find an array count over the bytes left. Exits 1 with the first
frames that break this, 0 with a summary line otherwise.

    python tests/unit/wire/mutate_frames.py [--seed N] [--frames N] [--seconds S]
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
from typing import Any

import kio.schema.request_header.v1 as header_v1
import kio.schema.request_header.v2 as header_v2
from wire_samples import minimal, sample

from kgroup.broker.concerns import SERVED
from kgroup.wire import request_rules
from kgroup.wire.codec import RequestHeader, decode_request, encode_request, request_class
from kgroup.wire.count_guard import guard
from kgroup.wire.errors import MalformedRequest, UnsupportedVersion
from kgroup.wire.kafka_reader import read_entity
from kgroup.wire.versions import all_versions, is_flexible

# Found by mutation before the guard existed: Fetch v12, forgotten_topics_data ~2**35 entries.
TWO_TO_THE_35 = bytes.fromhex("0001000c007f0011000466757a7a00ffffffff000005dc000000057ffffff7"
                              "0000000000ffffffff01d580db965a14a8010100")
HUGE = (b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x07", b"\x80\x80\x80\x80\x08", b"\x80\x80\x40",
        struct.pack(">i", 2**31 - 1), struct.pack(">i", 1 << 20), struct.pack(">i", -2), struct.pack(">h", 0x7FFF))


def valid_frames() -> list[bytes]:
    return [encode_request(k, v, 17, "fuzz", make(request_class(k, v)))[4:]
            for k, v in all_versions(SERVED.values()) for make in (sample, minimal)]


def kafka_rules(frame: bytes) -> Any:
    """What Kafka's rules alone make of ``frame``: (header, request), or "refused"."""
    if len(frame) < 8:
        return "refused"
    api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
    api = SERVED.get(api_key)
    if api is None or version not in api:
        return "refused"
    flexible = is_flexible(api_key, version)
    try:
        header, offset = read_entity((header_v2 if flexible else header_v1).RequestHeader, frame, 0)
        request, _ = read_entity(request_class(api_key, version), frame, offset)
        request_rules.check(api_key, request)
    except Exception:     # KafkaDecodeError, MalformedRequest; decode_request refuses any error too
        return "refused"
    return RequestHeader(api_key, version, correlation_id, header.client_id, flexible), request


def guarded(frame: bytes) -> Any:
    try:
        return decode_request(frame, SERVED)
    except (MalformedRequest, UnsupportedVersion):
        return "refused"


def guard_passes(frame: bytes) -> bool:
    """Whether the count guard lets this frame's body reach kio's native reader."""
    try:
        api_key, version = struct.unpack_from(">hh", frame)
        walk = guard(request_class(api_key, version))
        if walk is None:
            return False
        (client_id_length,) = struct.unpack_from(">h", frame, 8)
        offset = 10 + max(client_id_length, 0) + (1 if is_flexible(api_key, version) else 0)
        walk(frame, offset)
        return True
    except Exception:
        return False


def mutate(rng: random.Random, frame: bytes) -> bytes:
    out = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        if not out:
            break
        i = rng.randrange(len(out))
        op = rng.randrange(7)
        if op == 0:
            out[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            out[i] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF))
        elif op == 2:
            out[i:i] = rng.randbytes(rng.randint(1, 8))
        elif op == 3:
            big = rng.choice(HUGE)
            out[i:i + rng.choice((0, len(big)))] = big        # inserted, or written over
        elif op == 4:
            del out[i]
        elif op == 5:
            del out[i:]
        else:
            out[i:i] = out[rng.randrange(len(out)):][:rng.randint(1, 16)]   # a piece repeated
    return bytes(out)


def same(a: Any, b: Any) -> bool:
    return a == b or repr(a) == repr(b)     # NaN floats are unequal to themselves


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=30_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    frames = [*valid_frames(), TWO_TO_THE_35]
    deadline = time.monotonic() + args.seconds
    tried = passed = 0
    bad: list[str] = []
    while tried < args.frames and time.monotonic() < deadline and len(bad) < 5:
        frame = mutate(rng, rng.choice(frames))
        tried += 1
        fast = guard_passes(frame)
        passed += fast
        want = kafka_rules(frame)
        got = guarded(frame)       # an abort here kills this process: the test sees the signal
        if not same(got, want):
            bad.append(f"{frame.hex()}: decode_request {got!r:.300} but Kafka's rules {want!r:.300}")
        elif fast:
            try:
                read_entity(request_class(*struct.unpack_from(">hh", frame)), frame,
                            10 + max(struct.unpack_from(">h", frame, 8)[0], 0)
                            + (1 if is_flexible(*struct.unpack_from(">hh", frame)) else 0))
            except Exception as exc:
                if "Tried to allocate a collection" in str(exc):
                    bad.append(f"{frame.hex()}: the guard passed a count Kafka refuses: {exc}")
    for line in bad:
        print(line)
    print(f"{tried} mutated frames, {passed} through the count guard to kio's native reader, "
          f"{len(bad)} wrong (seed {args.seed})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
