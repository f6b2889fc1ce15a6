"""What the stream reader's process loads: Spark starts a Python process for every streaming
query of a Python data source and keeps the stream reader there; the query waits for it
before its first micro-batch. That process only plans (offsets, commits), so it must not
load the task side (the consumer, numpy and Arrow columns, the record codec) nor, without
group.mode=member, group membership. Each check runs in a fresh interpreter, as Spark's is."""

from __future__ import annotations

import json
import subprocess
import sys

# What the planning side of a query imports: the data source (unpickled by Spark), the
# stream reader and its driver side.
PLANNING = ("kgroup.spark.source", "kgroup.spark.stream", "kgroup.spark.stream_planner")

# Modules of the task side and of group membership; none of them may load for planning.
TASK_SIDE = ("kgroup.spark.range_reader", "kgroup.client.record_columns",
             "kgroup.client.consumer", "kgroup.wire.record_batch", "crc32c")
MEMBERSHIP = ("kgroup.spark.membership", "kgroup.member", "kgroup.client.membership")


def loaded_by(*modules: str) -> set[str]:
    code = (f"import sys\nfor m in {list(modules)!r}: __import__(m)\n"
            "import json; print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_stream_readers_process_loads_neither_the_task_side_nor_group_membership():
    loaded = loaded_by(*PLANNING)
    assert not loaded & set(TASK_SIDE), sorted(loaded & set(TASK_SIDE))
    assert not loaded & set(MEMBERSHIP), sorted(loaded & set(MEMBERSHIP))


def test_the_names_checked_are_what_a_task_and_a_member_load():
    """The check above would pass vacuously if these names were wrong."""
    task = loaded_by("kgroup.spark.range_reader")
    assert set(TASK_SIDE) <= task, sorted(set(TASK_SIDE) - task)
    assert set(MEMBERSHIP) <= loaded_by(*MEMBERSHIP)   # fails if a name is no module
