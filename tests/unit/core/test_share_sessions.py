"""Share sessions (KIP-932): the ShareSessionEpoch rules, pure."""

from __future__ import annotations

import pytest

from kgroup.core.errors import ErrorCode, GroupError
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
