"""Exceptions raised by the asyncio client (connection and admin).

Every exception carries a one-line ``str`` saying what went wrong and a ``hint`` saying how
to fix it, so the CLI can print ``kgroup: error: <what> — <hint>`` without a traceback.
Broker error codes are ``kgroup.error_codes.ErrorCode`` members, reported by Kafka's name.
"""

from __future__ import annotations

from typing import Any

from kgroup.error_codes import ErrorCode


def error_name(code: int) -> str:
    """The Kafka name of an error code, e.g. 16 -> NOT_COORDINATOR."""
    return ErrorCode(int(code)).name


def error_code(name: str) -> ErrorCode:
    """The code of a Kafka error name (either case), e.g. NOT_COORDINATOR -> 16."""
    return ErrorCode[name.upper()]


class KafkaClientError(Exception):
    """Base class: ``str(exc)`` is what is wrong, ``exc.hint`` how to fix it."""

    hint = "check the broker log and the command's arguments"

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class KafkaConnectionError(KafkaClientError):
    """Could not connect to host:port, or the broker closed the connection."""

    hint = "check that the broker is running and --bootstrap-server points at it"


class AuthenticationError(KafkaClientError):
    """The broker refused our SASL credentials or mechanism (not retried)."""

    hint = "check sasl.mechanism, sasl.username and sasl.password (e.g. in --command-config)"


class RequestTimeout(KafkaClientError):
    """The broker did not answer a request in time."""

    hint = "the broker may be overloaded or stuck; retry or raise the timeout"


class UnsupportedApi(KafkaClientError):
    """The broker does not serve an API at any version we speak."""

    hint = "use a broker that supports this API (kgroup serve does)"


class ProtocolError(KafkaClientError):
    """The broker sent bytes we cannot decode, or answered an unknown correlation id."""

    hint = "the broker is not speaking the Kafka protocol we expect; check the address"


class BrokerError(KafkaClientError):
    """A broker answered with a non-zero error code."""

    _HINTS = {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "check the name with `kgroup topics list`",
        ErrorCode.TOPIC_ALREADY_EXISTS: "pick another name or delete the topic first",
        ErrorCode.INVALID_PARTITIONS:
            "use a partition count of at least 1 (and more than today's for create-partitions)",
        ErrorCode.INVALID_REPLICATION_FACTOR: "use a replication factor from 1 to the number of brokers (or -1)",
        ErrorCode.GROUP_ID_NOT_FOUND: "check the name with `kgroup groups list`",
        ErrorCode.NON_EMPTY_GROUP: "stop every consumer of the group first",
        ErrorCode.UNKNOWN_MEMBER_ID: "the group has active members; stop them first",
        ErrorCode.ILLEGAL_GENERATION: "the group has active members; stop them first",
        ErrorCode.REBALANCE_IN_PROGRESS: "the group is rebalancing; stop its consumers and retry",
        ErrorCode.COORDINATOR_NOT_AVAILABLE: "the coordinator is starting; retry in a moment",
        ErrorCode.NOT_COORDINATOR: "the coordinator moved; retry in a moment",
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            "the coordinator is loading groups; retry in a moment",
        ErrorCode.OFFSET_OUT_OF_RANGE: "pick an offset between the earliest and latest offsets",
        ErrorCode.INVALID_TOPIC_EXCEPTION: "use letters, digits, '.', '_' and '-' (at most 249)",
        ErrorCode.POLICY_VIOLATION: "the broker's topic policy refused it; see the broker log",
        ErrorCode.INVALID_CONFIG: "check the --config names and values",
        ErrorCode.UNKNOWN_TOPIC_ID: "the topic was deleted or recreated; retry",
        ErrorCode.FENCED_INSTANCE_ID: "another member uses that group.instance.id",
        ErrorCode.TOPIC_AUTHORIZATION_FAILED: "ask an admin for an ACL on the topic (`kgroup acls add`)",
        ErrorCode.GROUP_AUTHORIZATION_FAILED: "ask an admin for an ACL on the group (`kgroup acls add`)",
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "this needs an ACL on the cluster, or a super user",
        ErrorCode.SECURITY_DISABLED: "the broker runs without an authorizer ([auth] authorizer = true)",
        ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "the broker signs no tokens ([auth] delegation_token_secret_key)",
        ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:
            "connect with SASL or an SSL client certificate (--command-config), not with a token",
        ErrorCode.DELEGATION_TOKEN_NOT_FOUND: "check the HMAC with `kgroup tokens describe`",
        ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: "only the token's owner or a renewer may do that",
        ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED:
            "a token for another owner needs CreateTokens on that User (`kgroup acls`) or a super user",
        ErrorCode.DELEGATION_TOKEN_EXPIRED: "the token expired; create a new one",
    }

    def __init__(self, code: int, context: str = "", message: str | None = None) -> None:
        self.code = ErrorCode(int(code))
        self.name = self.code.name
        self.context = context
        text = f"{context}: {self.name}" if context else self.name
        if message:
            text += f" ({message})"
        super().__init__(text, self._HINTS.get(self.code))


class GroupNotEmpty(KafkaClientError):
    """An admin operation that needs an Empty group found it with members."""

    hint = "stop every consumer of the group and retry (static members whose processes are gone: remove them by instance id)"


def error_code_of(obj: Any, name: str = "error_code") -> int:
    """The error code field ``name`` of a response or one of its items (0 if absent)."""
    return int(getattr(obj, name, 0) or 0)


def raise_for(code: int, context: str, message: str | None = None) -> None:
    """Raise BrokerError for a non-zero ``code``: what failed (``context``) and why."""
    if code:
        raise BrokerError(code, context, message)
