"""``topics alter-config`` and ``groups alter-config``: kafka-configs' spelling of changes.

``--add-config k=v[,k=v]`` sets, ``--delete-config k[,k]`` removes (IncrementalAlterConfigs
SET and DELETE); afterwards every config of the resource is printed with its source.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

from kgroup.client.admin import CONFIG_DELETE, CONFIG_SET, AdminClient

from .errors import UsageError
from .output import cell, table

_OUTSIDE_BRACKETS = re.compile(r",(?![^\[]*\])")


def config_changes(add: list[str], delete: list[str]) -> list[tuple[str, int, str | None]]:
    """kafka-configs' ``--add-config k=v,k2=v2`` and ``--delete-config k,k2`` as changes."""
    changes: list[tuple[str, int, str | None]] = []
    for text in add:
        # A list value goes in brackets, as kafka-configs takes it: cleanup.policy=[delete,compact]
        for pair in _OUTSIDE_BRACKETS.split(text):
            name, sep, value = pair.partition("=")
            if not sep or not name.strip():
                raise UsageError(f"invalid config {pair!r}", "use --add-config NAME=VALUE[,NAME=VALUE...]")
            value = value.strip()
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1]
            changes.append((name.strip(), CONFIG_SET, value))
    for text in delete:
        changes += [(name.strip(), CONFIG_DELETE, None) for name in text.split(",") if name.strip()]
    return changes


async def print_configs(admin: AdminClient, resource_type: int, name: str, out: TextIO) -> None:
    """NAME VALUE SOURCE for every config of a resource."""
    entries = await admin.describe_configs(resource_type, name)
    table([["NAME", "VALUE", "SOURCE"]] + [[e.name, cell(e.value), e.source] for e in entries], out)


async def alter_and_print(admin: AdminClient, resource_type: int, name: str, what: str, args: Any,
                          out: TextIO) -> int:
    """Apply ``args``' --add-config/--delete-config to a resource (if any), then print its configs."""
    changes = config_changes(args.add_config, args.delete_config)
    if changes:
        await admin.alter_configs(resource_type, name, changes)
        sys.stderr.write(f"kgroup: completed updating config for {what} {name}\n")
    await print_configs(admin, resource_type, name, out)
    return 0
