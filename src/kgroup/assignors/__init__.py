"""Client-side and server-side partition assignors and ConsumerProtocol bytes (pure, no I/O)."""

from kgroup.assignors.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.assignors.interface import COOPERATIVE, EAGER, ClientAssignor, JoinFollower, ServerAssignor
from kgroup.assignors.registry import (
    UnknownAssignor,
    client_assignor_names,
    get_client_assignor,
    get_server_assignor,
    server_assignor_names,
)
from kgroup.assignors.spec import Assignment, ClientMember, GroupSpec, MemberSpec, Subscription

__all__ = [
    "COOPERATIVE", "EAGER", "Assignment", "ClientAssignor", "ClientMember", "JoinFollower",
    "ConsumerProtocolError", "GroupSpec", "MemberSpec", "ServerAssignor", "Subscription",
    "UnknownAssignor", "client_assignor_names", "decode_assignment", "decode_subscription",
    "encode_assignment", "encode_subscription", "get_client_assignor", "get_server_assignor",
    "server_assignor_names",
]
