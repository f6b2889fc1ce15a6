"""The security APIs on the wire: ACLs (DescribeAcls, CreateAcls, DeleteAcls), SCRAM
credentials (KIP-554: DescribeUserScramCredentials, AlterUserScramCredentials), and
SaslHandshake / SaslAuthenticate reaching a listener that is not SASL.

Who may call them is decided before (security/guards.py: DESCRIBE or ALTER on the cluster); here
each request is checked the way Kafka checks it and applied in one change of the store.

- ACL APIs without ``[auth] authorizer = true``: SECURITY_DISABLED, as Kafka answers when no
  authorizer is configured. A binding or filter Kafka refuses: INVALID_REQUEST with why.
- AlterUserScramCredentials: the client sends the salted password (the password never
  travels). Entries are checked in Kafka's controller's order (deletions, then upsertions;
  a user's first refusal sticks): an empty user name or iterations outside 4096–16384 →
  UNACCEPTABLE_CREDENTIAL, an unknown mechanism → UNSUPPORTED_SASL_MECHANISM, deleting a
  credential that does not exist → RESOURCE_NOT_FOUND, a user named again after an
  accepted entry → DUPLICATE_RESOURCE; one result per user.
- DescribeUserScramCredentials: every user (no names) or the named ones (unknown →
  RESOURCE_NOT_FOUND, twice → DUPLICATE_RESOURCE); mechanisms and iterations, never keys.
"""

from __future__ import annotations

import logging
from typing import Any

from kgroup.acl_bindings import AclOperation, AclPermission, PatternType, ResourceType
from kgroup.broker.security.security import Security
from kgroup.acl_bindings import AclBinding, AclError, AclFilter
from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item
from kgroup.wire.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramMechanism, credential_from_salted

log = logging.getLogger("kgroup.broker.security")
E = ErrorCode
NO_AUTHORIZER = "No Authorizer is configured on the broker ([auth] authorizer = true)"


def _binding(c: Any) -> AclBinding:
    return AclBinding(ResourceType.of(c.resource_type), c.resource_name, PatternType.of(c.resource_pattern_type),
                      c.principal, c.host, AclOperation.of(c.operation), AclPermission.of(c.permission_type))


def _filter(f: Any) -> AclFilter:
    return AclFilter(ResourceType.of(f.resource_type_filter), f.resource_name_filter,
                     PatternType.of(f.pattern_type_filter), f.principal_filter, f.host_filter,
                     AclOperation.of(f.operation), AclPermission.of(f.permission_type))


class SecurityApi:
    def __init__(self, security: Security) -> None:
        self.security = security

    # ---- SASL on a listener without SASL ---------------------------------------------------

    async def sasl_outside_sasl(self, header: RequestHeader, request: Any) -> Any:
        """SaslHandshake / SaslAuthenticate on a PLAINTEXT or SSL listener."""
        return build(response_class(header.api_key, header.api_version), error_code=E.ILLEGAL_SASL_STATE,
                     error_message="this listener does not use SASL", mechanisms=())

    # ---- ACLs ------------------------------------------------------------------------------

    async def describe_acls(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        if self.security.authorizer is None:
            return build(cls, error_code=E.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=())
        try:
            flt = AclFilter(ResourceType.of(request.resource_type_filter), request.resource_name_filter,
                            PatternType.of(request.pattern_type_filter), request.principal_filter,
                            request.host_filter, AclOperation.of(request.operation),
                            AclPermission.of(request.permission_type)).validate()
        except AclError as exc:
            return build(cls, error_code=E.INVALID_REQUEST, error_message=str(exc), resources=())
        resource_cls = item(cls, "resources")
        acl_cls = item(resource_cls, "acls")
        grouped: dict[tuple, list[AclBinding]] = {}
        for b in self.security.acl_store.acls.select(flt):
            grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(b)
        return build(cls, error_code=E.NONE, error_message="", resources=tuple(   # Kafka: "" on success
            build(resource_cls, resource_type=rtype, resource_name=name, pattern_type=pattern, acls=tuple(
                build(acl_cls, principal=b.principal, host=b.host, operation=b.operation,
                      permission_type=b.permission) for b in bindings))
            for (rtype, name, pattern), bindings in grouped.items()))

    async def create_acls(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        if self.security.authorizer is None:
            return build(cls, results=tuple(build(result_cls, error_code=E.SECURITY_DISABLED, error_message=NO_AUTHORIZER)
                                            for _ in request.creations))
        results: list[tuple[ErrorCode, str | None]] = []
        valid: list[AclBinding] = []
        for creation in request.creations:
            try:
                valid.append(_binding(creation).validate())
                results.append((E.NONE, ""))           # Kafka: "" on success
            except AclError as exc:
                results.append((E.INVALID_REQUEST, str(exc)))
        if valid:
            try:
                self.security.acl_store.add(valid)
                self.security.acls_changed()
                for b in valid:
                    log.info("ACL added: %s", _describe(b))
            except StorageError as exc:
                log.error("cannot store ACLs: %s", exc)
                results = [(E.UNKNOWN_SERVER_ERROR, "cannot store the ACLs") if code == E.NONE else (code, msg)
                           for code, msg in results]
        return build(cls, results=tuple(build(result_cls, error_code=code, error_message=msg)
                                        for code, msg in results))

    async def delete_acls(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "filter_results")
        match_cls = item(result_cls, "matching_acls")
        if self.security.authorizer is None:
            return build(cls, filter_results=tuple(
                build(result_cls, error_code=E.SECURITY_DISABLED, error_message=NO_AUTHORIZER, matching_acls=())
                for _ in request.filters))
        filters: list[AclFilter | AclError] = []
        for f in request.filters:
            try:
                filters.append(_filter(f).validate())
            except AclError as exc:
                filters.append(exc)
        try:
            removed = iter(self.security.acl_store.remove([f for f in filters if isinstance(f, AclFilter)]))
            self.security.acls_changed()
        except StorageError as exc:
            log.error("cannot store ACLs: %s", exc)
            return build(cls, filter_results=tuple(
                build(result_cls, error_code=E.UNKNOWN_SERVER_ERROR, error_message="cannot store the ACLs",
                      matching_acls=()) for _ in request.filters))
        results = []
        for f in filters:
            if isinstance(f, AclError):
                results.append(build(result_cls, error_code=E.INVALID_REQUEST, error_message=str(f), matching_acls=()))
                continue
            matched = next(removed)
            for b in matched:
                log.info("ACL removed: %s", _describe(b))
            results.append(build(result_cls, error_code=E.NONE, error_message=None, matching_acls=tuple(
                build(match_cls, error_code=E.NONE, error_message=None, resource_type=b.resource_type,
                      resource_name=b.resource_name, pattern_type=b.pattern_type, principal=b.principal,
                      host=b.host, operation=b.operation, permission_type=b.permission) for b in matched)))
        return build(cls, filter_results=tuple(results))

    # ---- SCRAM credentials (KIP-554) -----------------------------------------------------

    async def describe_user_scram_credentials(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        info_cls = item(result_cls, "credential_infos")
        users = self.security.credentials.users
        asked = [u.name for u in request.users] if request.users else sorted(users)
        results = []
        for name in dict.fromkeys(asked):
            if asked.count(name) > 1:
                code, msg, infos = E.DUPLICATE_RESOURCE, "cannot describe the same user twice in one request", ()
            elif name not in users:
                code, msg, infos = E.RESOURCE_NOT_FOUND, "attempt to describe a user credential that does not exist", ()
            else:
                code, msg = E.NONE, ""          # Kafka: "" on success, at both levels
                infos = tuple(build(info_cls, mechanism=int(m), iterations=c.iterations)
                              for m, c in sorted(users[name].items()))
            results.append(build(result_cls, user=name, error_code=code, error_message=msg, credential_infos=infos))
        return build(cls, error_code=E.NONE, error_message="", results=tuple(results))

    async def alter_user_scram_credentials(self, header: RequestHeader, request: Any) -> Any:
        cls = response_class(header.api_key, header.api_version)
        result_cls = item(cls, "results")
        store = self.security.credentials
        names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        # Kafka's controller takes the entries in order, deletions first: a user's first
        # refusal sticks; a user named again after an accepted entry is DUPLICATE_RESOURCE.
        errors: dict[str, tuple[ErrorCode, str]] = {}
        to_delete: dict[str, Any] = {}
        to_upsert: dict[str, Any] = {}
        duplicate = (E.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
        for d in request.deletions:
            if d.name in errors:
                continue
            if to_delete.pop(d.name, None) is not None:
                errors[d.name] = duplicate
                continue
            problem = _name_and_mechanism_problem(d.name, d.mechanism)
            if problem is None and store.scram(ScramMechanism(d.mechanism), d.name) is None:
                problem = (E.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")
            if problem is None:
                to_delete[d.name] = d
            else:
                errors[d.name] = problem
        for u in request.upsertions:
            if u.name in errors:
                continue
            if to_delete.pop(u.name, None) is not None or to_upsert.pop(u.name, None) is not None:
                errors[u.name] = duplicate
                continue
            problem = _name_and_mechanism_problem(u.name, u.mechanism) or _credential_problem(u)
            if problem is None:
                to_upsert[u.name] = u
            else:
                errors[u.name] = problem
        deletions = [(d.name, ScramMechanism(d.mechanism)) for d in to_delete.values()]
        upsertions = []
        for u in to_upsert.values():
            mech = ScramMechanism(u.mechanism)
            upsertions.append((u.name, mech, credential_from_salted(
                mech.hash_name, bytes(u.salted_password), bytes(u.salt), int(u.iterations))))
        if deletions or upsertions:
            try:
                store.alter(upsertions, deletions)
            except StorageError as exc:
                log.error("cannot store SCRAM credentials: %s", exc)
                for name, *_ in [*deletions, *upsertions]:
                    errors.setdefault(name, (E.UNKNOWN_SERVER_ERROR, "cannot store the credentials"))
            else:
                for name, mech, *_ in upsertions:
                    log.info("SCRAM credential set: user %s, %s", name, mech.sasl_name)
                for name, mech in deletions:
                    log.info("SCRAM credential deleted: user %s, %s", name, mech.sasl_name)
        return build(cls, results=tuple(
            build(result_cls, user=name, error_code=errors.get(name, (E.NONE, None))[0],
                  error_message=errors.get(name, (E.NONE, None))[1]) for name in dict.fromkeys(names)))


def _name_and_mechanism_problem(name: str, number: int) -> tuple[ErrorCode, str] | None:
    if not name:
        return (E.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    if number not in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        return (E.UNSUPPORTED_SASL_MECHANISM, f"Unknown SCRAM mechanism {number}")
    return None


def _credential_problem(u: Any) -> tuple[ErrorCode, str] | None:
    """Kafka checks the iterations only: a salt and salted password are taken as sent."""
    if u.iterations < MIN_ITERATIONS:
        return (E.UNACCEPTABLE_CREDENTIAL, f"Too few iterations ({u.iterations} < {MIN_ITERATIONS})")
    if u.iterations > MAX_ITERATIONS:
        return (E.UNACCEPTABLE_CREDENTIAL, f"Too many iterations ({u.iterations} > {MAX_ITERATIONS})")
    return None


def _describe(b: AclBinding) -> str:
    return (f"{b.principal} {b.permission.name} {b.operation.name} on {b.resource_type.name} "
            f"{b.pattern_type.name} {b.resource_name!r} from host {b.host}")

