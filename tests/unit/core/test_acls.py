"""Kafka's authorization rules on the pure authorizer: literal, wildcard and prefixed
resources, principals and hosts, DENY over ALLOW, implied operations, super users, filters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kgroup.acl_bindings import AclOperation as Op
from kgroup.acl_bindings import AclPermission as Perm
from kgroup.acl_bindings import PatternType as Pat
from kgroup.acl_bindings import ResourceType as Res
from kgroup.acl_bindings import AclBinding, AclError, AclFilter
from kgroup.core.acls import AclSet, Authorizer

ALICE, BOB = "User:alice", "User:bob"
HOST = "10.0.0.1"


def acl(rtype=Res.TOPIC, name="orders", principal=ALICE, op=Op.READ, perm=Perm.ALLOW,
        pattern=Pat.LITERAL, host="*") -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authz(*bindings: AclBinding, **kw) -> Authorizer:
    return Authorizer(AclSet(frozenset(bindings)), **kw)


def test_no_acl_denies_unless_allow_everyone_if_no_acl() -> None:
    assert not authz().authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert authz(allow_everyone_if_no_acl=True).authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    # An ACL on the resource for someone else: no longer "no ACL", so nobody else passes.
    a = authz(acl(principal=BOB), allow_everyone_if_no_acl=True)
    assert not a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "payments")


def test_literal_wildcard_and_prefixed_resources() -> None:
    a = authz(acl(name="orders"), acl(name="*", op=Op.WRITE), acl(name="pay-", pattern=Pat.PREFIXED, op=Op.DELETE))
    assert a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders2")
    assert a.authorize(ALICE, HOST, Op.WRITE, Res.TOPIC, "anything")
    assert a.authorize(ALICE, HOST, Op.DELETE, Res.TOPIC, "pay-eu")
    assert not a.authorize(ALICE, HOST, Op.DELETE, Res.TOPIC, "pa")
    assert not a.authorize(ALICE, HOST, Op.READ, Res.GROUP, "orders")  # other resource type


def test_principal_and_host_wildcards() -> None:
    a = authz(acl(principal="User:*", host=HOST), acl(name="logs", host="*"))
    assert a.authorize(BOB, HOST, Op.READ, Res.TOPIC, "orders")
    assert not a.authorize(BOB, "10.0.0.2", Op.READ, Res.TOPIC, "orders")
    assert a.authorize(ALICE, "10.9.9.9", Op.READ, Res.TOPIC, "logs")
    assert not a.authorize(BOB, "10.9.9.9", Op.READ, Res.TOPIC, "logs")


def test_deny_wins_over_allow_including_all_and_wildcards() -> None:
    a = authz(acl(op=Op.ALL), acl(name="*", op=Op.WRITE, perm=Perm.DENY, principal="User:*"))
    assert a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, Op.WRITE, Res.TOPIC, "orders")
    b = authz(acl(op=Op.READ), acl(name="ord", pattern=Pat.PREFIXED, op=Op.ALL, perm=Perm.DENY, host=HOST))
    assert not b.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    assert b.authorize(ALICE, "10.0.0.2", Op.READ, Res.TOPIC, "orders")


def test_implied_operations_describe_and_describe_configs() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert authz(acl(op=op)).authorize(ALICE, HOST, Op.DESCRIBE, Res.TOPIC, "orders"), op
    assert not authz(acl(op=Op.CREATE)).authorize(ALICE, HOST, Op.DESCRIBE, Res.TOPIC, "orders")
    assert authz(acl(op=Op.ALTER_CONFIGS)).authorize(ALICE, HOST, Op.DESCRIBE_CONFIGS, Res.TOPIC, "orders")
    assert not authz(acl(op=Op.DESCRIBE)).authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")
    # A DENY is never implied: denying READ leaves DESCRIBE (granted by READ? no: by ALL).
    a = authz(acl(op=Op.ALL), acl(op=Op.READ, perm=Perm.DENY))
    assert a.authorize(ALICE, HOST, Op.DESCRIBE, Res.TOPIC, "orders")
    assert not a.authorize(ALICE, HOST, Op.READ, Res.TOPIC, "orders")


def test_super_users_pass_everything_even_deny() -> None:
    a = authz(acl(op=Op.ALL, perm=Perm.DENY, principal="User:admin"), super_users=["User:admin"])
    assert a.authorize("User:admin", HOST, Op.DELETE, Res.GROUP, "g")
    assert a.authorize_by_type("User:admin", HOST, Op.WRITE, Res.TOPIC)


def test_authorize_by_type_kafka_rules() -> None:
    assert authz(acl(op=Op.WRITE)).authorize_by_type(ALICE, HOST, Op.WRITE, Res.TOPIC)
    assert not authz(acl(op=Op.READ)).authorize_by_type(ALICE, HOST, Op.WRITE, Res.TOPIC)
    # The allowed literal is denied by a prefix of it; another allow survives.
    a = authz(acl(op=Op.WRITE), acl(name="ord", pattern=Pat.PREFIXED, op=Op.WRITE, perm=Perm.DENY))
    assert not a.authorize_by_type(ALICE, HOST, Op.WRITE, Res.TOPIC)
    assert a.with_acls(a.acls.adding([acl(name="x", op=Op.WRITE)])).authorize_by_type(ALICE, HOST, Op.WRITE, Res.TOPIC)
    assert not authz(acl(name="*", op=Op.WRITE), acl(name="*", op=Op.WRITE, perm=Perm.DENY)).authorize_by_type(
        ALICE, HOST, Op.WRITE, Res.TOPIC)


def test_authorized_operations_bit_field() -> None:
    bits = authz(acl(rtype=Res.GROUP, name="g", op=Op.READ)).authorized_operations(ALICE, HOST, Res.GROUP, "g")
    assert bits == (1 << Op.READ) | (1 << Op.DESCRIBE)


@pytest.mark.parametrize("binding,match", [
    (acl(rtype=Res.ANY), "resource type"),
    (acl(pattern=Pat.MATCH), "pattern type"),
    (acl(op=Op.ANY), "operation"),
    (acl(perm=Perm.ANY), "permission"),
    (acl(name=""), "empty"),
    (acl(rtype=Res.CLUSTER, name="mine"), "kafka-cluster"),
    (acl(principal="alice"), "principal"),
    (acl(host=""), "host"),
])
def test_invalid_bindings_are_refused(binding: AclBinding, match: str) -> None:
    with pytest.raises(AclError, match=match):
        binding.validate()


def test_filters_match_like_kafka() -> None:
    lit, star, pre = acl(name="orders"), acl(name="*"), acl(name="ord", pattern=Pat.PREFIXED)
    other = acl(name="orders", rtype=Res.GROUP, principal=BOB, op=Op.DESCRIBE, perm=Perm.DENY, host=HOST)
    acls = AclSet(frozenset({lit, star, pre, other}))
    assert acls.select(AclFilter()) == sorted([lit, star, pre, other])
    assert acls.select(AclFilter(Res.TOPIC, "orders", Pat.MATCH)) == sorted([lit, star, pre])
    assert acls.select(AclFilter(Res.TOPIC, "orders", Pat.ANY)) == [lit]
    assert acls.select(AclFilter(Res.TOPIC, "ord", Pat.PREFIXED)) == [pre]
    assert acls.select(AclFilter(Res.TOPIC, "ord", Pat.LITERAL)) == []
    assert acls.select(AclFilter(principal=BOB)) == [other]
    assert acls.select(AclFilter(host=HOST, operation=Op.DESCRIBE, permission=Perm.DENY)) == [other]
    with pytest.raises(AclError):
        AclFilter(resource_type=Res.UNKNOWN).validate()


names = st.sampled_from(["orders", "ord", "o", "payments", "*"])
principals = st.sampled_from([ALICE, BOB, "User:*"])
ops = st.sampled_from([Op.ALL, Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE, Op.ALTER])
bindings = st.builds(AclBinding, st.just(Res.TOPIC), names, st.sampled_from([Pat.LITERAL, Pat.PREFIXED]),
                     principals, st.sampled_from(["*", HOST]), ops, st.sampled_from([Perm.ALLOW, Perm.DENY]))


@given(st.frozensets(bindings, max_size=8), st.sampled_from(["orders", "payments", "o"]),
       st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE]), st.booleans())
def test_a_matching_deny_always_refuses_and_removing_acls_never_grants_more(acls, name, op, everyone) -> None:
    a = authz(*acls, allow_everyone_if_no_acl=everyone)
    deny = acl(name=name, op=op, perm=Perm.DENY)
    assert not a.with_acls(a.acls.adding([deny])).authorize(ALICE, HOST, op, Res.TOPIC, name)
    # Removing ALLOWs never turns a refusal into a grant, unless no ACL is left on the
    # resource and allow_everyone_if_no_acl is on.
    only_denies = authz(*(b for b in acls if b.permission is Perm.DENY), allow_everyone_if_no_acl=everyone)
    if not a.authorize(ALICE, HOST, op, Res.TOPIC, name) and only_denies.acls.applying_to(Res.TOPIC, name):
        assert not only_denies.authorize(ALICE, HOST, op, Res.TOPIC, name)
