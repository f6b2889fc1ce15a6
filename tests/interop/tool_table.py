"""Which Kafka CLI commands the differential tests run, and how each compares (tools.py says
how they are compared; test_kafka_tools.py sets up the scenario they run on: topics cg, cx,
cy, cs, csc, ct, cd; groups ga (offsets only), gb (classic, members b1 and b2), gc (consumer
protocol, members c1 and c2), gs (share, one member), gse (share, empty), gcc (console
consumer), gsc (console share consumer); transactions tx1 (committed) and tx2 (open)."""

from __future__ import annotations

from tests.interop.tools import (
    MARKER_COORDINATOR_EPOCH,
    OWN_WORDS,
    NEEDS_25_SYNONYMS,
    cmd,
)

CG = "kafka-consumer-groups"
RESET = "--reset-offsets --group ga-{n} --topic cg-{n}"

CONSUMER_GROUPS = [
    cmd(CG, "--list", scenario_only=True, unordered=True),
    cmd(CG, "--list --state", scenario_only=True, unordered=True),
    cmd(CG, "--list --state Stable", scenario_only=True, unordered=True),
    cmd(CG, "--list --type", scenario_only=True, unordered=True),
    cmd(CG, "--list --type consumer", scenario_only=True, unordered=True),
    cmd(CG, "--describe --group ga-{n}"),
    cmd(CG, "--describe --group gb-{n}", unordered=True),
    cmd(CG, "--describe --group gb-{n} --members", unordered=True),
    cmd(CG, "--describe --group gb-{n} --members --verbose", unordered=True),
    cmd(CG, "--describe --group gb-{n} --state"),
    cmd(CG, "--describe --group gb-{n} --state --verbose"),
    cmd(CG, "--describe --group gb-{n} --offsets --verbose", unordered=True),
    cmd(CG, "--describe --group gc-{n}", unordered=True),
    cmd(CG, "--describe --group gc-{n} --members", unordered=True),
    cmd(CG, "--describe --group gc-{n} --members --verbose", unordered=True),
    cmd(CG, "--describe --group gc-{n} --state --verbose"),
    cmd(CG, "--describe --all-groups --state", scenario_only=True, unordered=True),
    cmd(CG, "--describe --all-groups --members", scenario_only=True, unordered=True),
    cmd(CG, "--describe --all-groups --members --verbose", scenario_only=True, unordered=True),
    cmd(CG, "--describe --group nope-{n}"),
    cmd(CG, "--describe --group ga-{n} --command-config {dir}/client.properties"),
    cmd(CG, RESET + " --to-earliest", unordered=True),
    cmd(CG, RESET + " --to-latest --dry-run", unordered=True),
    cmd(CG, RESET + " --to-offset 3", unordered=True),
    cmd(CG, RESET + " --to-offset 300", unordered=True),
    cmd(CG, RESET + " --shift-by -2", unordered=True),
    cmd(CG, RESET + " --shift-by 100", unordered=True),
    cmd(CG, RESET + " --to-current", unordered=True),
    cmd(CG, RESET + " --to-datetime {at13}", unordered=True),
    cmd(CG, RESET + " --by-duration PT30M", unordered=True),
    cmd(CG, RESET + " --by-duration PT3H", unordered=True),
    cmd(CG, "--reset-offsets --group ga-{n} --topic cg-{n}:0,2 --to-offset 1", unordered=True),
    cmd(CG, "--reset-offsets --group ga-{n} --all-topics --to-earliest", unordered=True),
    cmd(CG, RESET + " --to-earliest --export", unordered=True),
    cmd(CG, "--reset-offsets --group ga-{n} --from-file {dir}/plan.csv", unordered=True),
    cmd(CG, RESET + " --to-datetime {at13} --execute", unordered=True),
    cmd(CG, "--describe --group ga-{n}"),
    cmd(CG, "--reset-offsets --group ga-{n} --from-file {dir}/plan.csv --execute", unordered=True),
    cmd(CG, "--describe --group ga-{n}"),
    cmd(CG, "--reset-offsets --group gb-{n} --topic cg-{n} --to-earliest --execute"),
    cmd(CG, "--reset-offsets --group ga-{n} --topic nosuch-{n} --to-earliest"),
    cmd(CG, "--delete-offsets --group ga-{n} --topic cg-{n}:1"),
    cmd(CG, "--describe --group ga-{n}"),
    cmd(CG, "--delete-offsets --group gb-{n} --topic cg-{n}", unordered=True),
    cmd(CG, "--delete --group gb-{n}"),
    cmd(CG, "--delete --group nope-{n}"),
    cmd(CG, "--delete --group ga-{n}"),
    cmd(CG, "--list", scenario_only=True, unordered=True),
]

SG = "kafka-share-groups"
SHARE_GROUPS = [
    cmd(SG, "--list", scenario_only=True, unordered=True),
    cmd(SG, "--list --state", scenario_only=True, unordered=True),
    cmd(SG, "--describe --group gs-{n} --members", unordered=True),
    cmd(SG, "--describe --group gs-{n} --members --verbose"),
    cmd(SG, "--describe --group gs-{n} --state"),
    cmd(SG, "--describe --group gs-{n} --state --verbose"),
    cmd(SG, "--reset-offsets --group gse-{n} --topic cs-{n} --to-earliest --execute", unordered=True),
    cmd(SG, "--describe --group gse-{n}", unordered=True),
    cmd(SG, "--describe --group gse-{n} --members --verbose"),
    cmd(SG, "--describe --group gse-{n} --offsets --verbose", unordered=True),
    cmd(SG, "--reset-offsets --group gse-{n} --topic cs-{n} --to-offset 3 --dry-run", unordered=True),
    cmd(SG, "--reset-offsets --group gse-{n} --topic cs-{n} --to-latest --execute", unordered=True),
    cmd(SG, "--describe --group gse-{n}", unordered=True),
    cmd(SG, "--reset-offsets --group gs-{n} --topic cs-{n} --to-earliest --execute"),
    cmd(SG, "--delete-offsets --group gse-{n} --topic cs-{n}"),
    cmd(SG, "--describe --group nope-{n}"),
    cmd(SG, "--delete --group gs-{n}"),
    cmd(SG, "--delete --group gse-{n}"),
    cmd(SG, "--list", scenario_only=True, unordered=True),
]

TX = "kafka-transactions"
# Producer ids are handed out differently (kgroup: from a time-based block), and times are
# the wall clock's: neither broker's choice.
LIST_SUBS = ((r"^(tx\d-\w+ 1 )\d+", r"\1<pid>"),)
DESCRIBE_SUBS = ((r"^(1 tx\d-\w+ )\d+ (\d+ \w+ \d+ )\d+ \d+", r"\1<pid> \2<start> <duration>"),)
PRODUCERS_SUBS = ((r"^\d+ (\d+ -?\d+ -?\d+ )\d+", r"<pid> \1<time>"),)
TRANSACTIONS = [
    cmd(TX, "list", scenario_only=True, unordered=True, subs=LIST_SUBS),
    cmd(TX, "describe --transactional-id tx2-{n}", subs=DESCRIBE_SUBS),
    cmd(TX, "describe --transactional-id tx1-{n}", subs=DESCRIBE_SUBS),
    cmd(TX, "describe --transactional-id nope-{n}"),
    cmd(TX, "describe-producers --topic ct-{n} --partition 0", subs=PRODUCERS_SUBS, unordered=True,
        known=MARKER_COORDINATOR_EPOCH),
    cmd(TX, "find-hanging --broker-id 1"),
    cmd(TX, "abort --topic ct-{n} --partition 0 --start-offset 2"),
]

CF = "kafka-configs"
CONFIGS = [
    cmd(CF, "--describe --entity-type topics --entity-name cg-{n}"),
    cmd(CF, "--alter --entity-type topics --entity-name cg-{n} --add-config retention.ms=86400000,cleanup.policy=compact"),
    cmd(CF, "--describe --entity-type topics --entity-name cg-{n}", known=NEEDS_25_SYNONYMS),
    cmd(CF, "--alter --entity-type topics --entity-name cg-{n} --delete-config cleanup.policy"),
    cmd(CF, "--describe --entity-type topics --entity-name cg-{n} --all", known=NEEDS_25_SYNONYMS),
    cmd(CF, "--alter --entity-type topics --entity-name cg-{n} --add-config no.such.config=1", known=OWN_WORDS),
    cmd(CF, "--describe --entity-type topics --entity-name nope-{n}"),
    cmd(CF, "--describe --entity-type brokers --entity-name 1"),
    cmd(CF, "--alter --entity-type brokers --entity-name 1 --add-config log.cleaner.backoff.ms=20000"),
    cmd(CF, "--describe --entity-type brokers --entity-name 1", settle=10.0),
    cmd(CF, "--alter --entity-type brokers --entity-name 1 --delete-config log.cleaner.backoff.ms"),
    cmd(CF, "--describe --entity-type groups --entity-name gb-{n}"),
    cmd(CF, "--alter --entity-type groups --entity-name gb-{n} --add-config consumer.session.timeout.ms=50000"),
    cmd(CF, "--describe --entity-type groups --entity-name gb-{n}"),
    cmd(CF, "--alter --entity-type groups --entity-name gb-{n} --add-config consumer.session.timeout.ms=1"),
    cmd(CF, "--alter --entity-type groups --entity-name gb-{n} --add-config no.such.config=1"),
    cmd(CF, "--describe --entity-type groups --entity-name gs-{n}"),
    cmd(CF, "--alter --entity-type groups --entity-name gb-{n} --delete-config consumer.session.timeout.ms"),
    cmd(CF, "--describe --entity-type groups --entity-name gb-{n}"),
    cmd(CF, "--describe --entity-type groups --entity-name nope-{n}"),
    # Client quotas (KIP-546): set, described, refused and removed again (the shared reference
    # keeps no quota of this run's names afterwards).
    cmd(CF, "--alter --entity-type clients --entity-name cq-{n} --add-config producer_byte_rate=1024,consumer_byte_rate=2048"),
    cmd(CF, "--describe --entity-type clients --entity-name cq-{n}"),
    cmd(CF, "--alter --entity-type users --entity-name uq-{n} --entity-type clients --entity-name cq-{n} "
            "--add-config request_percentage=50"),
    cmd(CF, "--describe --entity-type users --entity-name uq-{n} --entity-type clients"),
    cmd(CF, "--alter --entity-type clients --entity-name cq-{n} --add-config producer_byte_rate=-5"),
    cmd(CF, "--alter --entity-type clients --entity-name cq-{n} --add-config bogus=1"),
    cmd(CF, "--alter --entity-type clients --entity-name cq-{n} --delete-config consumer_byte_rate"),
    cmd(CF, "--describe --entity-type clients --entity-name cq-{n}"),
    cmd(CF, "--alter --entity-type clients --entity-name cq-{n} --delete-config producer_byte_rate"),
    cmd(CF, "--alter --entity-type users --entity-name uq-{n} --entity-type clients --entity-name cq-{n} "
            "--delete-config request_percentage"),
    cmd(CF, "--describe --entity-type users --entity-name uq-{n} --entity-type clients"),
]

TP = "kafka-topics"
# Kafka lists its own static broker settings of the test reference (min.insync.replicas,
# segment.bytes: reference.py) among a topic's configs; they are not the topic's.
REF_CONFIGS = (("min\\.insync\\.replicas=1,?(segment\\.bytes=67108864,?)?", ""),)
TOPICS = [
    cmd(TP, "--create --topic tt-{n} --partitions 2 --config retention.ms=1000000"),
    cmd(TP, "--create --topic tt-{n} --partitions 2"),
    cmd(TP, "--create --topic tt2-{n} --partitions 1 --replication-factor 1 --if-not-exists"),
    cmd(TP, "--create --topic tt2-{n} --partitions 1 --if-not-exists"),
    cmd(TP, "--create --topic bad/name-{n} --partitions 1", known=OWN_WORDS),
    cmd(TP, "--create --topic tt3-{n} --partitions 0"),
    cmd(TP, "--list --exclude-internal", scenario_only=True, header=False, unordered=True),
    cmd(TP, "--list", scenario_only=True, header=False, keep="^__", unordered=True,
        known="internal topics: kgroup's __kgroup_events (group events), Kafka's __consumer_offsets"),
    cmd(TP, "--describe --topic tt-{n}", subs=REF_CONFIGS),
    cmd(TP, "--alter --topic tt-{n} --partitions 4"),
    cmd(TP, "--alter --topic tt-{n} --partitions 4"),
    cmd(TP, "--alter --topic tt-{n} --partitions 1"),
    cmd(TP, "--describe --topic tt-{n} --unavailable-partitions"),
    cmd(TP, "--describe --under-replicated-partitions", scenario_only=True),
    cmd(TP, "--delete --topic tt2-{n}"),
    cmd(TP, "--delete --topic nope-{n}"),
    cmd(TP, "--create --topic __consumer_offsets --partitions 1",
        known="kgroup keeps group metadata in its own log, not in a __consumer_offsets topic: creating one is "
              "refused as internal rather than as existing"),
]

GO = "kafka-get-offsets"
GET_OFFSETS = [
    cmd(GO, "--topic cg-{n}"),
    cmd(GO, "--topic cg-{n} --time -1"),
    cmd(GO, "--topic cg-{n} --time -2"),
    cmd(GO, "--topic cg-{n} --time -3"),
    cmd(GO, "--topic cg-{n} --time {ms13}"),
    cmd(GO, "--topic-partitions cg-{n}:1,cx-{n}"),
    cmd(GO, "--topic cg-{n} --partitions 0,2"),
    cmd(GO, "--topic nope-{n}"),
]

CONSOLE = [
    cmd("kafka-console-producer", "--topic csc-{n} --property parse.key=true", stdin="k1\tone-{n}\nk2\ttwo-{n}\n"),
    cmd("kafka-console-consumer", "--topic csc-{n} --group gcc-{n} --from-beginning --max-messages 5 "
        "--property print.key=true --property print.partition=true --property print.offset=true"),
    cmd(CG, "--describe --group gcc-{n}"),
    cmd("kafka-console-consumer", "--topic csc-{n} --group gcc-{n} --max-messages 1 --timeout-ms 3000"),
    cmd("kafka-console-share-consumer", "--topic csc-{n} --group gsc-{n} --max-messages 5 --timeout-ms 20000",
        unordered=True),
]

OTHERS = [
    cmd("kafka-groups", "--list", scenario_only=True, unordered=True),
    cmd("kafka-groups", "--list --share", scenario_only=True, unordered=True),
    cmd("kafka-delete-records", "--offset-json-file {dir}/delete.json"),
    # The bytes of a partition are its batches as the producer happened to split them.
    cmd("kafka-log-dirs", "--describe --topic-list cd-{n}",
        subs=(('"logDir":"[^"]*"', '"logDir":<dir>'), ('"size":\\d+', '"size":<bytes>'))),
    cmd("kafka-features", "describe",
        known="Kafka 4.4 lists "
              "eligible.leader.replicas.version (replica elections: none on a single host); the epochs differ "
              "(Kafka's is its metadata log's offset)"),
    # Changes that leave the shared reference as it was: the same level again, dry runs, refusals.
    cmd("kafka-features", "upgrade --feature group.version=1"),
    cmd("kafka-features", "downgrade --feature group.version=0 --dry-run"),
    cmd("kafka-features", "upgrade --feature group.version=9 --dry-run"),
    cmd("kafka-features", "downgrade --feature metadata.version=20 --dry-run"),
    cmd("kafka-features", "disable --feature kgroup.nonsense --dry-run"),
    cmd("kafka-metadata-quorum", "describe --status",
        known="not applicable: kgroup has no KRaft controller quorum (DescribeQuorum is not served)"),
    # KIP-714's subscriptions (CLIENT_METRICS config resources, ListConfigResources); the one
    # each scenario makes matches only its own client id, so no other test's clients push.
    cmd("kafka-client-metrics", "--alter --name cm-{n} --metrics org.apache.kafka.consumer. --interval 1000 "
        "--match client_id=cm-{n}.*"),
    cmd("kafka-client-metrics", "--describe --name cm-{n}"),
    cmd("kafka-client-metrics", "--list", scenario_only=True, header=False),
    cmd("kafka-client-metrics", "--alter --name cm-{n} --interval 5"),
    cmd("kafka-client-metrics", "--delete --name cm-{n}"),
    cmd("kafka-broker-api-versions", "",
        known="the API versions served differ: README, 'The APIs served' (later versions: #29, #30)"),
]

TABLES = {
    "kafka-consumer-groups": CONSUMER_GROUPS,
    "kafka-share-groups": SHARE_GROUPS,
    "kafka-transactions": TRANSACTIONS,
    "kafka-configs": CONFIGS,
    "kafka-topics": TOPICS,
    "kafka-get-offsets": GET_OFFSETS,
    "console tools": CONSOLE,
    "other tools": OTHERS,
}
