"""Kafka's ACLs as data: resource types, pattern types, operations, permissions, and the
bindings and filters made of them.

The names and numbers are Kafka's (``org.apache.kafka.common.resource.ResourceType``,
``PatternType``, ``org.apache.kafka.common.acl.AclOperation``, ``AclPermissionType``), as
they travel in CreateAcls, DescribeAcls and DeleteAcls and as ``kafka-acls.sh`` spells them.
``AclBinding.validate`` refuses what Kafka's broker refuses in CreateAcls, and
``AclFilter.matches`` selects bindings as Kafka's ``AclBindingFilter`` does (null
name/principal/host and ANY match anything; pattern MATCH selects every binding that applies
to a literal resource name). The broker's authorizer (``core/acls.py``), the client's admin
calls and the CLI share them.

This module is a leaf, like ``error_codes.py``: it imports nothing of kgroup and does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
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


class AclError(ValueError):
    """A binding or filter Kafka would refuse (the broker answers INVALID_REQUEST); the
    message says why."""


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not (permission) do what (operation) on
    which resources (type, name, LITERAL or PREFIXED)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def validate(self) -> AclBinding:
        """This binding if Kafka accepts it in CreateAcls; AclError otherwise."""
        if self.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
            raise AclError(f"invalid resource type {self.resource_type.name}")
        if self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise AclError(f"invalid pattern type {self.pattern_type.name} (LITERAL or PREFIXED)")
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise AclError(f"invalid operation {self.operation.name}")
        if self.permission not in (AclPermission.ALLOW, AclPermission.DENY):
            raise AclError(f"invalid permission type {self.permission.name} (ALLOW or DENY)")
        if not self.resource_name:
            raise AclError("resource name should not be empty")
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            raise AclError(f"the only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        kind, colon, name = self.principal.partition(":")
        if not colon or not kind or not name:
            raise AclError(f"could not parse principal {self.principal!r} (use Type:name, e.g. User:alice)")
        if not self.host:
            raise AclError("host should not be empty (use * for any host)")
        return self


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Which bindings DescribeAcls lists and DeleteAcls removes: None and ANY match
    anything; pattern MATCH selects the bindings that apply to the literal name."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermission = AclPermission.ANY

    def validate(self) -> AclFilter:
        """This filter if Kafka accepts it; AclError for UNKNOWN values."""
        for what, value in (("resource type", self.resource_type), ("pattern type", self.pattern_type),
                            ("operation", self.operation), ("permission type", self.permission)):
            if value == 0:
                raise AclError(f"filter has an unknown {what}")
        return self

    def matches(self, b: AclBinding) -> bool:
        """Whether binding ``b`` is selected by this filter."""
        if self.resource_type is not ResourceType.ANY and b.resource_type is not self.resource_type:
            return False
        if self.principal is not None and b.principal != self.principal:
            return False
        if self.host is not None and b.host != self.host:
            return False
        if self.operation is not AclOperation.ANY and b.operation is not self.operation:
            return False
        if self.permission is not AclPermission.ANY and b.permission is not self.permission:
            return False
        pattern, name = self.pattern_type, self.resource_name
        if pattern is PatternType.MATCH:
            if name is None:
                return True
            if b.pattern_type is PatternType.LITERAL:
                return b.resource_name in (name, WILDCARD)
            return b.pattern_type is PatternType.PREFIXED and name.startswith(b.resource_name)
        if pattern is not PatternType.ANY and b.pattern_type is not pattern:
            return False
        return name is None or b.resource_name == name
