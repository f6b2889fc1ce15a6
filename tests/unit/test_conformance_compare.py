"""The differential comparison without brokers: one flipped error code is a difference,
the named normalizations are not (kgroup.conformance.transcript)."""

from __future__ import annotations

from kgroup.conformance.transcript import Transcript, compare


def transcript(code: str, member: str, message: str | None) -> Transcript:
    t = Transcript()
    t.add("join", {"error_code": "NONE", "member_id": member, "throttle_time": 7})
    t.add("heartbeat", {"error_code": code, "error_message": message, "member_id": member})
    return t


def test_a_flipped_error_code_is_a_difference_and_normalized_fields_are_not():
    kafka = transcript("UNKNOWN_MEMBER_ID", "c-1b2f", "Kafka's text")
    assert compare(kafka, transcript("UNKNOWN_MEMBER_ID", "c-77aa", "kgroup's text")).agree
    flipped = compare(kafka, transcript("ILLEGAL_GENERATION", "c-77aa", "kgroup's text"))
    assert not flipped.agree and "ILLEGAL_GENERATION" in flipped.diff
    # null and "" messages are compared as they are
    assert not compare(kafka, transcript("UNKNOWN_MEMBER_ID", "c-77aa", None)).agree
