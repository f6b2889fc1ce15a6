"""ACL decisions: principal, host, operation, resource -> allowed or not, as Kafka decides.

How this works: an ``AclSet`` is an immutable, indexed set of ``AclBinding`` (a resource
pattern — type, name, LITERAL or PREFIXED — and an entry — principal, host, operation,
ALLOW or DENY). An ``Authorizer`` holds one AclSet plus the super users and
``allow_everyone_if_no_acl``, and answers ``authorize(principal, host, op, type, name)``
with Kafka's rules (its ``AclAuthorizer``/``StandardAuthorizer``):

1. a super user is allowed everything;
2. the bindings that apply to the resource are the LITERAL ones on its name, the LITERAL
   ones on ``*`` and the PREFIXED ones whose prefix starts the name;
3. none apply: allowed only with ``allow_everyone_if_no_acl``;
4. a DENY that matches the principal (or ``User:*``), the host (or ``*``) and the operation
   (or ALL) refuses, whatever ALLOWs say — DENY wins;
5. otherwise an ALLOW must match the same way, where READ, WRITE, DELETE and ALTER also
   allow DESCRIBE, and ALTER_CONFIGS also allows DESCRIBE_CONFIGS (implied operations; a
   DENY is never implied: denying READ does not deny DESCRIBE).

``authorize_by_type`` answers "may the principal do OP on some resource of this type"
(Kafka's ``authorizeByResourceType``, used e.g. for an idempotent producer that has WRITE
on some topic). Changing ACLs makes a new AclSet and a new Authorizer; an Authorizer keeps
a bounded cache of its own answers, since clients ask the same questions (heartbeats,
fetches) many times a second.

Pure: no I/O, no clock. The bindings and filters themselves (with Kafka's validation and
filter matching) are in the leaf ``kgroup/acl_bindings.py``, shared with the client.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType

from kgroup.acl_bindings import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kgroup.error_codes import ErrorCode

Op = AclOperation

# Operations an ACL on each resource type can grant (Kafka's AclEntry.supportedOperations):
# what DescribeGroups, Metadata and ConsumerGroupDescribe report as authorized operations.
SUPPORTED_OPERATIONS = MappingProxyType({
    ResourceType.TOPIC: (Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER,
                         Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS),
    ResourceType.CLUSTER: (Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS,
                           Op.IDEMPOTENT_WRITE, Op.ALTER, Op.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE, Op.TWO_PHASE_COMMIT),
    ResourceType.DELEGATION_TOKEN: (Op.DESCRIBE,),
    ResourceType.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
})

# An ALLOW of any of these operations also allows the key (Kafka's implied operations).
IMPLIED_BY = MappingProxyType({
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.ALL}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.ALL}),
})

# The error a refused request gets, by the type of the resource it was refused on.
AUTHORIZATION_ERROR = MappingProxyType({
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
})

_CACHE_LIMIT = 1 << 16


@dataclass(frozen=True, slots=True)
class AclSet:
    """An immutable set of bindings, indexed by resource type for ``Authorizer``."""

    bindings: frozenset[AclBinding] = frozenset()
    # type -> literal name -> bindings; type -> [(prefix, binding)]
    _literal: dict = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    _prefixed: dict = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        prefixed: dict[ResourceType, list[AclBinding]] = {}
        for b in sorted(self.bindings):
            if b.pattern_type is PatternType.LITERAL:
                literal.setdefault(b.resource_type, {}).setdefault(b.resource_name, []).append(b)
            else:
                prefixed.setdefault(b.resource_type, []).append(b)
        object.__setattr__(self, "_literal", literal)
        object.__setattr__(self, "_prefixed", prefixed)

    def __len__(self) -> int:
        return len(self.bindings)

    def applying_to(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """The bindings that apply to one resource (rule 2 of the module comment)."""
        by_name = self._literal.get(resource_type, {})
        found = list(by_name.get(name, ()))
        if name != WILDCARD:
            found += by_name.get(WILDCARD, ())
        found += [b for b in self._prefixed.get(resource_type, ()) if name.startswith(b.resource_name)]
        return found

    def of_type(self, resource_type: ResourceType) -> list[AclBinding]:
        literal = [b for bs in self._literal.get(resource_type, {}).values() for b in bs]
        return literal + list(self._prefixed.get(resource_type, ()))

    def select(self, flt: AclFilter) -> list[AclBinding]:
        """The bindings ``flt`` matches, in a stable order."""
        return sorted(b for b in self.bindings if flt.matches(b))

    def adding(self, bindings: Iterable[AclBinding]) -> AclSet:
        return AclSet(self.bindings | frozenset(bindings))

    def removing(self, bindings: Iterable[AclBinding]) -> AclSet:
        return AclSet(self.bindings - frozenset(bindings))


def _entry_matches(b: AclBinding, principal: str, host: str) -> bool:
    return (b.principal == principal or b.principal == WILDCARD_PRINCIPAL) and (b.host == host or b.host == WILDCARD)


class Authorizer:
    """Kafka's authorization rules over one AclSet (see the module comment)."""

    def __init__(self, acls: AclSet = AclSet(), super_users: Iterable[str] = (),
                 allow_everyone_if_no_acl: bool = False) -> None:
        self.acls = acls
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl = allow_everyone_if_no_acl
        self._cache: dict[tuple, bool] = {}

    def with_acls(self, acls: AclSet) -> Authorizer:
        """The same settings over other ACLs."""
        return Authorizer(acls, self.super_users, self.allow_everyone_if_no_acl)

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """Whether ``principal`` connecting from ``host`` may do ``operation`` on the
        resource ``resource_type``/``name``."""
        key = (principal, host, operation, resource_type, name)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        allowed = self._decide(principal, host, operation, resource_type, name)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[key] = allowed
        return allowed

    def _decide(self, principal: str, host: str, operation: AclOperation,
                resource_type: ResourceType, name: str) -> bool:
        # 1. Super users.
        if principal in self.super_users:
            return True
        # 2-3. The bindings on this resource; none at all.
        applying = self.acls.applying_to(resource_type, name)
        if not applying:
            return self.allow_everyone_if_no_acl
        # 4. DENY wins (exact operation or ALL; never implied).
        for b in applying:
            if (b.permission is AclPermission.DENY and b.operation in (operation, Op.ALL)
                    and _entry_matches(b, principal, host)):
                return False
        # 5. An ALLOW of the operation, ALL, or an operation that implies it.
        granting = IMPLIED_BY.get(operation) or (operation, Op.ALL)
        return any(b.permission is AclPermission.ALLOW and b.operation in granting
                   and _entry_matches(b, principal, host) for b in applying)

    def authorize_by_type(self, principal: str, host: str, operation: AclOperation,
                          resource_type: ResourceType) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of
        ``resource_type``: an ALLOW (LITERAL or PREFIXED) that no DENY of its name, of a
        prefix of it, or of the wildcard covers (Kafka's authorizeByResourceType)."""
        if principal in self.super_users:
            return True
        of_type = self.acls.of_type(resource_type)
        if not of_type:
            return self.allow_everyone_if_no_acl
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[AclBinding] = []
        for b in of_type:
            if b.operation not in (operation, Op.ALL) or not _entry_matches(b, principal, host):
                continue
            if b.permission is AclPermission.DENY:
                if b.pattern_type is PatternType.LITERAL and b.resource_name == WILDCARD:
                    return False
                (deny_literal if b.pattern_type is PatternType.LITERAL else deny_prefixed).add(b.resource_name)
            elif b.permission is AclPermission.ALLOW:
                if b.pattern_type is PatternType.LITERAL and b.resource_name == WILDCARD:
                    return True
                allows.append(b)
        for b in allows:
            if b.pattern_type is PatternType.LITERAL and b.resource_name in deny_literal:
                continue
            name = b.resource_name
            if not any(name[:i] in deny_prefixed for i in range(1, len(name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """The operations allowed on a resource as Kafka's 32-bit field (bit n: operation n)."""
        return operations_field(op for op in SUPPORTED_OPERATIONS.get(resource_type, ())
                                if self.authorize(principal, host, op, resource_type, name))


def operations_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's 32-bit authorized-operations field: bit n set for operation n."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits


def all_operations(resource_type: ResourceType) -> int:
    """Every operation a resource type supports, as the field: what a broker without an
    authorizer reports as authorized (Kafka's AuthHelper.authorizedOperations)."""
    return operations_field(SUPPORTED_OPERATIONS.get(resource_type, ()))
