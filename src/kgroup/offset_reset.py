"""The rule every offset reset follows, from the CLI (`kgroup groups reset-offsets`) and the
web console alike: only an inactive group (Empty, or Dead) has its offsets changed, and a
refusal says so in Kafka's words (kafka-consumer-groups.sh's), naming the state and members.
"""

from __future__ import annotations

INACTIVE = ("Empty", "Dead")


def reset_refused(group: str, state: str, members: int) -> str | None:
    """Why `group` cannot have its offsets reset now; None when it can."""
    if state in INACTIVE:
        return None
    return (f"assignments can only be reset if the group {group!r} is inactive, but the current "
            f"state is {state} ({members} member(s))")
