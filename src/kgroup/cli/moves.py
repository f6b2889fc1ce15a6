"""`kgroup topics reassign` and `kgroup topics elect-leaders`: partition moves and preferred
leaders with the options and output lines of Kafka's `kafka-reassign-partitions` and
`kafka-leader-election` (a reassignment JSON file of Kafka's format; --execute, --verify,
--cancel, --list; --election-type, --topic/--partition, --all-topic-partitions,
--path-to-json-file), and `--format json`. In a kgroup cluster a partition's replicas are
the node that leads it: a reassignment to [n] moves its leadership to node n."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from kgroup.client.admin import AdminClient
from kgroup.client.moves_admin import PREFERRED, UNCLEAN
from kgroup.error_codes import ErrorCode

from .errors import CliError, UsageError
from .output import emit_json

Partition = tuple[str, int]


def _read_json(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}", f"give the path of {what}") from None
    except ValueError as exc:
        raise CliError(f"{path} is not JSON: {exc}", f"write {what} as Kafka's tools do") from None


def read_plan(path: str) -> dict[Partition, list[int]]:
    """A reassignment file ({"version":1,"partitions":[{"topic","partition","replicas"}]})."""
    doc = _read_json(path, "a reassignment JSON file")
    try:
        return {(str(p["topic"]), int(p["partition"])): [int(r) for r in p["replicas"]]
                for p in doc["partitions"]}
    except (KeyError, TypeError, ValueError):
        raise CliError(f"{path} is not a reassignment plan",
                       'write {"version":1,"partitions":[{"topic":"T","partition":0,"replicas":[1]}]}') from None


def _name(partition: Partition) -> str:
    return f"{partition[0]}-{partition[1]}"


async def topics_reassign(args: Any, admin: AdminClient, out: TextIO) -> int:
    json_out = getattr(args, "format", "text") == "json"
    if args.list:
        ongoing = await admin.list_partition_reassignments()
        if json_out:
            emit_json({"reassignments": [{"topic": t, "partition": p, "replicas": list(r.replicas),
                                          "adding": list(r.adding), "removing": list(r.removing)}
                                         for (t, p), r in sorted(ongoing.items())]}, out)
        elif not ongoing:
            out.write("No partition reassignments found.\n")
        else:
            out.write("Current partition reassignments:\n")
            for key, r in sorted(ongoing.items()):
                out.write(f"{_name(key)}: replicas: {','.join(map(str, r.replicas))}. adding: "
                          f"{','.join(map(str, r.adding))}. removing: {','.join(map(str, r.removing))}.\n")
        return 0
    if not args.reassignment_json_file:
        raise UsageError("--execute, --verify and --cancel need --reassignment-json-file",
                         "write the plan as kafka-reassign-partitions reads it")
    plan = read_plan(args.reassignment_json_file)
    if args.verify:
        return await _verify(admin, plan, json_out, out)
    results = await admin.alter_partition_reassignments(
        {key: (None if args.cancel else replicas) for key, replicas in plan.items()})
    failed = {key: r for key, r in results.items() if r.error is not ErrorCode.NONE}
    if json_out:
        emit_json({"results": [{"topic": t, "partition": p, "error": r.error.name, "message": r.message}
                               for (t, p), r in sorted(results.items())]}, out)
    else:
        done = sorted(set(results) - set(failed))
        if done:
            verb = "cancelled" if args.cancel else "started"
            out.write(f"Successfully {verb} partition reassignment{'s' if len(done) > 1 else ''} for "
                      f"{','.join(map(_name, done))}\n")
    if failed:
        first, result = sorted(failed.items())[0]
        raise CliError(f"{_name(first)}: {result.error.name}" + (f": {result.message}" if result.message else ""),
                       "check the plan's topics, partitions and node ids (`kgroup topics describe`)")
    return 0


async def _verify(admin: AdminClient, plan: dict[Partition, list[int]], json_out: bool, out: TextIO) -> int:
    ongoing = await admin.list_partition_reassignments(sorted(plan))
    states = {}
    for key, target in sorted(plan.items()):
        if key in ongoing:
            states[key] = "in progress"
            continue
        info = await admin.describe_topic(key[0])
        current = next((list(p.replicas) for p in info.partitions if p.partition == key[1]), None)
        states[key] = "completed" if current == target else f"replica set is {current} rather than {target}"
    if json_out:
        emit_json({"partitions": [{"topic": t, "partition": p, "state": s} for (t, p), s in states.items()]}, out)
    else:
        out.write("Status of partition reassignment:\n")
        for key, state in states.items():
            out.write(f"Reassignment of partition {_name(key)} is {state}.\n" if state in ("completed", "in progress")
                      else f"There is no active reassignment of partition {_name(key)}, but {state}.\n")
    return 0


def _election_partitions(args: Any) -> list[Partition] | None:
    if args.all_topic_partitions:
        return None
    if args.path_to_json_file:
        doc = _read_json(args.path_to_json_file, "a partitions JSON file")
        try:
            return [(str(p["topic"]), int(p["partition"])) for p in doc["partitions"]]
        except (KeyError, TypeError, ValueError):
            raise CliError(f"{args.path_to_json_file} is not a partitions file",
                           'write {"partitions":[{"topic":"T","partition":0}]}') from None
    if args.partition is not None:
        return [(args.topic, args.partition)]
    raise UsageError("--topic needs --partition (or use --all-topic-partitions)", "name one partition")


async def topics_elect_leaders(args: Any, admin: AdminClient, out: TextIO) -> int:
    kind = PREFERRED if args.election_type == "preferred" else UNCLEAN
    label = args.election_type.upper()
    results = await admin.elect_leaders(kind, _election_partitions(args))
    done = sorted(k for k, r in results.items() if r.error is ErrorCode.NONE)
    not_needed = sorted(k for k, r in results.items() if r.error is ErrorCode.ELECTION_NOT_NEEDED)
    failed = sorted((k, r) for k, r in results.items() if k not in done and k not in not_needed)
    if getattr(args, "format", "text") == "json":
        emit_json({"election_type": label, "results": [
            {"topic": t, "partition": p, "error": r.error.name, "message": r.message}
            for (t, p), r in sorted(results.items())]}, out)
    else:
        if done:
            out.write(f"Successfully completed leader election ({label}) for partitions "
                      f"{', '.join(map(_name, done))}\n")
        if not_needed:
            out.write(f"Valid replica already elected for partitions {', '.join(map(_name, not_needed))}\n")
        if not results:
            out.write(f"No partition needed a leader election ({label})\n")
    if failed:
        (key, result), *_ = failed
        raise CliError(f"leader election ({label}) failed for {len(failed)} partition(s), first {_name(key)}: "
                       f"{result.error.name}" + (f": {result.message}" if result.message else ""),
                       "check that the partition exists and its preferred node is up (`kgroup topics describe`)")
    return 0


MOVES_COMMANDS = {
    ("topics", "reassign"): topics_reassign,
    ("topics", "elect-leaders"): topics_elect_leaders,
}
