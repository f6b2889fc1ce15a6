"""``kgroup quotas describe|alter``: client quotas of users, client ids and ips, with
kafka-configs' entity options (``--user``, ``--client``, ``--ip``, ``--user-defaults``,
``--client-defaults``, ``--ip-defaults``) and ``--add-config`` / ``--delete-config``, over
DescribeClientQuotas / AlterClientQuotas (KIP-546)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from kgroup.client.admin import AdminClient
from kgroup.client.quotas_admin import alter_client_quotas, describe_client_quotas

from .config_tools import config_changes
from .errors import CliError
from .ops_parser import config_change_options, format_option
from .output import emit_json, table

_TYPES = (("user", "user"), ("client", "client-id"), ("ip", "ip"))


def add_quota_commands(sub: Any, client: argparse.ArgumentParser, parser_class: type) -> None:
    quotas = sub.add_parser("quotas", help="client quotas of users, client ids and ips (kafka-configs' options)")
    qsub = quotas.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    qsub.required = True
    for action, text in (("describe", "the quotas set (all, or those of the entity named)"),
                         ("alter", "set (--add-config) or remove (--delete-config) an entity's quotas")):
        q = qsub.add_parser(action, parents=[client], help=text)
        for flag, kind in _TYPES:
            q.add_argument(f"--{flag}", dest=f"{flag}_name", default=None, metavar="NAME",
                           help=f"the {kind} NAME" + (" (also --client-id)" if flag == "client" else ""))
            q.add_argument(f"--{flag}-defaults", dest=f"{flag}_defaults", action="store_true",
                           help=f"the default {kind} entity")
        if action == "alter":
            config_change_options(q)
        else:
            format_option(q)
    for action in ("describe", "alter"):
        qsub.choices[action].add_argument("--client-id", dest="client_name", default=None, help=argparse.SUPPRESS)


def _entity(args: Any) -> list[tuple[str, str | None]]:
    entity = []
    for flag, kind in _TYPES:
        name, default = getattr(args, f"{flag}_name"), getattr(args, f"{flag}_defaults")
        if name is not None and default:
            raise CliError(f"--{flag} and --{flag}-defaults name two entities", "give one of them", code=2)
        if name is not None or default:
            entity.append((kind, name))
    return entity


def _number(key: str, text: str | None) -> float:
    try:
        return float(text or "")
    except ValueError:
        raise CliError(f"invalid value {text!r} for {key}", "quotas are numbers, e.g. producer_byte_rate=1048576",
                       code=2) from None


async def quotas_alter(args: Any, admin: AdminClient, out: TextIO) -> int:
    entity = _entity(args)
    if not entity:
        raise CliError("no entity given", "add --user, --client, --ip or their -defaults", code=2)
    changes = config_changes(args.add_config, args.delete_config)
    if not changes:
        raise CliError("nothing to change", "add --add-config KEY=VALUE or --delete-config KEY", code=2)
    values = {key: _number(key, value) for key, op, value in changes if value is not None}
    removed = [key for key, op, value in changes if value is None]
    await alter_client_quotas(admin, entity, values, removed)
    out.write(f"Completed updating quotas of {_name(entity)}.\n")
    return 0


def _name(entity: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{kind} {'<default>' if name is None else repr(name)}" for kind, name in entity)


async def quotas_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    components = [(kind, "default" if name is None else "exact", name) for kind, name in _entity(args)]
    found = await describe_client_quotas(admin, components)
    if args.format == "json":
        emit_json({"quotas": [{"entity": {kind: name for kind, name in entity}, "values": values}
                              for entity, values in found]}, out)
        return 0
    rows = [["ENTITY", "QUOTA", "VALUE"]]
    for entity, values in found:
        for key, value in sorted(values.items()):
            rows.append([_name(entity), key, str(int(value)) if value == int(value) else str(value)])
    table(rows, out)
    return 0


QUOTA_COMMANDS = {("quotas", "describe"): quotas_describe, ("quotas", "alter"): quotas_alter}
