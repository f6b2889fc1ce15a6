"""Kafka's CLI tools run against kgroup and against Apache Kafka 4.4, compared.

Each `Command` names a tool (its kafka-*.sh name), its arguments with placeholders ({b}: the
broker's bootstrap, {n}: the scenario's suffix, {dir}: a folder for files, and what the
scenario adds: {at13} and {ms13}, a time among its records), and how its output is
compared. Outputs are compared after these named normalizations, and only these:

- broker address: each broker's host:port becomes <broker> (their ports differ).
- ids: member ids (Kafka's 22-character base64 ids, and a classic member's `<client id>-<uuid>`)
  and topic ids are random on both: each becomes <id>.
- column widths: tables pad every column to its widest value, and ids differ in width, so runs
  of spaces and tabs count as one.
- row order: where Kafka prints rows in hash-map order (members, groups, partitions of a
  reset plan), the lines are sorted.
- scenario only: listings of a broker other tests share keep the header and this scenario's
  lines.
- stack traces: the `at ...` lines of a Java stack trace (line numbers, threads).
- a command's own `subs` (regex → text, on lines already re-spaced), for values that are
  neither broker's to decide: wall-clock times, producer ids.

A command with `known` states why kgroup differs; the test then asserts that it still does
(so a fix shows up as a test to update, with docs/tools.md). docs/tools.md is generated from
these tables (`python -m tests.interop.docs`).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from tests.integration.waits import pace

MAIN = {
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
}

# Reasons that recur in `known`.
MARKER_COORDINATOR_EPOCH = ("the coordinator epoch a marker carries: kgroup's is the ownership epoch of the "
                            "transaction's metadata partition (1 once a fresh node owns it, the fence between a "
                            "cluster's nodes), Kafka's the transaction log partition's leader epoch (0)")
NEEDS_25_SYNONYMS = ("needs #25: DescribeConfigs synonyms: kgroup names a broker default STATIC_BROKER_CONFIG where "
                     "Kafka says DEFAULT_CONFIG, and omits topic configs Kafka 4.4 added")
OWN_WORDS = ("kgroup's own wording of the error (it names the valid values or the setting that bounds them); "
             "the error itself is Kafka's")


@dataclass(frozen=True)
class Command:
    tool: str
    args: tuple[str, ...]
    stdin: str = ""
    unordered: bool = False          # row order: sort lines
    scenario_only: bool = False      # keep the header and lines naming this scenario
    header: bool = True              # the output's first line is a header
    keep: str = ""                   # scenario_only also keeps the lines matching this regex
    subs: tuple[tuple[str, str], ...] = ()
    known: str | None = None         # why kgroup's output differs (asserted to still differ)
    note: str = ""                   # for docs/tools.md: what the row shows
    timeout: float = 60.0
    # Seconds Kafka may take to show a change it already acknowledged: a broker's dynamic
    # config is applied from the metadata log after AlterConfigs answers, so a describe right
    # after it can still show the old value. Kafka's side is asked again until it matches or
    # this runs out; a difference that outlasts it still fails.
    settle: float = 0.0

    @property
    def text(self) -> str:
        return " ".join([self.tool, *self.args]).replace(" --bootstrap-server {b}", "")


def cmd(tool: str, line: str, **options) -> Command:
    return Command(tool, tuple(["--bootstrap-server", "{b}", *line.split()]), **options)


@dataclass
class Outcome:
    exit: int
    stdout: str
    stderr: str

    def key(self) -> tuple:
        return (self.exit, self.stdout, self.stderr)


_CLASSIC_MEMBER = re.compile(r"\b([\w.]+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_ID = re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])")
_STACK = re.compile(r"^\s+at |^\s*\.\.\. \d+ more")


def normalize(text: str, command: Command, bootstrap: str, suffix: str, stdout: bool = True) -> str:
    text = text.replace(bootstrap, "<broker>")
    text = _CLASSIC_MEMBER.sub(r"\1-<id>", text)
    text = _ID.sub("<id>", text)
    lines = [re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines() if not _STACK.match(line)]
    lines = [line for line in lines if line]
    for pattern, repl in command.subs:
        lines = [re.sub(pattern, repl, line) for line in lines]
    if command.scenario_only and lines:
        # A header is upper case ("GROUP STATE"); `--list` alone prints none, and its first
        # line is then a group of whatever other module shares the reference broker.
        head = lines[:1] if command.header and stdout and not any(c.islower() for c in lines[0]) else []
        lines = head + [line for line in lines[len(head):]
                        if suffix in line or (command.keep and re.search(command.keep, line))]
    if command.unordered:
        lines = sorted(lines)
    return "\n".join(lines)


def run(java, command: Command, bootstrap: str, suffix: str, values: dict[str, str]) -> Outcome:
    args = [a.format(b=bootstrap, n=suffix, **values) for a in command.args]
    got = java.tool(MAIN[command.tool], *args, stdin=command.stdin.format(n=suffix), timeout=command.timeout)
    return Outcome(got["exit"], normalize(got["stdout"], command, bootstrap, suffix),
                   normalize(got["stderr"], command, bootstrap, suffix, stdout=False))


def compare(java, commands: list[Command], sides: dict[str, str], suffix: str, values: dict[str, str]) -> list[str]:
    """Run each command on kgroup, then on Kafka; answer what did not hold."""
    problems = []
    for command in commands:
        ours = run(java, command, sides["kgroup"], suffix, values)
        theirs = run(java, command, sides["kafka"], suffix, values)
        same = ours.key() == theirs.key()
        deadline = time.monotonic() + command.settle
        while not same and time.monotonic() < deadline:
            pace(0.5)
            theirs = run(java, command, sides["kafka"], suffix, values)
            same = ours.key() == theirs.key()
        if command.known is None and not same:
            problems.append(f"`{command.text}` differs:\n--- kgroup (exit {ours.exit})\n{ours.stdout}\n"
                            f"{ours.stderr}\n--- Kafka 4.4 (exit {theirs.exit})\n{theirs.stdout}\n{theirs.stderr}")
        elif command.known is not None and same:
            problems.append(f"`{command.text}` now gives Kafka's output: drop its `known` ({command.known}) "
                            f"and regenerate docs/tools.md")
    return problems
