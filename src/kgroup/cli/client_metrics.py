"""``kgroup client-metrics``: client-metrics subscriptions (KIP-714), with
kafka-client-metrics.sh's options and output.

``--list`` prints the subscriptions' names; ``--describe [--name N]`` their configs (every
subscription without ``--name``); ``--alter --name N | --generate-name`` sets ``--metrics``
(metric-name prefixes, ``*`` all), ``--interval`` (push interval, ms) and ``--match``
(``selector=regex,...``), an empty value removing the key, as Kafka's tool does; ``--delete
--name N`` removes every key (and so the subscription). Text as Kafka's tool prints it, or
``--format json``; a refusal is one line with what to change.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TextIO

from kgroup.client.admin import CONFIG_DELETE, CONFIG_SET, AdminClient
from kgroup.client.client_metrics_admin import CLIENT_METRICS_RESOURCE, list_client_metrics
from kgroup.client.errors import BrokerError
from kgroup.kafka_uuid import random_uuid_text

from .errors import CliError
from .ops_parser import format_option
from .output import emit_json

# The keys of a subscription, as Kafka names them, and the options that set them.
_KEYS = (("metrics", "metrics"), ("interval", "interval.ms"), ("match", "match"))
_SELECTORS = ("client_id", "client_instance_id", "client_software_name", "client_software_version",
              "client_source_address", "client_source_port")
_SET_SOURCE = "CLIENT_METRICS_CONFIG"


def add_client_metrics_commands(sub: Any, client: argparse.ArgumentParser) -> None:
    """``client-metrics`` (``client``: the common client options)."""
    p = sub.add_parser("client-metrics", parents=[client],
                       help="client-metrics subscriptions (KIP-714; kafka-client-metrics' options)")
    action = p.add_mutually_exclusive_group(required=True)
    for flag, text in (("list", "list the subscriptions"), ("describe", "their configs (all, or --name's)"),
                       ("alter", "make or change a subscription (--name or --generate-name)"),
                       ("delete", "remove a subscription (--name)")):
        action.add_argument(f"--{flag}", dest="action", action="store_const", const=flag, help=text)
    p.add_argument("--name", default=None, help="the subscription's name")
    p.add_argument("--generate-name", action="store_true", help="with --alter: name it with a new UUID")
    p.add_argument("--metrics", default=None, metavar="M1,M2",
                   help="metric-name prefixes to push ('*': all; empty: remove the key)")
    p.add_argument("--interval", default=None, metavar="MS",
                   help="push interval in ms, 100 to 3600000 (empty: the default, 5 minutes)")
    p.add_argument("--match", default=None, metavar="K1=V1,K2=V2",
                   help="selectors, each a regex matched in full: " + ", ".join(_SELECTORS))
    format_option(p)


def _refused(exc: BrokerError, alter: bool = False) -> CliError:
    """A broker's refusal as one line: its own message (what Kafka's tool prints) and a fix."""
    if alter and exc.name in ("INVALID_CONFIG", "INVALID_REQUEST"):
        hint = ("--interval is 100 to 3600000 ms; --match is SELECTOR=REGEX,... with selectors "
                + ", ".join(_SELECTORS))
    else:
        hint = exc.hint or "see `kgroup client-metrics --help`"
    return CliError(str(exc), hint)


async def _configs(admin: AdminClient, name: str) -> dict[str, str] | None:
    """A subscription's configs (every key, defaults too), None when it does not exist."""
    try:
        entries = await admin.describe_configs(CLIENT_METRICS_RESOURCE, name)
    except BrokerError as exc:
        raise _refused(exc) from None
    # Kafka answers no entries for a name it does not know; a subscription has a key set.
    if not any(e.source == _SET_SOURCE for e in entries):
        return None
    return {e.name: e.value or "" for e in sorted(entries, key=lambda e: e.name)}


async def client_metrics(args: Any, admin: AdminClient, out: TextIO) -> int:
    return await _ACTIONS[args.action](args, admin, out)


async def _list(args: Any, admin: AdminClient, out: TextIO) -> int:
    names = await list_client_metrics(admin)
    if args.format == "json":
        emit_json({"client_metrics": [{"name": n} for n in names]}, out)
    else:
        out.write("".join(f"{n}\n" for n in names))
    return 0


async def _describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    names = [args.name] if args.name is not None else await list_client_metrics(admin)
    found = [(name, await _configs(admin, name)) for name in names]
    if args.format == "json":
        emit_json({"client_metrics": [{"name": n, "configs": c} for n, c in found if c is not None]}, out)
        return 0
    for name, configs in found:
        if configs is None:
            out.write(f"The client metric resource {name} doesn't exist and doesn't have dynamic config.\n")
            continue
        out.write(f"Client metrics configs for {name} are:\n")
        out.write("".join(f"  {k}={v}\n" for k, v in configs.items()))
    return 0


async def _alter(args: Any, admin: AdminClient, out: TextIO) -> int:
    if (args.name is None) == (not args.generate_name):
        raise CliError("one of --name or --generate-name must be given with --alter", "name the subscription once",
                       code=2)
    name = args.name if args.name is not None else random_uuid_text(os.urandom)   # as kafka-client-metrics names it
    changes = [(key, CONFIG_SET, value) if value else (key, CONFIG_DELETE, None)
               for option, key in _KEYS if (value := getattr(args, option)) is not None]
    try:
        await admin.alter_configs(CLIENT_METRICS_RESOURCE, name, changes)
    except BrokerError as exc:
        raise _refused(exc, alter=True) from None
    return _done(args, name, "altered", f"Altered client metrics config for {name}.", out)


async def _delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    if args.name is None:
        raise CliError("--delete needs --name", "name the subscription (`kgroup client-metrics --list`)", code=2)
    configs = await _configs(admin, args.name) or {}
    if configs:
        try:
            await admin.alter_configs(CLIENT_METRICS_RESOURCE, args.name,
                                      [(key, CONFIG_DELETE, None) for key in configs])
        except BrokerError as exc:
            raise _refused(exc) from None
    return _done(args, args.name, "deleted", f"Deleted client metrics config for {args.name}.", out)


def _done(args: Any, name: str, what: str, text: str, out: TextIO) -> int:
    if args.format == "json":
        emit_json({"client_metrics": [{"name": name, "result": what}]}, out)
    else:
        out.write(text + "\n")
    return 0


_ACTIONS = {"list": _list, "describe": _describe, "alter": _alter, "delete": _delete}
CLIENT_METRICS_COMMANDS = {("client-metrics", action): client_metrics for action in _ACTIONS}
