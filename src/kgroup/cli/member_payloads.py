"""What ``kgroup groups describe`` shows of a member's metadata and assignment bytes.

A group of any protocol type has members with opaque metadata (what they sent with
JoinGroup) and assignments (what the leader gave them): ``--members --verbose`` shows their
sizes, and the assignment decoded where the type is known — partitions of a ``consumer``
group, tasks of a ``kgroup-tasks`` group, who leads a ``kgroup-leader`` group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kgroup.assignors import leader_protocol, task_protocol
from kgroup.assignors.protocol_bytes import ProtocolBytesError
from kgroup.client.admin import GroupDescription, MemberDescription


def kafka_assignment(partitions: Mapping[str, Sequence[int]]) -> str:
    """Partitions as Kafka 4.4's group tools print them: ``topic:0,1`` per topic, partitions
    in numeric order, the topics' texts sorted and joined by ``;`` (empty: nothing)."""
    return ";".join(sorted(f"{t}:{','.join(map(str, sorted(ps)))}" for t, ps in partitions.items() if ps))


def assignment_text(group: GroupDescription, member: MemberDescription) -> str:
    """The member's assignment as text: partitions (Kafka's ``topic:0,1;other:2``), tasks, leader or follower, or
    ``opaque`` for a protocol type kgroup does not know (``-``: nothing assigned)."""
    if member.assignment is not None:
        return kafka_assignment(member.assignment) or "-"
    raw = member.assignment_bytes
    try:
        if group.protocol_type == task_protocol.PROTOCOL_TYPE:
            return ",".join(task_protocol.decode_tasks(raw)) or "-"
        if group.protocol_type == leader_protocol.PROTOCOL_TYPE:
            election = leader_protocol.decode_election(raw)
            if election is None:
                return "-"
            return "leader" if election.leader == member.member_id else "follower"
    except ProtocolBytesError:
        return f"unreadable {group.protocol_type}"
    return "opaque" if raw else "-"
