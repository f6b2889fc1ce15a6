"""Kafka's ACL vocabulary: resource types, pattern types, operations, permissions.

The names and numbers are Kafka's (``org.apache.kafka.common.resource.ResourceType``,
``PatternType``, ``org.apache.kafka.common.acl.AclOperation``, ``AclPermissionType``), as
they travel in CreateAcls, DescribeAcls and DeleteAcls and as ``kafka-acls.sh`` spells them.
The broker's authorizer (``core/acls.py``), the client's admin calls and the CLI share them.

This module is a leaf, like ``error_codes.py``: it imports nothing of kgroup and does no I/O.
"""

from __future__ import annotations

from enum import IntEnum


class _Named(IntEnum):
    @classmethod
    def parse(cls, text: str) -> _Named:
        """A member from its name in any case, with '-' for '_' (``transactional-id``);
        ValueError naming the choices otherwise."""
        key = text.strip().upper().replace("-", "_")
        try:
            return cls[key]
        except KeyError:
            choices = ", ".join(m.name for m in cls if m.name != "UNKNOWN")
            raise ValueError(f"unknown {cls.__name__} {text!r} (one of {choices})") from None

    @classmethod
    def of(cls, value: int) -> _Named:
        """The member for a number off the wire; UNKNOWN for a number this list lacks."""
        try:
            return cls(value)
        except ValueError:
            return cls(0)


class ResourceType(_Named):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(_Named):
    UNKNOWN = 0
    ANY = 1        # filters only: any pattern type, exact name
    MATCH = 2      # filters only: every binding that applies to the named resource
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Named):
    UNKNOWN = 0
    ANY = 1        # filters only
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermission(_Named):
    UNKNOWN = 0
    ANY = 1        # filters only
    DENY = 2
    ALLOW = 3


# The one cluster resource's name (Kafka's "kafka-cluster").
CLUSTER_NAME = "kafka-cluster"
# The literal resource name and the principal and host that match every other one.
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
