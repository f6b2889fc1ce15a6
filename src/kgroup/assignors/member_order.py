"""The order client-side assignors walk members in.

Kafka sorts static members (with a group.instance.id) first, by instance id, then dynamic
members by member id, so a restarting static member lands in the same slot whatever
member id it gets.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgroup.assignors.spec import ClientMember


def member_sort_key(member: ClientMember) -> tuple[int, str, str]:
    """Sort key: static members first by instance id, then dynamic ones by member id."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id, member.member_id)
    return (1, member.member_id, "")


def ordered_members(members: Mapping[str, ClientMember]) -> list[ClientMember]:
    """Members in Kafka's assignor order."""
    return sorted(members.values(), key=member_sort_key)
