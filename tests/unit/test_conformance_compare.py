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


class _Proxy:
    """Just enough of a RecordingProxy for a Target: a watch the test fills in."""

    def watch(self, prefix):
        from kgroup.conformance.proxy import Watch  # noqa: PLC0415
        self.w = Watch(prefix)
        return self.w


def _outcomes(*answers: tuple[int, int]) -> Transcript:
    """A client's outcome set from (API key, error code) answers."""
    from kgroup.conformance.proxy import Exchange  # noqa: PLC0415
    from kgroup.conformance.target import Names, Side, Target  # noqa: PLC0415

    proxy = _Proxy()
    t = Target(Side("kafka", proxy, "127.0.0.1:1"), Names("s", "r"))
    for n, (api_key, code) in enumerate(answers):
        proxy.w.exchanges.append(Exchange(t.client_id("b"), 1, api_key, 5, n, b"", float(n),
                                          errors=(("error_code", code),), answered_at=float(n)))
    t.add_outcomes("b")
    return t.transcript


def test_an_extra_rebalance_round_is_timing_and_other_sync_errors_are_not():
    JOIN, SYNC, HEARTBEAT, NONE, REBALANCING, UNKNOWN = 11, 14, 12, 0, 27, 25
    settled = _outcomes((JOIN, NONE), (SYNC, NONE), (HEARTBEAT, NONE))
    # "rebalance rounds": a SyncGroup overtaken by another round (kafka-python rejoins), then the settling round.
    assert compare(settled, _outcomes((JOIN, NONE), (SYNC, REBALANCING), (JOIN, NONE), (SYNC, NONE),
                                      (HEARTBEAT, REBALANCING))).agree
    # The settling round is still compared, and so is any other SyncGroup error.
    assert not compare(settled, _outcomes((JOIN, NONE), (SYNC, REBALANCING))).agree
    assert not compare(settled, _outcomes((JOIN, NONE), (SYNC, NONE), (SYNC, UNKNOWN))).agree
