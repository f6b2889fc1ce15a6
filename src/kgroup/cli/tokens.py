"""``kgroup tokens create|describe|renew|expire``: delegation tokens (KIP-48), with
kafka-delegation-tokens.sh's option names.

``create`` (``--renewer-principal``, repeatable; ``--owner-principal`` for another owner,
KIP-373; ``--max-life-time-period`` ms, -1: the broker's) prints the token with its HMAC,
the password a client authenticates with (SASL/SCRAM, ``tokenauth=true``, the token id as user
name). ``describe`` (``--owner-principal``, repeatable) lists the tokens the caller may see —
every one when no owner is named, where Kafka's tool asks for an empty owner list and shows
none. ``renew`` and ``expire`` take ``--hmac`` and ``--renew-time-period`` /
``--expiry-time-period`` (ms; -1: the broker's expiry time / at once). The connection must be
authenticated (``--command-config``: SASL, or an SSL client certificate), not with a token.
Text tables or ``--format json``.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime
from typing import Any, TextIO

from kgroup.client.admin import AdminClient
from kgroup.client.token_admin import DelegationToken

from .errors import CliError
from .ops_parser import format_option
from .output import emit_json, table


def _principal(text: str) -> str:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not a principal (Type:name, e.g. User:alice)")
    return text


def _period(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of milliseconds") from None


def add_token_commands(sub: Any, client: argparse.ArgumentParser, parser_class: type) -> None:
    """The ``tokens`` subcommands (``client``: the common client options)."""
    tokens = sub.add_parser("tokens", help="delegation tokens: create, describe, renew, expire")
    tsub = tokens.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    tsub.required = True
    c = tsub.add_parser("create", parents=[client], help="create a token (its HMAC is the password)")
    c.add_argument("--renewer-principal", type=_principal, action="append", default=[], metavar="User:NAME",
                   help="who may renew it besides the owner, repeatable")
    c.add_argument("--owner-principal", type=_principal, default=None, metavar="User:NAME",
                   help="the owner (default: you; another owner needs CreateTokens on that User)")
    c.add_argument("--max-life-time-period", type=_period, default=-1, metavar="MS",
                   help="the token's max lifetime in ms (default -1: the broker's)")
    format_option(c)
    d = tsub.add_parser("describe", parents=[client], help="the tokens you may see")
    d.add_argument("--owner-principal", type=_principal, action="append", default=None, metavar="User:NAME",
                   help="only tokens of this owner (or renewable by it), repeatable (default: all)")
    format_option(d)
    for action, option, text in (("renew", "--renew-time-period", "renew a token"),
                                 ("expire", "--expiry-time-period", "expire a token (-1: now)")):
        p = tsub.add_parser(action, parents=[client], help=text)
        p.add_argument("--hmac", required=True, help="the token's HMAC (base64, as `create` prints it)")
        p.add_argument(option, type=_period, default=-1, metavar="MS", help="in ms (default -1)")
        format_option(p)


def _date(ms: int) -> str:
    if ms < 0:
        return "-"
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json(t: DelegationToken) -> dict[str, Any]:
    return {"token_id": t.token_id, "hmac": base64.b64encode(t.hmac).decode(), "owner": t.owner,
            "requester": t.requester, "renewers": list(t.renewers), "issue_ms": t.issue_ms,
            "expiry_ms": t.expiry_ms, "max_ms": t.max_ms}


def _print(tokens: list[DelegationToken], args: Any, out: TextIO) -> None:
    if args.format == "json":
        emit_json({"tokens": [_json(t) for t in tokens]}, out)
        return
    rows = [["TOKENID", "HMAC", "OWNER", "REQUESTER", "RENEWERS", "ISSUED", "EXPIRES", "MAX"]]
    rows += [[t.token_id, base64.b64encode(t.hmac).decode(), t.owner, t.requester, ",".join(t.renewers) or "-",
              _date(t.issue_ms), _date(t.expiry_ms), _date(t.max_ms)] for t in tokens]
    table(rows, out)


def _hmac(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise CliError("--hmac is not base64", "paste the HMAC `kgroup tokens create` printed", code=2) from None


async def tokens_create(args: Any, admin: AdminClient, out: TextIO) -> int:
    token = await admin.create_delegation_token(tuple(args.renewer_principal), args.owner_principal,
                                                args.max_life_time_period)
    _print([token], args, out)
    return 0


async def tokens_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    owners = None if args.owner_principal is None else tuple(args.owner_principal)
    _print(await admin.describe_delegation_tokens(owners), args, out)
    return 0


async def _changed(args: Any, expiry_ms: int, what: str, out: TextIO) -> int:
    if args.format == "json":
        emit_json({"expiry_ms": expiry_ms}, out)
    else:
        out.write(f"{what}: the token now expires at {_date(expiry_ms)}.\n")
    return 0


async def tokens_renew(args: Any, admin: AdminClient, out: TextIO) -> int:
    return await _changed(args, await admin.renew_delegation_token(_hmac(args.hmac), args.renew_time_period),
                          "Renewed", out)


async def tokens_expire(args: Any, admin: AdminClient, out: TextIO) -> int:
    return await _changed(args, await admin.expire_delegation_token(_hmac(args.hmac), args.expiry_time_period),
                          "Expired" if args.expiry_time_period < 0 else "Expiry moved", out)


TOKEN_COMMANDS = {
    ("tokens", "create"): tokens_create,
    ("tokens", "describe"): tokens_describe,
    ("tokens", "renew"): tokens_renew,
    ("tokens", "expire"): tokens_expire,
}
