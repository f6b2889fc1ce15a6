"""Share sessions (KIP-932): the ShareSessionEpoch rules, and the session's ownership of its
member's acquisitions (a leave and the final acknowledgement in either order), pure, on a
manual clock."""

from __future__ import annotations

import pytest

from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.share_partition import AckBatch, AckType, LogBatch, ShareLimits, SharePartition
from kgroup.core.share_sessions import FINAL_EPOCH, ShareSessions


def test_kip932_share_session_opens_at_epoch_zero_and_each_request_moves_the_epoch_on():
    sessions = ShareSessions()
    session, old = sessions.open("sg", "m1", connection=1)
    assert old is None and session.next_epoch == 0
    session.advance()                                   # the opening request went through
    assert sessions.find("sg", "m1", 1, connection=1) is session
    session.advance()
    assert sessions.find("sg", "m1", 2, connection=1).next_epoch == 2
    assert sessions.find("sg", "m1", FINAL_EPOCH, connection=1) is session   # -1 closes any session


def test_kip932_wrong_share_session_epoch_is_invalid_and_a_missing_session_not_found():
    sessions = ShareSessions()
    with pytest.raises(GroupError) as missing:
        sessions.find("sg", "m1", 1, connection=1)
    assert missing.value.code is ErrorCode.SHARE_SESSION_NOT_FOUND
    session, _ = sessions.open("sg", "m1", connection=1)
    session.advance()
    for wrong in (0, 2, 7):
        with pytest.raises(GroupError) as invalid:
            sessions.find("sg", "m1", wrong, connection=1)
        assert invalid.value.code is ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert session.next_epoch == 1                      # a refused request moves nothing


def test_kip932_share_session_epoch_wraps_to_one_after_the_largest():
    session, _ = ShareSessions().open("sg", "m1", connection=1)
    session.next_epoch = 2**31 - 1
    session.advance()
    assert session.next_epoch == 1


def test_kip932_opening_again_replaces_the_old_session_and_a_closed_connection_takes_its_sessions():
    sessions = ShareSessions()
    first, _ = sessions.open("sg", "m1", connection=1)
    first.partitions[("t", 0)] = None
    second, old = sessions.open("sg", "m1", connection=2)
    assert old is first and old.partitions == {("t", 0): None}   # the caller releases them
    sessions.open("sg", "m2", connection=2)
    sessions.open("other", "m3", connection=3)
    gone = sessions.drop_connection(2)
    assert sorted(s.member_id for s in gone) == ["m1", "m2"]
    assert list(sessions.sessions) == [("other", "m3")]
    assert [s.member_id for s in sessions.drop_group("other")] == ["m3"] and not sessions.sessions


# -- a share session owns its acquisitions (the leave and the final acknowledgement race) --

LOCK_MS = 5_000
ACCEPT = (int(AckType.ACCEPT),)
PID = ("topic-id", 0)


def _member_with_records(now_ms: int = 0) -> tuple[ShareSessions, SharePartition]:
    """Member m of group sg holds offsets 0..4 of one share partition through its session."""
    sessions = ShareSessions()
    session, _ = sessions.open("sg", "m", connection=1)
    session.partitions[PID] = None
    session.advance()
    sp = SharePartition(0, limits=ShareLimits(record_lock_ms=LOCK_MS, delivery_limit=5, max_in_flight=100))
    assert sp.acquire("m", [LogBatch(0, 4)], 100, now_ms)
    return sessions, sp


def _close(sessions: ShareSessions, sp: SharePartition, member: str) -> None:
    """What the broker does when a session ends: drop it, release what its member holds."""
    session = sessions.sessions[("sg", member)]
    sessions.drop(session)
    sp.release_member(member)


def test_kip932_a_leave_before_the_final_acknowledgement_leaves_the_records_with_the_session():
    sessions, sp = _member_with_records()
    assert sessions.member_left("sg", "m") is False          # its session keeps its records
    assert sp.held_by("m") == [0, 1, 2, 3, 4]
    final = sessions.find("sg", "m", FINAL_EPOCH, connection=2)
    assert final.member_left
    assert sp.acknowledge("m", [AckBatch(0, 4, ACCEPT)], now_ms=10) is ErrorCode.NONE
    _close(sessions, sp, "m")
    assert sp.start == 5 and sp.first_to_read(0, 5, now_ms=LOCK_MS * 2) is None   # never again


def test_kip932_a_final_acknowledgement_before_the_leave_lands_and_the_leave_releases_nothing():
    sessions, sp = _member_with_records()
    sessions.find("sg", "m", FINAL_EPOCH, connection=1)
    assert sp.acknowledge("m", [AckBatch(0, 2, ACCEPT)], now_ms=10) is ErrorCode.NONE
    _close(sessions, sp, "m")                                  # 3 and 4 were not acknowledged
    assert sessions.member_left("sg", "m") is True            # no session: release now
    assert sp.release_member("m") is False                     # nothing left to release
    assert sp.start == 3 and sp.first_to_read(0, 5, now_ms=11) == 3


def test_kip932_a_member_that_left_and_never_closes_its_session_keeps_its_records_until_the_lock_expires():
    sessions, sp = _member_with_records()
    assert sessions.member_left("sg", "m") is False
    assert sp.first_to_read(0, 5, now_ms=LOCK_MS - 1) is None
    assert sp.first_to_read(0, 5, now_ms=LOCK_MS) == 0         # the lock ran out
    assert sp.acquire("other", [LogBatch(0, 4)], 100, LOCK_MS)[0].delivery_count == 2
    # A late final acknowledgement of the first member changes nothing.
    assert sp.acknowledge("m", [AckBatch(0, 4, ACCEPT)], now_ms=LOCK_MS + 1) is ErrorCode.INVALID_RECORD_STATE


def test_kip932_a_member_that_left_loses_its_records_when_its_connection_closes():
    sessions, sp = _member_with_records()
    assert sessions.member_left("sg", "m") is False
    (gone,) = sessions.drop_connection(1)
    assert gone.member_id == "m" and list(gone.partitions) == [PID]
    assert sp.release_member("m") is True and sp.first_to_read(0, 5, now_ms=1) == 0
