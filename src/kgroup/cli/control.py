"""``kgroup control``: the control API of a broker started with ``--control-listen``.

Group answers are printed as the API's JSON (for scripts and `jq`); fault ids one a line;
`faults list` as a table (or JSON). A refusal from the API, a wait that times out and an
unreachable address are the usual one-line error with exit status 1.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from kgroup.testing.control import ControlClient, ControlError, GroupWaitTimeout

from .errors import CliError


def run_control(args: Any, out: TextIO) -> int:
    if not args.control:
        raise CliError("no control API address given",
                       "pass --control HOST:PORT (the broker's --control-listen) or set KGROUP_CONTROL", code=2)
    client = ControlClient(args.control)
    try:
        return _COMMANDS[args.action](args, client, out)
    except GroupWaitTimeout as exc:
        group = exc.group or {}
        raise CliError(f"{exc.reason} (it is {group.get('state')} with {len(group.get('members', []))} members)",
                       "wait longer (--timeout-ms) or check the group's members") from None
    except ControlError as exc:
        hint = ("start the broker with --control-listen HOST:PORT and pass that address" if exc.status == 0
                else "see docs/testing.md for the control API")
        raise CliError(exc.reason, hint) from None
    finally:
        client.close()


def _faults(args: Any, client: ControlClient, out: TextIO) -> int:
    if args.faults_action == "add":
        if args.error is None and not args.close_connection and args.delay_ms is None and args.throttle_ms is None:
            raise CliError("a fault needs --error, --delay-ms, --throttle-ms or --close-connection", "add one of them",
                           code=2)
        fault_id = client.add_fault(args.api, args.error, delay_ms=args.delay_ms, throttle_ms=args.throttle_ms,
                                    close_connection=args.close_connection, group=args.group,
                                    member=args.member, client_id=args.client_id, topic=args.topic,
                                    partition=args.partition, count=args.count)
        out.write(fault_id + "\n")
    elif args.faults_action == "list":
        faults = client.faults()
        if args.json:
            out.write(json.dumps(faults, indent=2) + "\n")
        else:
            _fault_table(faults, out)
    elif args.fault_id is not None:
        client.remove_fault(args.fault_id)
        out.write(f"cleared fault {args.fault_id}\n")
    else:
        out.write(f"cleared {client.clear_faults()} faults\n")
    return 0


def _fault_table(faults: list[dict[str, Any]], out: TextIO) -> None:
    rows = [["ID", "API", "ACTION", "MATCHING", "REMAINING", "HITS"]]
    for f in faults:
        action = f.get("error") or ("close connection" if f.get("close_connection") else "")
        if f.get("delay_ms"):
            action = (action + " after " if action else "delay ") + f"{f['delay_ms']} ms"
        matching = " ".join(f"{k}={f[k]}" for k in ("group", "member", "client_id", "topic", "partition") if k in f)
        rows.append([f["id"], f["api"], action, matching or "-", str(f["remaining"]), str(f["hits"])])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def _print(value: Any, out: TextIO) -> int:
    out.write(json.dumps(value, indent=2) + "\n")
    return 0


_COMMANDS = {
    "faults": _faults,
    "group": lambda args, client, out: _print(client.group(args.group), out),
    "wait": lambda args, client, out: _print(
        client.wait_for_group(args.group, args.state, args.members, args.timeout_ms), out),
    "rebalance": lambda args, client, out: _print(client.rebalance(args.group), out),
    "expire": lambda args, client, out: _print(client.expire_member(args.group, args.member), out),
    "move-coordinator": lambda args, client, out: _print(client.move_coordinator(args.group, args.node), out),
    "nodes": lambda args, client, out: _print(client.nodes(), out),
    "node": lambda args, client, out: _print(_node(args, client), out),
}


def _node(args: Any, client: ControlClient) -> Any:
    if args.node_action == "pause":
        return client.pause_node(args.node, args.ms)
    return getattr(client, f"{args.node_action}_node")(args.node)
