"""The exception the core raises with a Kafka error code.

Errors are raised inside the core and turned into response fields only at the wire edge
(docs/architecture.md). Per-item errors of batch APIs (one per partition, group or member) travel in
the response instead, because the rest of the batch still succeeds. The codes themselves
are ``kgroup.error_codes.ErrorCode``, shared by every layer; it is re-exported here so the
core's modules keep importing it from ``kgroup.core.errors``.
"""

from __future__ import annotations

from kgroup.error_codes import ErrorCode

__all__ = ["ErrorCode", "GroupError", "IllegalGroupTransition"]


class GroupError(Exception):
    """A request failed as a whole with a Kafka error code.

    Handlers raise it before they change anything, so a raised request leaves the
    coordinator exactly as it was.
    """

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
        self.message = message


class IllegalGroupTransition(RuntimeError):
    """A bug: some handler tried a move a group's or member's transition table forbids."""
