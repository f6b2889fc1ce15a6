"""Share sessions (KIP-932): what ShareFetch and ShareAcknowledge carry from one request of
a member to the next.

How this works: a session is keyed by (group id, member id) and remembers the partitions the
member fetches, the epoch its next request must carry, and the connection it came on.
ShareSessionEpoch 0 opens a session (replacing the member's old one, whose records the
caller releases); a positive epoch must be the one expected (else INVALID_SHARE_SESSION_EPOCH,
and the session is dropped so the client opens a new one), or SHARE_SESSION_NOT_FOUND when
there is none; -1 closes the session after its acknowledgements. A connection that closes
takes its sessions with it (`drop_connection`), and the caller releases their records at
once, as Kafka's share session cache does. Pure: the broker passes connection ids.

The records a member acquired belong to its share session, not to its group membership: a
member that leaves its share group (ShareGroupHeartbeat epoch -1) while its session is open
keeps them until the session's final request (epoch -1, whose acknowledgements are applied
first) or its connection closes, or until their locks run out (`member_left` says which).
A closing client sends the leave and the final ShareAcknowledge at once, so they may arrive
in either order; either way its last ACCEPTs land and nothing it accepted is delivered again.
A session whose member left acquires nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kgroup.core.errors import ErrorCode, GroupError

OPEN_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

SessionKey = tuple[str, str]                    # (group id, member id)
SharePartitionId = tuple[str, int]              # (topic id, partition)


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection: int
    next_epoch: int = 0                     # moved to 1 by the request that opened it
    # The partitions it fetches, in the order the member named them.
    partitions: dict[SharePartitionId, None] = field(default_factory=dict)
    # Where the next fetch starts its pass over `partitions` (so none starves).
    rotation: int = 0
    # The member left its share group: the session holds what it has until it closes.
    member_left: bool = False

    def advance(self) -> None:
        """The request went through: the next one carries the next epoch."""
        self.next_epoch = 1 if self.next_epoch >= _MAX_EPOCH else self.next_epoch + 1


class ShareSessions:
    """Every share session of this broker."""

    def __init__(self) -> None:
        self.sessions: dict[SessionKey, ShareSession] = {}

    def open(self, group_id: str, member_id: str, connection: int) -> tuple[ShareSession, ShareSession | None]:
        """A new session for the member (epoch 0), and the one it replaces, if any."""
        old = self.sessions.pop((group_id, member_id), None)
        session = self.sessions[(group_id, member_id)] = ShareSession(group_id, member_id, connection)
        return session, old

    def find(self, group_id: str, member_id: str, epoch: int, connection: int) -> ShareSession:
        """The session a request with a non-zero epoch continues (or closes)."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise GroupError(ErrorCode.SHARE_SESSION_NOT_FOUND,
                             f"no share session for member {member_id} of group {group_id}")
        if epoch != FINAL_EPOCH and epoch != session.next_epoch:
            raise GroupError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"share session epoch {epoch}, expected {session.next_epoch}")
        session.connection = connection
        return session

    def drop(self, session: ShareSession) -> None:
        if self.sessions.get((session.group_id, session.member_id)) is session:
            del self.sessions[(session.group_id, session.member_id)]

    def drop_member(self, group_id: str, member_id: str) -> ShareSession | None:
        return self.sessions.pop((group_id, member_id), None)

    def member_left(self, group_id: str, member_id: str) -> bool:
        """The member left its share group. True: it has no session, so the caller releases
        what it holds now; False: its session keeps its records until the session closes
        (its final request, or its connection) or their locks run out."""
        session = self.sessions.get((group_id, member_id))
        if session is None:
            return True
        session.member_left = True
        return False

    def drop_connection(self, connection: int) -> list[ShareSession]:
        """Remove and return the sessions that came on `connection`."""
        gone = [s for s in self.sessions.values() if s.connection == connection]
        for session in gone:
            del self.sessions[(session.group_id, session.member_id)]
        return gone

    def drop_group(self, group_id: str) -> list[ShareSession]:
        gone = [s for s in self.sessions.values() if s.group_id == group_id]
        for session in gone:
            del self.sessions[(session.group_id, session.member_id)]
        return gone
