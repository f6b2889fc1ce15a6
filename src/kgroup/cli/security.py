"""``kgroup users`` and ``kgroup acls``: SCRAM credentials and ACLs.

``kgroup users add|list|delete`` works on a data dir directly with ``--data-dir DIR`` — with
no broker running, to create the first admin (the broker picks up the change within a second
if it runs) — or over the wire with AlterUserScramCredentials / DescribeUserScramCredentials
(an admin's ``--command-config``). The password comes from stdin (``--password-stdin``, one
line) or, at a terminal, a prompt; it is never printed, logged or stored (only the salted
credential is), and ``users list`` shows mechanisms and iteration counts only.

``kgroup acls add|list|remove`` takes kafka-acls.sh's option names: ``--allow-principal``,
``--deny-principal``, ``--allow-host``, ``--deny-host``, ``--operation``, ``--topic``,
``--group``, ``--cluster``, ``--transactional-id``, ``--user-principal``, ``--delegation-token``,
``--resource-pattern-type``,
``--principal`` (list), and the ``--consumer`` / ``--producer`` shortcuts.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from kgroup.acl_bindings import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclError,
    AclFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from kgroup.client.admin import AdminClient
from kgroup.wire.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramMechanism

from .commands import table
from .errors import CliError

DEFAULT_MECHANISM = "SCRAM-SHA-512"


# -- parser --------------------------------------------------------------------------------

def _iterations(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not MIN_ITERATIONS <= value <= MAX_ITERATIONS:
        raise argparse.ArgumentTypeError(f"iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS}")
    return value


def _mechanism(text: str) -> str:
    name = text.strip().upper()
    if name not in MECHANISMS:
        raise argparse.ArgumentTypeError(f"unknown mechanism {text!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")
    return name


def _operation(text: str) -> AclOperation:
    # kafka-acls.sh spells them Read, DescribeConfigs, IdempotentWrite, All ...
    key = text.strip().replace("-", "").replace("_", "").upper()
    for op in AclOperation:
        if op.name.replace("_", "") == key and op not in (AclOperation.UNKNOWN, AclOperation.ANY):
            return op
    names = ", ".join(op.name.title().replace("_", "") for op in AclOperation if op.value >= AclOperation.ALL)
    raise argparse.ArgumentTypeError(f"unknown operation {text!r} (one of {names})")


def _pattern(text: str) -> PatternType:
    try:
        pattern = PatternType.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return pattern


def add_security_commands(sub: Any, client: argparse.ArgumentParser, parser_class: type) -> None:
    """The ``users`` and ``acls`` subcommands (``client``: the common client options)."""
    users = sub.add_parser("users", help="SCRAM users: add, list, delete")
    usub = users.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    usub.required = True
    data_dir = dict(metavar="DIR", default=None,
                    help="change the broker's data dir directly (no broker needed) instead of "
                    "asking a broker")
    u = usub.add_parser("add", parents=[client], help="create a user or set its password")
    u.add_argument("name", metavar="NAME")
    u.add_argument("--mechanism", type=_mechanism, action="append", default=None,
                   help=f"SCRAM-SHA-256 or SCRAM-SHA-512, repeatable (default: {DEFAULT_MECHANISM})")
    u.add_argument("--iterations", type=_iterations, default=MIN_ITERATIONS,
                   help=f"PBKDF2 iterations, {MIN_ITERATIONS}-{MAX_ITERATIONS} (default: {MIN_ITERATIONS})")
    u.add_argument("--password-stdin", action="store_true", help="read the password from stdin (one line)")
    u.add_argument("--data-dir", **data_dir)
    u = usub.add_parser("list", parents=[client], help="users and their mechanisms (no secrets)")
    u.add_argument("--data-dir", **data_dir)
    u = usub.add_parser("delete", parents=[client], help="delete a user's credentials")
    u.add_argument("name", metavar="NAME")
    u.add_argument("--mechanism", type=_mechanism, action="append", default=None,
                   help="only this mechanism's credential, repeatable (default: all of the user's)")
    u.add_argument("--data-dir", **data_dir)

    acls = sub.add_parser("acls", help="ACLs: add, list, remove (kafka-acls.sh options)")
    asub = acls.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    asub.required = True
    for action, text in (("add", "add ACLs"), ("list", "list ACLs"), ("remove", "remove ACLs")):
        a = asub.add_parser(action, parents=[client], help=text)
        a.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="a topic ('*': all), repeatable")
        a.add_argument("--group", action="append", default=[], metavar="GROUP", help="a group ('*': all), repeatable")
        a.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                       help="a transactional id, repeatable")
        a.add_argument("--cluster", action="store_true", help="the cluster resource")
        a.add_argument("--user-principal", action="append", default=[], metavar="User:NAME",
                       help="a user as a resource (CreateTokens, DescribeTokens: KIP-373), repeatable")
        a.add_argument("--delegation-token", action="append", default=[], metavar="TOKENID",
                       help="a delegation token (Describe), repeatable")
        if action == "list":
            a.add_argument("--resource-pattern-type", type=_pattern, default=None, metavar="TYPE",
                           help="any (default), match, literal or prefixed")
            a.add_argument("--principal", action="append", default=[], help="only ACLs of this principal")
            continue
        a.add_argument("--resource-pattern-type", type=_pattern, default=PatternType.LITERAL, metavar="TYPE",
                       help="literal (default) or prefixed")
        a.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                       help="e.g. User:alice, repeatable")
        a.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL", help="repeatable")
        a.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default: * (any host)")
        a.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default: * (any host)")
        a.add_argument("--operation", action="append", default=[], type=_operation, metavar="OP",
                       help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                       "AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All; repeatable")
        a.add_argument("--consumer", action="store_true",
                       help="the ACLs a consumer needs: Read and Describe on --topic, Read on --group")
        a.add_argument("--producer", action="store_true",
                       help="the ACLs a producer needs: Write, Describe and Create on --topic")
        if action == "remove":
            a.add_argument("--force", action="store_true",
                           help="remove every ACL of the resources when no principal is given")


# -- users ---------------------------------------------------------------------------------

def _read_password(args: Any) -> str:
    if args.password_stdin:
        line = sys.stdin.readline()
        password = line[:-1] if line.endswith("\n") else line
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.name}: ")
        if getpass.getpass("Again: ") != password:
            raise CliError("the two passwords differ", "type the same password twice")
    else:
        raise CliError("no password given", "pipe it in with --password-stdin")
    if not password:
        raise CliError("the password is empty", "give a non-empty password")
    return password


def _mechanisms(args: Any) -> list[str]:
    return list(dict.fromkeys(args.mechanism or [DEFAULT_MECHANISM]))


def _list_users(users: dict[str, dict[str, int]], out: TextIO) -> None:
    for name in sorted(users):
        mechs = ", ".join(f"{m} (iterations {i})" for m, i in sorted(users[name].items()))
        out.write(f"{name}\t{mechs}\n")


def users_offline(args: Any, out: TextIO) -> int:
    """``kgroup users ... --data-dir DIR``: change the credentials file directly."""
    from kgroup.broker.security.credential_store import CredentialStore  # the broker's own file format
    from kgroup.storage import StorageError

    try:
        store = CredentialStore(args.data_dir)
        if args.action == "add":
            password = _read_password(args)
            for mech in _mechanisms(args):
                store.set_password(args.name, MECHANISMS[mech], password, args.iterations)
                out.write(f"Set {mech} credentials for user {args.name}.\n")
        elif args.action == "list":
            _list_users({u: {m.sasl_name: c.iterations for m, c in mechs.items()}
                         for u, mechs in store.users.items()}, out)
        else:
            have = store.users.get(args.name, {})
            gone = [MECHANISMS[m] for m in _mechanisms_to_delete(args, [m.sasl_name for m in have])]
            store.alter(deletions=[(args.name, m) for m in gone])
            out.write(f"Deleted {', '.join(m.sasl_name for m in gone)} credentials of user {args.name}.\n")
    except StorageError as exc:
        raise CliError(str(exc), "check --data-dir") from None
    return 0


def _mechanisms_to_delete(args: Any, have: Iterable[str]) -> list[str]:
    have = list(have)
    if not have:
        raise CliError(f"user {args.name!r} has no credentials", "check the name with `kgroup users list`")
    wanted = args.mechanism or have
    missing = [m for m in wanted if m not in have]
    if missing:
        raise CliError(f"user {args.name!r} has no {missing[0]} credential", "check with `kgroup users list`")
    return list(dict.fromkeys(wanted))


async def users_add(args: Any, admin: AdminClient, out: TextIO) -> int:
    password = _read_password(args)
    for mech in _mechanisms(args):
        await admin.set_scram_credentials(args.name, mech, password, args.iterations)
        out.write(f"Set {mech} credentials for user {args.name}.\n")
    return 0


async def users_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    _list_users(await admin.describe_scram_credentials(), out)
    return 0


async def users_delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    users = await admin.describe_scram_credentials()
    gone = _mechanisms_to_delete(args, users.get(args.name, {}))
    for mech in gone:
        await admin.delete_scram_credentials(args.name, mech)
    out.write(f"Deleted {', '.join(gone)} credentials of user {args.name}.\n")
    return 0


# -- ACLs ----------------------------------------------------------------------------------

def _resources(args: Any) -> list[tuple[ResourceType, str]]:
    out = [(ResourceType.TOPIC, t) for t in args.topic] + [(ResourceType.GROUP, g) for g in args.group]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    out += [(ResourceType.USER, u) for u in args.user_principal]
    out += [(ResourceType.DELEGATION_TOKEN, t) for t in args.delegation_token]
    if args.cluster:
        out.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return out


def _operations(args: Any, rtype: ResourceType) -> list[AclOperation]:
    ops = list(args.operation)
    if args.consumer:
        ops += {ResourceType.TOPIC: [AclOperation.READ, AclOperation.DESCRIBE],
                ResourceType.GROUP: [AclOperation.READ]}.get(rtype, [])
    if args.producer and rtype is ResourceType.TOPIC:
        ops += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
    return list(dict.fromkeys(ops))


def _bindings(args: Any) -> list[AclBinding]:
    """The ACLs ``acls add`` / ``acls remove`` name: every resource x principal x host x op."""
    resources = _resources(args)
    if not resources:
        raise CliError("no resource given", "add --topic, --group, --transactional-id, --cluster, --user-principal or --delegation-token", code=2)
    if args.consumer and not (args.topic and args.group):
        raise CliError("--consumer needs --topic and --group", "name both", code=2)
    if args.producer and not args.topic:
        raise CliError("--producer needs --topic", "name the topic", code=2)
    out = []
    for permission, principals, hosts in ((AclPermission.ALLOW, args.allow_principal, args.allow_host),
                                          (AclPermission.DENY, args.deny_principal, args.deny_host)):
        for rtype, name in resources:
            ops = _operations(args, rtype)
            if principals and not ops:
                raise CliError(f"no --operation for {rtype.name.lower()} {name}",
                               "add --operation (e.g. Read), or --consumer / --producer", code=2)
            for principal in principals:
                for host in hosts or [WILDCARD]:
                    for op in ops:
                        binding = AclBinding(rtype, name, args.resource_pattern_type, principal, host, op, permission)
                        try:
                            out.append(binding.validate())
                        except AclError as exc:
                            raise CliError(str(exc), "see `kgroup acls add --help`", code=2) from None
    return out


def _print_acls(bindings: Iterable[AclBinding], out: TextIO) -> None:
    rows = [["RESOURCE", "NAME", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION"]]
    rows += [[b.resource_type.name, b.resource_name, b.pattern_type.name, b.principal, b.host,
              b.operation.name, b.permission.name] for b in bindings]
    table(rows, out)


async def acls_add(args: Any, admin: AdminClient, out: TextIO) -> int:
    bindings = _bindings(args)
    if not bindings:
        raise CliError("no principal given", "add --allow-principal or --deny-principal", code=2)
    await admin.create_acls(bindings)
    out.write(f"Added {len(bindings)} ACL(s):\n")
    _print_acls(bindings, out)
    return 0


async def acls_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    pattern = args.resource_pattern_type or PatternType.ANY
    principals = args.principal or [None]
    filters = [AclFilter(rtype, name, pattern, principal) for rtype, name in _resources(args) for principal in principals]
    if not filters:
        filters = [AclFilter(principal=p) for p in principals]
    found: set[AclBinding] = set()
    for flt in filters:
        found.update(await admin.describe_acls(flt))
    _print_acls(sorted(found), out)
    return 0


async def acls_remove(args: Any, admin: AdminClient, out: TextIO) -> int:
    if args.allow_principal or args.deny_principal:
        bindings = _bindings(args)
        filters = [AclFilter(b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation,
                             b.permission) for b in bindings]
    else:
        resources = _resources(args)
        if not resources:
            raise CliError("no resource given", "add --topic, --group, --transactional-id, --cluster, --user-principal or --delegation-token", code=2)
        if not args.force:
            raise CliError("no principal given: this would remove every ACL of "
                           + ", ".join(f"{t.name.lower()} {n}" for t, n in resources),
                           "add --allow-principal/--deny-principal, or --force to remove them all", code=2)
        filters = [AclFilter(rtype, name, args.resource_pattern_type) for rtype, name in resources]
    removed = sorted({b for bs in await admin.delete_acls(filters) for b in bs})
    out.write(f"Removed {len(removed)} ACL(s):\n")
    _print_acls(removed, out)
    return 0


SECURITY_COMMANDS = {
    ("users", "add"): users_add,
    ("users", "list"): users_list,
    ("users", "delete"): users_delete,
    ("acls", "add"): acls_add,
    ("acls", "list"): acls_list,
    ("acls", "remove"): acls_remove,
}
