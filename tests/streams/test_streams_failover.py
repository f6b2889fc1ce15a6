"""The stateful Kafka Streams app (count per word, exactly_once_v2, one standby per task) on
three instances, one of them kill -9'd mid-stream and restarted (KIP-1071's failover):

- the dead instance's tasks move to the two others once its session runs out, each stateful
  task to the instance that kept its standby (a promotion, not a restore from scratch);
- the restarted instance rejoins and gets tasks again;
- no task is ever active on two instances at once: StreamsGroupDescribe is polled the whole
  time and every answer is checked;
- the output counts equal the input exactly (read_committed).

The same scenario runs on kgroup and on Apache Kafka 4.4.
"""

from __future__ import annotations

import threading

from tests.integration.waits import pace
from tests.streams.app import StreamsJvm
from tests.streams.poller import Poller
from tests.streams.support import (
    APP_CONFIGS,
    WordWriter,
    create_topics,
    latest_counts,
    wait_for,
    wait_value,
)

RECORDS = 1_500


def test_a_killed_instance_hands_its_tasks_to_its_standbys_and_the_counts_stay_exact(broker, jvm, streams_build,
                                                                                      name, tmp_path):
    app, src, out = f"failover-{name}", f"in-{name}", f"out-{name}"
    create_topics(broker.bootstrap, **{src: 6, out: 1})
    jvm.group_configs(broker.bootstrap, app, streams_session_timeout_ms=3_000, streams_heartbeat_interval_ms=300,
                      streams_num_standby_replicas=1)

    def config(instance: str) -> dict:
        return {"bootstrap.servers": broker.bootstrap, "application.id": app, "client.id": instance,
                "state.dir": str(tmp_path / f"state-{instance}"), "processing.guarantee": "exactly_once_v2",
                **APP_CONFIGS}

    words = WordWriter(broker.bootstrap, src, 6)
    produce, sent = words.produce, words.sent

    produce(0, RECORDS // 3)
    names = ["a", "b"]
    for instance in names:
        jvm.start(instance + name, "stateful", config(instance), input=src, output=out)
    lone = StreamsJvm(streams_build, tmp_path / "lone.log")
    poller = Poller(broker.bootstrap, app)
    try:
        lone.start("c" + name, "stateful", config("c"), input=src, output=out)
        jvm.wait_running(*(n + name for n in names), timeout=90)
        lone.wait_running("c" + name, timeout=90)
        poller.start()
        # Twelve tasks (2 subtopologies x 6 partitions), four per instance, with a standby
        # of each of the six stateful tasks on another instance.
        wait_for(lambda: sorted(len(a) for a, _ in poller.latest().values()) == [4, 4, 4]
                 and sum(len(s) for _, s in poller.latest().values()) == 6, 60, "4+4+4 tasks, 6 standbys")
        writer = threading.Thread(target=produce, args=(RECORDS // 3, 2 * RECORDS // 3, 25), daemon=True)
        writer.start()
        pace(1.0)
        before = poller.latest()
        dead_active = before["c"][0]
        standby_of = {t: m for m, (_, standbys) in before.items() for t in standbys}
        lone.kill()                                                      # kill -9, mid-stream
        after = wait_for(lambda: (d := poller.latest()) and set(d) == {"a", "b"}
                         and sorted(len(x) for x, _ in d.values()) == [6, 6] and d, 60,
                         "the dead instance's tasks on the two others")
        # Stateful: its standby took over, unless the standby's instance had its share of
        # active tasks already (Kafka's sticky assignor fills the standby holder only while it
        # is under its quota: 12 tasks / 2 instances; the order is the task's, not ours).
        quota = 6
        for task in sorted(dead_active):
            if task.startswith("1_"):
                holder = standby_of[task]
                assert task in after[holder][0] or len(after[holder][0]) == quota, (task, holder, after)
        # The instance comes back (same state directory) and gets tasks again.
        lone = StreamsJvm(streams_build, tmp_path / "lone2.log")
        lone.start("c" + name, "stateful", config("c"), input=src, output=out)
        lone.wait_running("c" + name, timeout=90)
        wait_for(lambda: sorted(len(a) for a, _ in poller.latest().values()) == [4, 4, 4], 60, "4+4+4 again")
        writer.join(timeout=120)
        counts = wait_value(lambda: latest_counts(broker.bootstrap, out), dict(sent), 120,
                            "every word counted exactly once")
        assert counts == dict(sent)
        assert len(poller.snapshots) > 50
        assert poller.overlaps == []
        assert not jvm.errors() and not lone.errors()
    finally:
        poller.stop()
        lone.close()
        for instance in names:
            jvm.close_app(instance + name)
