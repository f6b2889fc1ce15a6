"""The count guard (wire/count_guard.py): kio's native reader reads a body only after a walk
of its counts, and then answers exactly what Kafka's rules (kafka_reader) answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.broker import concerns
from kgroup.wire.codec import decode_request, encode_request, request_class
from kgroup.wire.count_guard import CountsUnsafe, guard
from kgroup.wire.kafka_reader import has_arrays
from kgroup.wire.versions import is_flexible
from tests.integration.test_every_request_answers import entity
from tests.unit.wire.mutate_frames import TWO_TO_THE_35, kafka_rules

HERE = Path(__file__).parent
SERVED = [(r.api_key, r.name) for r in concerns.SERVED.values()]
SETTINGS = dict(derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _body_offset(frame: bytes, api_key: int, version: int) -> int:
    client_id_length = int.from_bytes(frame[8:10], "big", signed=True)
    return 10 + max(client_id_length, 0) + (1 if is_flexible(api_key, version) else 0)


@pytest.mark.parametrize(("api_key", "name"), SERVED, ids=[n for _, n in SERVED])
def test_valid_requests_pass_the_guard_and_decode_as_kafkas_rules_do(api_key, name):
    r = concerns.SERVED[api_key]

    @settings(max_examples=25, **SETTINGS)
    @given(data=st.data())
    def one(data):
        version = data.draw(st.integers(r.min_version, r.max_version))
        cls = request_class(api_key, version)
        request = data.draw(entity(cls))
        frame = encode_request(api_key, version, 9, data.draw(st.sampled_from(["c", None])), request)[4:]
        walk = guard(cls)
        assert (walk is None) == (not has_arrays(cls))
        if walk is not None:    # the walk ends exactly where the body does: it read what kio reads
            assert walk(frame, _body_offset(frame, api_key, version)) == len(frame)
        want = kafka_rules(frame)
        if want == "refused":   # a request Kafka refuses beyond its schema (wire/request_rules.py)
            with pytest.raises(Exception):
                decode_request(frame, concerns.SERVED)
        else:
            assert decode_request(frame, concerns.SERVED) == want

    one()


def test_the_two_to_the_35_frame_is_refused_by_the_guard_before_kio_reads_it():
    cls = request_class(1, 12)
    with pytest.raises(CountsUnsafe, match="a count of"):
        guard(cls)(TWO_TO_THE_35, _body_offset(TWO_TO_THE_35, 1, 12))


def test_a_count_the_bytes_left_can_hold_passes_one_more_is_refused():
    # Fetch v16 with forgotten_topics_data of n topic ids (16 bytes + an empty compact array
    # + no tags = 18 bytes each): the guard allows a count up to the bytes left, as Kafka.
    from kio.schema.fetch.v16.request import FetchRequest
    import datetime
    from kio.static.primitive import i32, i32Timedelta

    request = FetchRequest(max_wait=i32Timedelta.parse(datetime.timedelta(0)), min_bytes=i32(1),
                           topics=(), forgotten_topics_data=())
    frame = encode_request(1, 16, 1, "c", request)[4:]
    walk = guard(request_class(1, 16))
    offset = _body_offset(frame, 1, 16)
    assert walk(frame, offset) == len(frame)
    # forgotten_topics_data's count sits after the topics' count; both are one byte (0 + 1).
    at = frame.index(b"\x01\x01", offset + 21) + 1
    rest = len(frame) - at - 1
    for count, ok in ((rest, True), (rest + 1, False)):
        mutated = frame[:at] + bytes([count + 1]) + frame[at + 1:]
        if ok:      # past this count, the walk runs out of bytes: not this count's refusal
            with pytest.raises(IndexError):
                walk(mutated, offset)
        else:
            with pytest.raises(CountsUnsafe, match=f"a count of {count} with {rest} bytes left"):
                walk(mutated, offset)


def _child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


# Requests without arrays are not guarded: kio's native reader bounds a string's and a byte
# array's length and a tagged-field count by the bytes left itself. Each in a child process,
# where an abort shows as a signal instead of killing pytest.
HUGE = "b'\\xff\\xff\\xff\\xff\\x0f'"
UNGUARDED = {
    "compact string of 2**32 bytes": (12, 4, f"{HUGE} + bytes(10)"),
    "tagged-field count of 2**32": (12, 4, f"b'\\x02g' + bytes(4) + b'\\x02m\\x00' + {HUGE} + bytes(10)"),
    "legacy bytes of 2**31-1": (11, 0, "b'\\x00\\x01g' + bytes(4) + b'\\x00\\x00\\x00\\x01c\\x00\\x00\\x00\\x01"
                                        "\\x00\\x01p\\x7f\\xff\\xff\\xff'"),
    "compact bytes of 2**32": (11, 6, f"b'\\x02g' + bytes(8) + b'\\x01\\x00\\x02c\\x02\\x02p' + {HUGE} + bytes(10)"),
}


@pytest.mark.parametrize("case", sorted(UNGUARDED))
def test_kio_refuses_oversized_strings_bytes_and_tag_counts_without_aborting(case):
    api_key, version, body = UNGUARDED[case]
    done = _child(f"""
from kio.serial import entity_reader
from kgroup.wire.codec import request_class
try:
    entity_reader(request_class({api_key}, {version}))({body}, 0)
except Exception as exc:
    print("refused", type(exc).__name__)
""")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused")


def test_without_the_guard_kio_aborts_on_a_hostile_array_count():
    # Why the guard exists: the same bytes as the 2**35 frame, straight into kio's native
    # reader, kill the process (SIGABRT from the Rust allocator).
    done = _child(f"""
from kio.serial import entity_reader
from kgroup.wire.codec import request_class
try:
    entity_reader(request_class(1, 12))({TWO_TO_THE_35!r}, {_body_offset(TWO_TO_THE_35, 1, 12)})
except Exception as exc:
    print("refused", type(exc).__name__)
""")
    assert done.returncode != 0 and "memory allocation" in done.stderr, (done.returncode, done.stdout)


@pytest.mark.parametrize("seed", [1, 2])
def test_mutated_frames_decode_as_kafkas_rules_and_never_abort(seed):
    # In a child process: an abort inside kio's native reader fails this test.
    done = subprocess.run([sys.executable, str(HERE / "mutate_frames.py"), "--seed", str(seed),
                           "--frames", "60000", "--seconds", "60"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, (done.returncode, done.stdout[-3000:], done.stderr[-3000:])
    assert " 0 wrong" in done.stdout
