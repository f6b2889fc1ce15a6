"""Real Kafka Streams 4.4 applications with group.protocol=streams (KIP-1071), two and three
instances: a stateless topology (filter and map) and a stateful one (a count per word, with a
repartition topic and a changelog-backed store), under exactly_once_v2. The same scenario on
every broker of the `broker` fixture: what the apps produce, the internal topics the
coordinator created, the tasks each instance runs.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.streams.support import (
    APP_CONFIGS,
    GROUP_CONFIGS,
    create_topics,
    latest_counts,
    partition_counts,
    produce_words,
    read_all,
    topic_configs,
    wait_for,
    wait_tasks,
    wait_value,
)

WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape"]


def app_config(broker, app: str, tmp_path, instance: str, **extra) -> dict:
    return {"bootstrap.servers": broker.bootstrap, "application.id": app,
            "state.dir": str(tmp_path / f"state-{instance}"), **APP_CONFIGS, **extra}


def test_a_stateless_topology_runs_on_two_instances(broker, jvm, name, tmp_path):
    app, src, out = f"stateless-{name}", f"in-{name}", f"out-{name}"
    create_topics(broker.bootstrap, **{src: 4, out: 2})
    jvm.group_configs(broker.bootstrap, app, **{k.replace(".", "_"): v for k, v in GROUP_CONFIGS.items()})
    values = [("" if i % 5 == 0 else f"v{i}") for i in range(100)]
    produce_words(broker.bootstrap, src, values, raw=True)
    for instance in ("a", "b"):
        jvm.start(f"{app}-{instance}", "stateless", app_config(broker, app, tmp_path, instance), input=src, output=out)
    jvm.wait_running(f"{app}-a", f"{app}-b")
    # Four tasks (one per input partition), two per instance once both run.
    tasks = wait_tasks(jvm, [f"{app}-a", f"{app}-b"], [2, 2])
    assert set().union(*tasks.values()) == {"0_0", "0_1", "0_2", "0_3"}
    expected = sorted(v.upper() for v in values if v)
    got = wait_value(lambda: sorted(v.decode() for _, v in read_all(broker.bootstrap, out)), expected, 60,
                     "every non-empty record upper-cased")
    assert got == expected
    # `kgroup groups describe` shows the group as its consumer groups: each source partition
    # with the member whose active task reads it, and the offsets the app committed.
    described = wait_for(lambda: (rows := _describe_rows(broker.bootstrap, app)) and len(rows) == 4
                         and all(r["consumer_id"] and r["lag"] == 0 for r in rows) and rows, 60,
                         "four source partitions, each with its member, nothing left to read")
    assert {(r["topic"], r["partition"]) for r in described} == {(src, p) for p in range(4)}
    assert len({r["consumer_id"] for r in described}) == 2
    for instance in ("a", "b"):
        jvm.close_app(f"{app}-{instance}")


def _describe_rows(bootstrap: str, group: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "kgroup", "groups", "describe", group, "--bootstrap-server", bootstrap,
                           "--format", "json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (group_doc,) = json.loads(done.stdout)["groups"]
    assert group_doc["type"] == "streams"
    return group_doc["offsets"]


def test_a_stateful_count_runs_exactly_once_on_three_instances(broker, jvm, name, tmp_path):
    app, src, out = f"count-{name}", f"in-{name}", f"out-{name}"
    create_topics(broker.bootstrap, **{src: 3, out: 1})
    jvm.group_configs(broker.bootstrap, app, **{k.replace(".", "_"): v for k, v in GROUP_CONFIGS.items()})
    sent = produce_words(broker.bootstrap, src, [WORDS[i % len(WORDS)] for i in range(300)])
    names = [f"{app}-{i}" for i in "abc"]
    for instance in names:
        jvm.start(instance, "stateful", app_config(broker, app, tmp_path, instance,
                                                   **{"processing.guarantee": "exactly_once_v2"}),
                  input=src, output=out)
    jvm.wait_running(*names, timeout=90)
    # The coordinator created the internal topics: the repartition topic with the input's
    # partition count, the changelog compacted, with the store's partition count.
    repartition, changelog = f"{app}-by-word-repartition", f"{app}-counts-changelog"
    assert partition_counts(broker.bootstrap, repartition, changelog) == {repartition: 3, changelog: 3}
    assert topic_configs(broker.bootstrap, changelog)["cleanup.policy"] == "compact"
    # Six tasks (two subtopologies of three), two per instance.
    tasks = wait_tasks(jvm, names, [2, 2, 2])
    assert set().union(*tasks.values()) == {f"{s}_{p}" for s in "01" for p in range(3)}
    counts = wait_value(lambda: latest_counts(broker.bootstrap, out), dict(sent), 90, "every word counted once")
    assert counts == dict(sent)
    assert not jvm.errors()
    for instance in names:
        jvm.close_app(instance)


def test_an_app_whose_source_topic_is_missing_fails_as_on_kafka(broker, jvm, name, tmp_path):
    # The coordinator answers MISSING_SOURCE_TOPICS; Kafka Streams gives it two heartbeat
    # intervals, then fails with the status's text.
    app, src, out = f"missing-{name}", f"in-{name}", f"out-{name}"
    create_topics(broker.bootstrap, **{out: 1})
    jvm.group_configs(broker.bootstrap, app, **{k.replace(".", "_"): v for k, v in GROUP_CONFIGS.items()})
    jvm.start(f"{app}-a", "stateless", app_config(broker, app, tmp_path, "a"), input=src, output=out)
    error = jvm.wait_event(lambda e: e.get("event") == "error" and e.get("name") == f"{app}-a", timeout=60)
    assert "MissingSourceTopicException" in error["message"]
    assert f"Missing source topics: Source topics {src} are missing.." in error["message"]
    jvm.wait_for(lambda: jvm.state(f"{app}-a") == "ERROR", 30, "the app in ERROR")
    jvm.close_app(f"{app}-a")
